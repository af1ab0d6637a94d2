import BLEMQTT
import XCTest

/// `MQTTBrokerURL(parsing:)`: the two schemes and their default ports, IPv6 in brackets, what is
/// refused, and that a password in a refused URL is never repeated in the message.
final class MQTTBrokerURLTests: XCTestCase {
    /// The message `text` is refused with, or a failure when it is accepted.
    private func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            let url = try MQTTBrokerURL(parsing: text)
            XCTFail("\(text) accepted as \(url)", file: file, line: line)
            return nil
        } catch {
            guard case let .invalidURL(message) = error else {
                XCTFail("\(text): \(error), not invalidURL", file: file, line: line)
                return nil
            }
            XCTAssertEqual(error.description, message, file: file, line: line)
            return message
        }
    }

    func testEachSchemeHasItsDefaultPort() throws {
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtt://broker.local"), MQTTBrokerURL(host: "broker.local", port: 1883, usesTLS: false))
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtts://broker.local"), MQTTBrokerURL(host: "broker.local", port: 8883, usesTLS: true))
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtt://10.0.0.2/"), MQTTBrokerURL(host: "10.0.0.2", port: 1883, usesTLS: false))
    }

    func testAnExplicitPortIsTaken() throws {
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtt://10.0.0.2:1884"), MQTTBrokerURL(host: "10.0.0.2", port: 1884, usesTLS: false))
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtts://broker.local:443"), MQTTBrokerURL(host: "broker.local", port: 443, usesTLS: true))
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtt://h:1"), MQTTBrokerURL(host: "h", port: 1, usesTLS: false))
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtt://h:65535"), MQTTBrokerURL(host: "h", port: 65535, usesTLS: false))
    }

    func testAnIPv6AddressGoesInBrackets() throws {
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtt://[::1]"), MQTTBrokerURL(host: "::1", port: 1883, usesTLS: false))
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtts://[fe80::1]:8884"), MQTTBrokerURL(host: "fe80::1", port: 8884, usesTLS: true))
        XCTAssertEqual(try MQTTBrokerURL(parsing: "mqtt://[2001:db8::7]:1883").host, "2001:db8::7")
    }

    /// The description is the URL with its port, IPv6 back in brackets, and parses to the same.
    func testTheDescriptionParsesBackToTheSameURL() throws {
        let cases = [("mqtt://broker.local", "mqtt://broker.local:1883"), ("mqtts://[::1]", "mqtts://[::1]:8883"),
                     ("mqtt://10.0.0.2:1884", "mqtt://10.0.0.2:1884")]
        for (text, shown) in cases {
            let url = try MQTTBrokerURL(parsing: text)
            XCTAssertEqual(url.description, shown)
            XCTAssertEqual(try MQTTBrokerURL(parsing: url.description), url)
        }
    }

    func testOtherSchemesPathsEmptyHostsAndBadPortsAreRefused() {
        for text in ["http://broker.local", "tcp://broker.local:1883", "MQTT://broker.local", "broker.local:1883", "mqtt:/broker.local", "",
                     "mqtt://broker.local/topic", "mqtt://broker.local:1883/x",
                     "mqtt://", "mqtt://:1883", "mqtt:///", "mqtt://[]:1883", "mqtt://bro ker",
                     "mqtt://h:0", "mqtt://h:70000", "mqtt://h:65536", "mqtt://h:", "mqtt://h:x", "mqtt://h:-1",
                     "mqtt://[::1", "mqtt://[::1]x", "mqtt://[::1]:0"] {
            _ = refusal(text)
        }
    }

    func testAUserNameOrPasswordIsRefused() {
        for text in ["mqtt://u:p@h", "mqtt://u@h", "mqtts://user:pw@broker.local:8883", "mqtt://@h"] {
            let message = refusal(text)
            XCTAssertTrue(message?.contains("--password-file") ?? false, message ?? text)
        }
    }

    /// The command line is readable by every user of the machine: an error must not copy a
    /// password from it to a log or terminal, whichever check refuses the URL.
    func testARefusedURLsPasswordIsNotRepeated() {
        for text in ["mqtt://u:secret@h:1883", "mqtts://u:secret@broker.local", "mqtt://u:secret@h/path",
                     "http://u:secret@h", "mqtt://u:secret@[::1]:1883", "mqtt://u:secret@h:0"] {
            guard let message = refusal(text) else { continue }
            XCTAssertFalse(message.contains("secret"), "\(text) → \(message)")
        }
    }

    /// The same with the scheme mistyped or left out: `user:secret@host` is a likely slip.
    func testAPasswordIsNotRepeatedWhenTheSchemeIsMissing() {
        for text in ["u:secret@broker.local:1883", "mqtt:/u:secret@h", "u:secret@h"] {
            guard let message = refusal(text) else { continue }
            XCTAssertFalse(message.contains("secret"), "\(text) → \(message)")
        }
    }

    /// Without brackets the last `:` would be read as the port's: `mqtt://::1` would be host ":"
    /// on port 1, and `mqtt://fe80::1` host "fe80:" on port 1.
    func testAnIPv6AddressWithoutBracketsIsRefused() {
        for text in ["mqtt://::1", "mqtt://fe80::1", "mqtt://2001:db8::7:1883"] {
            _ = refusal(text)
        }
    }
}
