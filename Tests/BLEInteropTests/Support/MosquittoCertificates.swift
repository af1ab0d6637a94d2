import Foundation

/// The TLS material of a test broker, made with the `openssl` command line: a throwaway CA and a
/// server certificate it signed, for `IP:127.0.0.1` and `DNS:localhost`, valid for two days.
/// P-256 keys: generated in milliseconds, where RSA keys would take a noticeable part of a test.
///
/// The OpenSSL config is written next to them and passed with `-config`/`-extfile`, so the
/// system's openssl.cnf (and `OPENSSL_CONF`) add no extensions of their own.
enum MosquittoCertificates {
    /// The extensions of both certificates: `ca` for the CA, `server` for the broker's.
    private static let config = """
        [req]
        distinguished_name = dn
        prompt = no

        [dn]
        CN = SwiftBLE test broker

        [ca]
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash

        [server]
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = IP:127.0.0.1, DNS:localhost
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid

        """

    /// Writes `ca.key`, `ca.crt`, `server.key` and `server.crt` into `directory` (keys mode
    /// 0600) and returns the URL of `ca.crt`.
    static func make(in directory: URL) throws -> URL {
        guard let openssl = ProcessRunner.which("openssl") else {
            throw MosquittoBroker.Failure("openssl is not installed: the TLS broker needs it for its certificates")
        }
        let configFile = directory.appendingPathComponent("openssl.cnf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let steps: [[String]] = [
            ["req", "-x509", "-config", configFile.path, "-extensions", "ca"] + newKey
                + ["-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "2", "-subj", "/CN=SwiftBLE test CA"],
            ["req", "-new", "-config", configFile.path] + newKey
                + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
             "-set_serial", "2", "-days", "2", "-extfile", configFile.path, "-extensions", "server",
             "-out", path("server.crt")],
        ]
        for arguments in steps {
            let result = try ProcessRunner.run(openssl, arguments: arguments, timeout: 30)
            guard result.succeeded else {
                throw MosquittoBroker.Failure("openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(result)")
            }
        }
        for key in ["ca.key", "server.key"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path(key))
        }
        return directory.appendingPathComponent("ca.crt")
    }
}
