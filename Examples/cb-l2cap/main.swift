// An L2CAP channel in CoreBluetooth style: `cb-l2cap NAME PSM [BYTES]` opens a channel on PSM
// (0x80 or 128) to the peripheral advertising NAME, sends BYTES (default 65536) and checks the
// echo. The controller: BLE_HCI (tcp:HOST:PORT, hci0, serial:…).
import CoreBluetoothExamples
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
func number(_ text: String) -> Int? {
    text.lowercased().hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text)
}
guard arguments.count >= 2, let psm = number(arguments[1]).flatMap(UInt16.init(exactly:)),
      let count = arguments.count > 2 ? number(arguments[2]) : 65536, count > 0 else {
    FileHandle.standardError.write(Data("usage: cb-l2cap NAME PSM [BYTES]\n".utf8))
    exit(2)
}
let app = ChannelEchoCentral(name: arguments[0], psm: psm, count: count)
app.start()
RunLoop.main.run()
