// S2 in CoreBluetooth style: `cb-sample [NOTIFICATIONS]`, driven by dispatchMain().
import CoreBluetoothExamples
import Foundation

let app = SampleCentral(notifications: CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 3)
app.start()
dispatchMain()
