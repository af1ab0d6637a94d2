import BLE
import BLEVirtual
import XCTest

/// The controller profiles a matrix test runs on (`VirtualControllerProfile`): each profile on
/// both devices, and a Bluetooth 4.0 device facing the most capable one in either role.
public struct ProfilePair: Sendable, Hashable, CustomStringConvertible {
    /// The central's controller.
    public let central: VirtualControllerProfile
    /// The peripheral's controller.
    public let peripheral: VirtualControllerProfile

    public init(central: VirtualControllerProfile, peripheral: VirtualControllerProfile) {
        self.central = central
        self.peripheral = peripheral
    }

    /// Both devices on `profile`.
    public static func both(_ profile: VirtualControllerProfile) -> ProfilePair {
        ProfilePair(central: profile, peripheral: profile)
    }

    /// 4.0, 4.2, 5.0 and default on both sides, then 4.0 central ↔ default peripheral and the
    /// reverse.
    public static let matrix: [ProfilePair] = VirtualControllerProfile.allCases.map(both) + [
        ProfilePair(central: .bluetooth40, peripheral: .current),
        ProfilePair(central: .current, peripheral: .bluetooth40),
    ]

    /// "central 4.0 / peripheral default", for assertion messages.
    public var description: String { "central \(central) / peripheral \(peripheral)" }

    /// The central's controller configuration.
    public var centralController: VirtualControllerConfiguration { central.configuration }
    /// The peripheral's controller configuration.
    public var peripheralController: VirtualControllerConfiguration { peripheral.configuration }

    /// The LL payload both ends can use once Data Length Extension ran: 251 when both
    /// controllers have it, else 27.
    public var linkDataLength: Int {
        central == .bluetooth40 || peripheral == .bluetooth40 ? 27 : 251
    }
}

extension VirtualWorld {
    /// The controller state of `device`'s link(s): what its Link Layer was told (payload length,
    /// PHY, encryption), by connection handle.
    public func controllerConnections(of device: VirtualDevice) async -> [UInt16: VirtualController.Connection] {
        await radio.controller(device.id)?.connections ?? [:]
    }
}

/// Runs `body` for each pair of `pairs`; an error fails the test naming the pair and goes on
/// with the next, so one profile's failure does not hide another's.
public func forEachPair(_ pairs: [ProfilePair] = ProfilePair.matrix, file: StaticString = #filePath, line: UInt = #line,
                        _ body: (ProfilePair) async throws -> Void) async {
    for pair in pairs {
        do {
            try await body(pair)
        } catch {
            XCTFail("\(pair): \(error)", file: file, line: line)
        }
    }
}
