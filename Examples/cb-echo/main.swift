// S1 in CoreBluetooth style: `cb-echo [TEXT]` sends TEXT (a URL makes the server fetch an image).
// The controller: BLE_HCI (tcp:HOST:PORT, hci0, serial:…; `virtual` is an empty in-process radio).
import CoreBluetoothExamples
import Foundation

let arguments = CommandLine.arguments.dropFirst()
let app = EchoCentral(message: arguments.isEmpty ? "Hello from CoreBluetooth" : arguments.joined(separator: " "))
app.start()
RunLoop.main.run()
