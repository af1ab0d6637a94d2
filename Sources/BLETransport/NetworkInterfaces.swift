#if canImport(Glibc)
import Glibc

/// The machine's own network addresses (getifaddrs(3)), for `ble ui --listen 0.0.0.0`: a
/// server bound to every interface is reached by any of them, so its Host check must accept
/// each one, and nothing else.
public enum NetworkInterfaces {
    /// The numeric IPv4 and IPv6 addresses of the interfaces that are up, loopback included,
    /// without an IPv6 zone ("192.168.1.7", "fe80::1"); empty when they cannot be read.
    public static func addresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var cursor = list
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            guard entry.pointee.ifa_flags & UInt32(IFF_UP) != 0, let address = entry.pointee.ifa_addr else { continue }
            let family = Int32(address.pointee.sa_family)
            let length: Int
            switch family {
            case AF_INET: length = MemoryLayout<sockaddr_in>.size
            case AF_INET6: length = MemoryLayout<sockaddr_in6>.size
            default: continue
            }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(address, socklen_t(length), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            var text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
            if !out.contains(text) { out.append(text) }
        }
        return out
    }
}
#endif
