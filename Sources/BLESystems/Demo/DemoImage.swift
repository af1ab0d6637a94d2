/// The picture `ble ui --hci virtual`'s echo server hands out, so the `/echo` screen's fetch
/// works with nothing attached: a colour gradient as a Windows bitmap, which every browser
/// shows and which takes a few lines to write (the `ble demo` PPM is not a browser format).
public enum DemoImage {
    /// The file name it is served under.
    public static let fileName = "echo-demo.bmp"

    /// A `width` × `height` gradient as a 24-bit BMP: a 14-byte file header and a 40-byte
    /// BITMAPINFOHEADER, then the rows bottom-up, each pixel blue, green, red, each row padded
    /// to a multiple of four bytes. All numbers little-endian.
    public static func bitmap(width: Int, height: Int) -> [UInt8] {
        let width = max(1, width), height = max(1, height)
        let rowLength = (width * 3 + 3) / 4 * 4
        let pixels = rowLength * height
        var out: [UInt8] = []
        out.reserveCapacity(54 + pixels)
        func u16(_ v: Int) { out += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        func u32(_ v: Int) { for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> shift)) } }
        out += Array("BM".utf8)
        u32(54 + pixels); u16(0); u16(0); u32(54)
        u32(40); u32(width); u32(height); u16(1); u16(24); u32(0); u32(pixels)
        u32(2835); u32(2835); u32(0); u32(0)  // 72 dpi; no palette
        for row in 0..<height {
            let y = height - 1 - row  // bottom-up: the first row stored is the picture's last
            for x in 0..<width {
                let red = x * 255 / max(1, width - 1), green = y * 255 / max(1, height - 1)
                // A diagonal band, so that the picture has a shape as well as colours.
                let band = abs(x * height - y * width) < width * height / 12
                out += [UInt8(band ? 255 : 128), UInt8(green), UInt8(red)]
            }
            out += [UInt8](repeating: 0, count: rowLength - width * 3)
        }
        return out
    }
}
