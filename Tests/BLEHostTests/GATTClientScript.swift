import XCTest
import BLEWire
@testable import BLEHost
import BLETestSupport

/// Qualification-style PDU scripts for the GATT client (the shape of BlueZ's unit/test-gatt.c,
/// with our own scripts): each line is either
///
///     "C: 0a 0300"   the exact PDU the client must send next, or
///     "S: 0b 0102"   the PDU the fake server answers with.
///
/// The procedure runs on a real `ATTClientBearer`, so the one-outstanding-request rule and the
/// answer checks are exercised too. The clock advances one second per line.
///
/// With `serviceChangedHandle`, the runner plays the bearer's owner for Service Changed (Vol 3
/// Part G §7.1): an indication on that handle is decoded and the bearer told of the change
/// (`serverDatabaseChanged`) right after it, as `GATTClientSessions` does.
struct GATTClientScriptOutcome {
    var result: Result<GATTOutput, GATTError>?
    /// Actions other than `.send` and the procedure's `.complete` (notifications, MTU changes…).
    var events: [BearerAction]
    var bearer: ATTClientBearer
}

/// Runs `procedure` against the script and checks every client PDU and that the procedure
/// completed exactly once, after the last line, with nothing else sent.
@discardableResult
func runGATTClientScript<P: GATTProcedure>(_ procedure: P, mtu: Int = 23, serviceChangedHandle: UInt16? = nil, _ script: [String],
                                           file: StaticString = #filePath, line: UInt = #line) -> GATTClientScriptOutcome {
    var bearer = ATTClientBearer(mtu: mtu)
    var sent: [[UInt8]] = []
    var outcome = GATTClientScriptOutcome(result: nil, events: [], bearer: bearer)
    func absorb(_ actions: [BearerAction], step: Int) {
        for action in actions {
            switch action {
            case let .send(bytes):
                sent.append(bytes)
            case let .complete(id, result) where id == 1:
                XCTAssertNil(outcome.result, "completed twice (step \(step))", file: file, line: line)
                outcome.result = result
            case let .indication(handle, value) where handle == serviceChangedHandle:
                outcome.events.append(action)
                guard let range = try? GATTServiceChanged.affectedRange(value) else {
                    XCTFail("step \(step): Service Changed value \(value.hexString)", file: file, line: line)
                    continue
                }
                absorb(bearer.serverDatabaseChanged(range), step: step)
            default:
                outcome.events.append(action)
            }
        }
    }
    absorb(bearer.submit(procedure, id: 1, now: .zero), step: 0)
    for (index, text) in script.enumerated() {
        let step = index + 1
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let body = String(trimmed.dropFirst(2))
        if trimmed.hasPrefix("C:") {
            let expected = hexBytes(body, file: file, line: line)
            guard !sent.isEmpty else {
                XCTFail("step \(step): expected the client to send \(expected.hexString), it sent nothing", file: file, line: line)
                break
            }
            let got = sent.removeFirst()
            XCTAssertEqual(got.hexString, expected.hexString, "step \(step): client PDU", file: file, line: line)
        } else if trimmed.hasPrefix("S:") {
            XCTAssertTrue(sent.isEmpty, "step \(step): client sent \(sent.map(\.hexString)) not in the script", file: file, line: line)
            sent.removeAll()
            XCTAssertNil(outcome.result, "step \(step): procedure already completed", file: file, line: line)
            absorb(bearer.receive(hexBytes(body, file: file, line: line), now: .seconds(step)), step: step)
        } else {
            XCTFail("step \(step): script line must start with C: or S:", file: file, line: line)
        }
    }
    XCTAssertTrue(sent.isEmpty, "client sent \(sent.map(\.hexString)) after the script ended", file: file, line: line)
    XCTAssertNotNil(outcome.result, "procedure did not complete", file: file, line: line)
    outcome.bearer = bearer
    return outcome
}

/// Little-endian hex of a 16-bit value, for building script lines.
func attLE16(_ v: Int) -> String {
    [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)].hexString
}

extension Result where Success == GATTOutput, Failure == GATTError {
    var gattOutput: GATTOutput? { try? get() }
    var gattError: GATTError? {
        if case let .failure(e) = self { return e }
        return nil
    }
}

/// The 128-bit UUID the scripts use, and its little-endian wire form.
let gattScriptUUID128 = BluetoothUUID(high: 0x1234_5678_1234_5678, low: 0x1234_5678_9ABC_DEF0)
let gattScriptUUID128Hex = "f0debc9a785634127856341278563412"
