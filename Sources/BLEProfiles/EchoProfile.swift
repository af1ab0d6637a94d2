import BLEWire

/// The echo-and-image service of docs/SYSTEMS.md S1 (a Raspberry Pi peripheral and a phone central).
///
/// One characteristic carries the framed stream (`Frame`, `FrameDecoder`) both ways: the central
/// writes it with Write Request, the peripheral notifies on it.
public enum EchoProfile {
    /// The primary service.
    public static let service: BluetoothUUID = "54f06857-695e-47e4-aea8-c78184ad6c75"
    /// The one characteristic: write (with response) and notify.
    public static let stream: BluetoothUUID = "30a5f1bb-61dc-45f0-9c52-2218d080fa77"

    /// The text of the `T` frame the peripheral sends back for a `T` frame holding `text`
    /// (the article's Japanese "you said …", in English).
    public static func reply(to text: String) -> String { "You said: \(text)" }
}
