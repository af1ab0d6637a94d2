// S3 in CoreBluetooth style: `cb-heart-rate [MEASUREMENTS]` (0 or none: until interrupted).
import CoreBluetoothExamples
import Foundation

let app = HeartRateMonitor(measurements: CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 0)
app.start()
RunLoop.main.run()
