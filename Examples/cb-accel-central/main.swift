// S4's central in CoreBluetooth style: `cb-accel-central [SAMPLES]` (0 or none: until interrupted).
import CoreBluetoothExamples
import Foundation

let app = AccelerometerCentral(samples: CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 0)
app.start()
RunLoop.main.run()
