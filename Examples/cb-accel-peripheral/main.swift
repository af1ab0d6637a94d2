// S4's peripheral in CoreBluetooth style: `cb-accel-peripheral [SECONDS]` (0 or none: until interrupted).
import CoreBluetoothExamples
import Foundation

let app = AccelerometerPeripheral(duration: CommandLine.arguments.dropFirst().first.flatMap { Double($0) } ?? 0)
app.start()
RunLoop.main.run()
