import CoreBluetooth
import CoreBluetoothExamples
import BLETestSupport
import XCTest

/// L2CAP channels through CoreBluetooth on the virtual radio: a delegate-style central opens a
/// channel to a delegate-style peripheral manager's published PSM, and the two move bytes both
/// ways through `inputStream` / `outputStream` as iOS apps do (run-loop scheduled streams, read
/// on `.hasBytesAvailable`, write on `.hasSpaceAvailable`).
final class L2CAPChannelTests: XCTestCase {
    func uniqueName(_ prefix: String) -> String { prefix + "-" + String(UInt16.random(in: 0...0xFFFF)) }

    /// Starts a peripheral and a central, and waits until the central's channel and the
    /// peripheral's are both open.
    func openChannel(file: StaticString = #filePath, line: UInt = #line) -> (ChannelPeripheral, ChannelCentral) {
        let name = uniqueName("CBCoC")
        let peripheral = ChannelPeripheral(name: name)
        wait("advertising", file: file, line: line) { peripheral.lines.contains("advertising") }
        let central = ChannelCentral(name: name)
        wait("both ends open", file: file, line: line) {
            central.lines.contains("output open") && peripheral.lines.contains("output open")
        }
        return (peripheral, central)
    }

    func testA64KBEchoMovesByteForByteBothWaysAndTheCloseIsEndEncountered() throws {
        let (peripheral, central) = openChannel()
        defer { peripheral.manager.stopAdvertising() }
        let psm = try XCTUnwrap(peripheral.psm)
        XCTAssertTrue((0x0080...0x00FF).contains(psm), "a PSM from the dynamic range, as iOS assigns: \(psm)")
        XCTAssertTrue(central.lines.contains("channel \(psm) to the peripheral"), "\(central.lines)")
        XCTAssertTrue(peripheral.lines.contains("channel \(psm) from a central"), "\(peripheral.lines)")
        XCTAssertEqual(central.channel?.psm, psm)
        XCTAssertEqual(Array(central.lines.suffix(2)).sorted(), ["input open", "output open"])

        // The peripheral echoes, holding at most 4 KB it has not written back: the central's
        // writes must wait for it.
        peripheral.echoes = true
        peripheral.readLimit = 4096
        central.outgoing = ChannelEnd.payload
        central.pump()
        wait("the 64 KB echo", seconds: 60) { central.received.count >= ChannelEnd.payload.count }
        XCTAssertEqual(central.written, ChannelEnd.payload.count)
        XCTAssertEqual(peripheral.received.count, ChannelEnd.payload.count)
        XCTAssertTrue(peripheral.received == ChannelEnd.payload, "the peripheral read what the central wrote")
        XCTAssertTrue(central.received == ChannelEnd.payload, "the echo is the payload byte for byte")
        XCTAssertGreaterThan(central.refusedWrites, 0, "writes returned 0 while the channel was held back")
        XCTAssertFalse(central.channel?.inputStream.hasBytesAvailable ?? true)

        // The central closes both streams: the peripheral reads the end.
        central.closeChannel()
        XCTAssertEqual(central.channel?.inputStream.streamStatus, .closed)
        wait("endEncountered at the peripheral") { peripheral.lines.contains("input end") }
        XCTAssertEqual(peripheral.channel?.inputStream.streamStatus, .atEnd)
        var byte: UInt8 = 0
        XCTAssertEqual(peripheral.channel?.inputStream.read(&byte, maxLength: 1), 0, "read at the end returns 0")
        XCTAssertEqual(peripheral.channel?.outputStream.write([1], maxLength: 1), -1, "a write after the close fails")
        XCTAssertFalse(peripheral.lines.contains { $0.contains("error") }, "\(peripheral.lines)")
    }

    func testThePeripheralSendsFirstAndItsCloseEndsTheCentralsInputAfterTheLastByte() throws {
        let (peripheral, central) = openChannel()
        defer { peripheral.manager.stopAdvertising() }
        let greeting = Data("hello from the peripheral manager".utf8)
        peripheral.outgoing = greeting + ChannelEnd.payload.prefix(10_000)
        peripheral.pump()
        wait("the peripheral's bytes") { central.received.count == greeting.count + 10_000 }
        XCTAssertTrue(central.received.starts(with: greeting))
        XCTAssertTrue(central.received.dropFirst(greeting.count) == ChannelEnd.payload.prefix(10_000))
        peripheral.closeChannel()
        wait("endEncountered at the central") { central.lines.contains("input end") }
        XCTAssertEqual(central.channel?.inputStream.streamStatus, .atEnd)
        wait("the central's output ends too") { central.lines.contains("output end") }
        XCTAssertNil(central.channel?.inputStream.streamError)
        XCTAssertEqual(central.peripheral?.state, .connected, "closing a channel leaves the link up")
    }

    func testAPeerThatDoesNotReadHoldsTheWriterBackWithinTheCredits() throws {
        let (peripheral, central) = openChannel()
        defer { peripheral.manager.stopAdvertising() }
        peripheral.reads = false
        let total = ChannelEnd.payload + ChannelEnd.payload
        central.outgoing = total
        central.pump()
        // The peripheral's bytes arrive (its input says so) but are not read. Its host still
        // takes SDUs while it has credits to give (16 of 4 KB), so the central gets past 32 KB;
        // but what it can write then is bounded by those credits and a few KB of stream
        // buffers, not the 128 KB it wants to send.
        wait("the first bytes at the peripheral") { peripheral.channel?.inputStream.hasBytesAvailable == true }
        wait("32 KB taken by the peripheral's credits") { central.written >= 32 * 1024 }
        wait("the central held back") { central.refusedWrites > 0 }
        XCTAssertLessThan(central.written, total.count)
        XCTAssertLessThanOrEqual(central.written, 16 * 4096 + 4 * 4096, "credits × MTU plus one SDU per stream buffer and in flight")
        peripheral.reads = true
        peripheral.pump()
        wait("everything through once the peripheral reads", seconds: 60) { peripheral.received.count == total.count }
        XCTAssertTrue(peripheral.received == total, "the bytes arrive in order, byte for byte")
    }

    func testALostLinkEndsBothStreamsWithAnError() throws {
        let (peripheral, central) = openChannel()
        defer { peripheral.manager.stopAdvertising() }
        let peer = try XCTUnwrap(central.peripheral)
        central.central.cancelPeripheralConnection(peer)
        wait("errorOccurred on both ends") {
            central.lines.contains { $0.hasPrefix("input error") } && peripheral.lines.contains { $0.hasPrefix("input error") }
        }
        XCTAssertEqual(central.channel?.inputStream.streamStatus, .error)
        XCTAssertTrue(central.channel?.inputStream.streamError is CBError, "\(String(describing: central.channel?.inputStream.streamError))")
        XCTAssertEqual(central.channel?.outputStream.write([1], maxLength: 1), -1)
        XCTAssertFalse(central.lines.contains("input end"), "a lost link is an error, not an end")
    }

    func testReleasingTheChannelClosesIt() throws {
        let (peripheral, central) = openChannel()
        defer { peripheral.manager.stopAdvertising() }
        central.dropChannel()
        wait("endEncountered at the peripheral") { peripheral.lines.contains("input end") }
        XCTAssertEqual(central.peripheral?.state, .connected)
    }

    /// The peer sends three SDUs and closes while the central has read none: one waits in the
    /// central's stream, two in its host. A write then finds the channel closed; that ends the
    /// output, but the input still gives every byte that arrived before `.endEncountered`.
    func testAWriteThatFindsThePeersCloseDoesNotCutTheInputShort() throws {
        let (peripheral, central) = openChannel()
        defer { peripheral.manager.stopAdvertising() }
        central.reads = false
        let sent = ChannelEnd.payload.prefix(2 * 4096 + 1000)
        peripheral.outgoing = Data(sent)
        peripheral.pump()
        wait("the peripheral wrote it all") { peripheral.written == sent.count }
        peripheral.closeChannel()
        // Write until a write finds the channel closed (the peer's Disconnection Request has
        // arrived); the bytes written before that go to a peer that no longer reads.
        wait("the central's output ends") {
            if central.channel?.outputStream.streamStatus == .open { _ = central.channel?.outputStream.write([0], maxLength: 1) }
            return central.lines.contains("output end")
        }
        XCTAssertEqual(central.channel?.inputStream.streamStatus, .open, "bytes wait: the input has not ended")
        central.reads = true
        central.pump()
        wait("endEncountered at the central's input") { central.lines.contains("input end") }
        XCTAssertEqual(central.received.count, sent.count, "every byte the peer sent before it closed")
        XCTAssertTrue(central.received == sent)
    }

    /// The central writes until `write` takes no more (one SDU in flight, one waiting in the
    /// stream), closes both streams and lets go of the channel at once, the usual way to end:
    /// every byte `write` took still reaches the peer, then the end.
    func testBytesWrittenBeforeClosingAndReleasingTheChannelAllArrive() throws {
        let (peripheral, central) = openChannel()
        defer { peripheral.manager.stopAdvertising() }
        peripheral.reads = false
        let total = ChannelEnd.payload + ChannelEnd.payload
        central.outgoing = total
        central.pump()
        wait("the central held back") { central.refusedWrites > 0 }
        central.outgoing = Data()
        let written = central.written
        XCTAssertGreaterThan(written, 0)
        central.closeChannel()
        central.dropChannel()
        peripheral.reads = true
        peripheral.pump()
        wait("endEncountered at the peripheral", seconds: 30) { peripheral.lines.contains("input end") }
        XCTAssertEqual(peripheral.received.count, written, "what write accepted, no less")
        XCTAssertTrue(peripheral.received == total.prefix(written))
    }

    func testTheExampleEchoClientAgainstAnEchoingPeripheralManager() throws {
        let name = uniqueName("CBCoCe")
        let peripheral = ChannelPeripheral(name: name)
        peripheral.echoes = true
        peripheral.readLimit = 8192
        wait("advertising") { peripheral.lines.contains("advertising") }
        defer { peripheral.manager.stopAdvertising() }
        let psm = try XCTUnwrap(peripheral.psm)
        let app = ChannelEchoCentral(name: name, psm: psm, count: 20_000)
        let lines = SharedValue<[String]>([])
        let status = SharedValue<Int32?>(nil)
        app.output = { line in lines.set(lines.get() + [line]) }
        app.finish = { code in status.set(code) }
        setenv("BLE_HCI", "virtual", 1)
        defer { unsetenv("BLE_HCI") }
        app.start()
        wait("the app's end", seconds: 60) { status.get() != nil }
        XCTAssertEqual(status.get(), 0, "\(lines.get())")
        XCTAssertTrue(lines.get().contains("channel open on PSM \(psm)"), "\(lines.get())")
        XCTAssertTrue(lines.get().contains { $0.hasPrefix("sent 20000 bytes, received 20000: the echo matches") }, "\(lines.get())")
        XCTAssertTrue(peripheral.received == ChannelEchoCentral.pattern(20_000))
    }

    /// A run loop of its own on a thread of its own, kept running until the test ends.
    func startRunLoopThread() -> RunLoop? {
        let loop = SharedValue<RunLoop?>(nil)
        let stop = SharedValue(false)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread {
            // A far-off repeating timer keeps the loop from having nothing to wait for.
            RunLoop.current.add(Timer(timeInterval: 3600, repeats: true) { _ in }, forMode: .default)
            loop.set(RunLoop.current)
            ready.signal()
            while !stop.get() { _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.5)) }
        }
        thread.start()
        addTeardownBlock { stop.set(true) }
        _ = ready.wait(timeout: .now() + 10)
        return loop.get()
    }

    /// The streams on a run loop other than the main one, as an app scheduling them in
    /// `.current` from a thread that runs its own loop: the events come on that thread.
    func testStreamsScheduledOnAnotherThreadsRunLoopGetTheirEventsThere() throws {
        let name = uniqueName("CBCoCt")
        let peripheral = ChannelPeripheral(name: name)
        let loop = try XCTUnwrap(startRunLoopThread())
        peripheral.runLoop.set(loop)
        peripheral.echoes = true
        peripheral.readLimit = 4096
        wait("advertising") { peripheral.lines.contains("advertising") }
        defer { peripheral.manager.stopAdvertising() }
        let central = ChannelCentral(name: name)
        wait("both ends open") { central.lines.contains("output open") && peripheral.locked { $0.lines.contains("output open") } }
        central.outgoing = ChannelEnd.payload.prefix(30_000)
        central.pump()
        wait("the echo through the other thread's run loop", seconds: 60) { central.received.count >= 30_000 }
        XCTAssertTrue(central.received == ChannelEnd.payload.prefix(30_000))
        XCTAssertTrue(peripheral.locked { $0.received == ChannelEnd.payload.prefix(30_000) })
        XCTAssertEqual(peripheral.locked { $0.eventsOnMainThread }, 0, "the peripheral's events came on its own thread")
        XCTAssertGreaterThan(peripheral.locked { $0.eventsOffMainThread }, 2)
        XCTAssertEqual(central.eventsOffMainThread, 0, "the central's, scheduled in the main run loop, on the main thread")
    }

    /// A thread whose run loop never runs (a dispatch worker's `.current`, say), its loop, and
    /// the semaphore that lets the thread end.
    func startIdleThread() -> RunLoop? {
        let loop = SharedValue<RunLoop?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread {
            loop.set(RunLoop.current)
            ready.signal()
            release.wait()
        }.start()
        addTeardownBlock { release.signal() }
        _ = ready.wait(timeout: .now() + 10)
        return loop.get()
    }

    /// Streams first scheduled in a run loop that does not run get no events there (as on Apple
    /// platforms); removed from it and scheduled in the main run loop, they get them on the main
    /// one: the delivery stuck in the idle loop does not hold the stream's events back.
    func testAStreamMovedFromARunLoopThatDoesNotRunGetsItsEventsWhereItIsScheduledNow() throws {
        let name = uniqueName("CBCoCm")
        let peripheral = ChannelPeripheral(name: name)
        wait("advertising") { peripheral.lines.contains("advertising") }
        defer { peripheral.manager.stopAdvertising() }
        let idle = try XCTUnwrap(startIdleThread())
        let central = ChannelCentral(name: name)
        central.runLoop.set(idle)
        wait("the central's channel") { central.channel != nil }
        let channel = try XCTUnwrap(central.channel)
        XCTAssertFalse(central.lines.contains { $0.hasSuffix(" open") }, "no events in a run loop that does not run")
        for stream in [channel.inputStream as Stream, channel.outputStream as Stream] {
            stream.remove(from: idle, forMode: .default)
            stream.schedule(in: .main, forMode: .default)
        }
        wait("openCompleted on the main run loop") { central.lines.contains("input open") && central.lines.contains("output open") }
        XCTAssertEqual(central.eventsOffMainThread, 0)
        wait("the peripheral's end open") { peripheral.lines.contains("output open") }
        peripheral.outgoing = Data("after the move".utf8)
        peripheral.pump()
        wait("the bytes on the main run loop") { central.received == Data("after the move".utf8) }
    }

    func testOpeningAnUnpublishedPSMFailsAndUnpublishingWithdrawsIt() throws {
        let name = uniqueName("CBCoCx")
        let peripheral = ChannelPeripheral(name: name)
        wait("advertising") { peripheral.lines.contains("advertising") }
        defer { peripheral.manager.stopAdvertising() }
        let psm = try XCTUnwrap(peripheral.psm)
        let central = ChannelCentral(name: name)
        central.psmOverride = psm == 0x00FF ? 0x00FE : psm + 1
        wait("the open fails") { central.lines.contains("open error") }
        XCTAssertEqual((central.openError as? CBError)?.code, .connectionFailed)
        XCTAssertNil(central.channel)

        peripheral.manager.unpublishL2CAPChannel(psm)
        wait("unpublished") { peripheral.lines.contains("unpublished \(psm)") }
        peripheral.manager.unpublishL2CAPChannel(psm)
        wait("a second unpublish fails") { peripheral.lines.contains("unpublish error \(psm)") }
        let peer = try XCTUnwrap(central.peripheral)
        central.psmOverride = psm
        peer.openL2CAPChannel(psm)
        wait("the open of the withdrawn PSM fails") { central.lines.filter { $0 == "open error" }.count == 2 }
        XCTAssertEqual((central.openError as? CBError)?.code, .connectionFailed)

        central.central.cancelPeripheralConnection(peer)
        wait("disconnected") { central.lines.contains("disconnected") }
        peer.openL2CAPChannel(psm)
        wait("not connected") { central.lines.filter { $0 == "open error" }.count == 3 }
        XCTAssertEqual((central.openError as? CBError)?.code, .notConnected)
    }

    func testEachPublishGetsItsOwnPSM() throws {
        let peripheral = ChannelPeripheral(name: uniqueName("CBCoCp"))
        wait("advertising") { peripheral.lines.contains("advertising") }
        defer { peripheral.manager.stopAdvertising() }
        let first = try XCTUnwrap(peripheral.psm)
        peripheral.manager.publishL2CAPChannel(withEncryption: true)
        wait("a second PSM") { peripheral.lines.filter { $0.hasPrefix("published") }.count == 2 }
        let second = try XCTUnwrap(peripheral.psm)
        XCTAssertNotEqual(first, second)
        XCTAssertTrue((0x0080...0x00FF).contains(second))
    }
}
