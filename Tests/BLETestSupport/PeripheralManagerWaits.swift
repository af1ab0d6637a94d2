import BLE
import XCTest

extension PeripheralManager {
    /// Waits until exactly `count` centrals are connected: checked once, then at each connection
    /// or disconnection event (no polling); false, with a test failure, after `bound` of real
    /// time.
    @discardableResult
    public func waitForConnectedCentrals(_ count: Int, within bound: Duration = .seconds(10),
                                         file: StaticString = #filePath, line: UInt = #line) async -> Bool {
        let events = await self.events  // before the check, so no event between is missed
        if await connectedCentrals.count == count { return true }
        let reached = await result(within: bound) {
            for await event in events {
                switch event {
                case .connected, .disconnected:
                    if await self.connectedCentrals.count == count { return true }
                default:
                    break
                }
            }
            return false
        }
        if reached != true {
            XCTFail("\(count) connected central(s) not reached within \(bound)", file: file, line: line)
        }
        return reached == true
    }
}

extension Peripheral {
    /// Waits until the link's state satisfies `condition`: the current state, then each change
    /// (`stateUpdates`, no polling); false, with a test failure, after `bound` of real time.
    @discardableResult
    public func waitForState(_ what: String, within bound: Duration = .seconds(10),
                             file: StaticString = #filePath, line: UInt = #line,
                             _ condition: @escaping @Sendable (ConnectionState) -> Bool) async -> Bool {
        let updates = stateUpdates
        let reached = await result(within: bound) {
            for await state in updates where condition(state) { return true }
            return false
        }
        if reached != true { XCTFail("\(what) not reached within \(bound)", file: file, line: line) }
        return reached == true
    }
}
