// Every file of this target sees BLETestSupport (the fake controller, hex literals, waitUntil)
// through this re-export, including HostRobustnessTests and HostPeripheralRoleTests, which are
// being rewritten on another branch and do not import it yet. Once they do, this can become a
// plain import in each file.
@_exported import BLETestSupport

/// `waitUntil` with the 10 s bound the copy in this target used to hard-code, for
/// HostRobustnessTests and HostPeripheralRoleTests, which call it without a bound. New code
/// passes `within:` to `BLETestSupport.waitUntil`; remove this when those two do.
func waitUntil(file: StaticString = #filePath, line: UInt = #line, _ condition: @Sendable () async -> Bool) async {
    await BLETestSupport.waitUntil(within: .seconds(10), file: file, line: line, condition)
}
