// S3 in CoreBluetooth style: `cb-heart-rate [MEASUREMENTS] [NAME] [--min-rssi DBM]` (0 or none:
// until interrupted; NAME: only monitors whose name contains it; DBM: the weakest signal taken,
// default -70).
import CoreBluetoothExamples
import Foundation

do {
    let arguments = try HeartRateMonitorArguments(Array(CommandLine.arguments.dropFirst()))
    let app = HeartRateMonitor(arguments)
    app.start()
    RunLoop.main.run()
} catch {
    FileHandle.standardError.write(Data("cb-heart-rate: \(error)\n\(HeartRateMonitorArguments.usage)\n".utf8))
    exit(2)
}
