// S3 in CoreBluetooth style: `cb-heart-rate [MEASUREMENTS] [NAME]` (0 or none: until
// interrupted; NAME: only monitors whose name contains it).
import CoreBluetoothExamples
import Foundation

let arguments = CommandLine.arguments.dropFirst()
let app = HeartRateMonitor(measurements: arguments.first.flatMap { Int($0) } ?? 0, nameContains: arguments.dropFirst().first)
app.start()
RunLoop.main.run()
