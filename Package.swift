// swift-tools-version:6.2
import PackageDescription

// Layers (ARCHITECTURE.md): wire <- HCI <- host <- API <- ble; of the stack, transport alone opens
// devices, sockets and files (the rest writes at most diagnostic lines to stderr).
let package = Package(
    name: "SwiftBLE",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "BLE", targets: ["BLE"]),
        // The in-process virtual radio as a world of hosts, and `Controllers.open` for every spec.
        .library(name: "BLEVirtual", targets: ["BLEVirtual"]),
        .executable(name: "ble", targets: ["ble"]),
        .executable(name: "ble-fuzz", targets: ["BLEFuzz"]),
        .executable(name: "ble-bench", targets: ["BLEBench"]),
    ],
    targets: [
        .target(name: "BLEWire"),
        // OpenSSL's libcrypto (Debian libssl-dev): AES, AES-CMAC, P-256 for the Security Manager and
        // the GATT Database Hash. The one outside dependency (ARCHITECTURE.md).
        .systemLibrary(name: "CLibcrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "BLECrypto", dependencies: ["CLibcrypto"]),
        // Eclipse Mosquitto's libmosquitto (Debian libmosquitto-dev): MQTT 5 with TLS, for
        // `ble gateway` and `ble ui --broker`; wrapped for Swift concurrency by BLEMQTT.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .target(name: "BLEMQTT", dependencies: ["CMosquitto"]),
        // `ble gateway`'s MQTT side, sans-IO: topics, the command decoder, the outbound queue's
        // bounds, the advertisement rate limit.
        .target(name: "BLEGateway", dependencies: ["BLEWire"]),
        .target(name: "BLEHCI", dependencies: ["BLEWire"]),
        // The seams the protocol code is driven through, with no I/O: the transport protocol, the
        // in-memory transport, the one clock protocol (system and manual clocks).
        .target(name: "BLERuntime", dependencies: ["BLEHCI"]),
        .target(name: "BLETransport", dependencies: ["BLEHCI", "BLERuntime"]),
        .target(name: "BLEHost", dependencies: ["BLEWire", "BLEHCI", "BLECrypto"]),
        // The in-process virtual LE controller and medium, virtual time, fault injection.
        .target(name: "BLEVirtualRadio", dependencies: ["BLEWire", "BLEHCI", "BLERuntime", "BLECrypto"]),
        .target(name: "BLE", dependencies: ["BLEWire", "BLEHCI", "BLEHost", "BLERuntime", "BLETransport", "BLECrypto"]),
        // Above both the API and the simulator: virtual worlds of hosts, and opening any
        // controller by its spec string (`virtual` included).
        .target(name: "BLEVirtual", dependencies: ["BLE", "BLERuntime", "BLETransport", "BLEVirtualRadio"]),
        // Sans-IO codecs and constants of the four systems of docs/SYSTEMS.md (framed stream, sample,
        // heart rate, accelerometer): bytes in, values out, nothing else.
        .target(name: "BLEProfiles", dependencies: ["BLEWire"]),
        // The ble tool's declarative options, parser and generated help (no dependencies: the
        // toolchain-only stand-in for swift-argument-parser).
        .target(name: "BLECommandLine"),
        // The tool's logic as a library: the seed systems' central flows and their renderers, the
        // `ble serve` profiles, and the demo peripherals of the virtual world.
        .target(name: "BLESystems", dependencies: ["BLE", "BLEGateway", "BLEHTTP", "BLEMQTT", "BLEProfiles", "BLEVirtual"], swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]),
        // The command layer: arguments, commands, signals and keys; everything else is BLESystems.
        .executableTarget(name: "ble", dependencies: ["BLECommandLine", "BLESystems", "BLE", "BLEGateway", "BLEMQTT", "BLEProfiles", "BLETransport", "BLEVirtual", "BLEHTTP"],
                          // `ble pandora`'s gRPC bridge, found beside the executable (not through Bundle.module).
                          resources: [.copy("Pandora/Bridge")]),
        // Fuzz targets for every decoder and stateful machine (docs/FUZZING.md, scripts/fuzz.sh).
        // HTTP/1.1 and Server-Sent Events for `ble ui`, sans-IO: request parser, responses, the
        // access policy. No dependencies.
        .target(name: "BLEHTTP"),
        .target(name: "BLEFuzzTargets", dependencies: ["BLEWire", "BLEHCI", "BLEHost", "BLECrypto", "BLEGateway", "BLEHTTP"]),
        .executableTarget(name: "BLEFuzz", dependencies: ["BLEFuzzTargets"]),
        // The bond store's crash test kills this writer at random points (BondStoreCrashTests).
        .executableTarget(name: "ble-bond-writer", dependencies: ["BLE"], path: "Tests/BLEBondWriter"),
        // Benchmarks (docs/PERFORMANCE.md): throughput against theory, raw host cost.
        .executableTarget(name: "BLEBench", dependencies: ["BLE", "BLEHCI", "BLEHost", "BLEProfiles", "BLEVirtual", "BLEVirtualRadio", "BLEWire", "BLESystems", "BLEMQTT", "BLEGateway"]),
        // What several test targets share instead of copies: hex literals, a bounded waitUntil,
        // the scripted HCI controller, a `ble serve` profile on a virtual world with its log, a
        // test's temporary directory. A plain library so test targets can depend on it.
        .target(name: "BLETestSupport", dependencies: ["BLEWire", "BLEHCI", "BLERuntime", "BLE", "BLESystems", "BLEVirtual"], path: "Tests/BLETestSupport"),
        .testTarget(name: "BLEWireTests", dependencies: ["BLEWire"]),
        .testTarget(name: "BLECryptoTests", dependencies: ["BLECrypto", "BLETestSupport"]),
        .testTarget(name: "BLEHCITests", dependencies: ["BLEHCI", "BLETestSupport"]),
        .testTarget(name: "BLETransportTests", dependencies: ["BLETransport", "BLERuntime", "BLETestSupport"]),
        .testTarget(name: "BLEHostTests", dependencies: ["BLEHost", "BLEHCI", "BLEWire", "BLETestSupport"]),
        .testTarget(name: "BLEProfilesTests", dependencies: ["BLEProfiles", "BLEWire"]),
        // BLE's features: the host and API against a scripted controller, and between whole hosts on
        // the virtual radio in virtual time (pairing, bonds, signed writes, privacy, L2CAP, EATT,
        // notifications, GATT caching, scans); one GATT caching test serves a seed-system profile.
        .testTarget(name: "BLETests", dependencies: ["BLE", "BLEHCI", "BLEHost", "BLERuntime", "BLESystems", "BLETransport", "BLEVirtual", "BLEVirtualRadio", "BLEWire", "BLETestSupport"]),
        // The virtual radio itself: medium, controllers, virtual time, the world and its server.
        .testTarget(name: "BLEVirtualRadioTests", dependencies: ["BLEVirtualRadio", "BLEVirtual", "BLE", "BLEHCI", "BLEHost", "BLERuntime", "BLETransport", "BLEWire", "BLETestSupport"]),
        .testTarget(name: "BLEFuzzTests", dependencies: ["BLEFuzzTargets", "BLETestSupport"]),
        .testTarget(name: "BLESystemsTests", dependencies: ["BLESystems", "BLE", "BLEHost", "BLEHTTP", "BLEProfiles", "BLERuntime", "BLEVirtual", "BLEWire", "BLETestSupport"]),
        .testTarget(name: "BLEInteropTests", dependencies: ["BLE", "BLEProfiles", "BLEWire", "BLETestSupport"], exclude: ["peers"]),
        .testTarget(name: "BLECommandLineTests", dependencies: ["BLECommandLine"]),
        .testTarget(name: "BLEHTTPTests", dependencies: ["BLEHTTP"]),
        .testTarget(name: "BLEGatewayTests", dependencies: ["BLEGateway", "BLEMQTT", "BLEWire"]),
        // The seed-system flows, serve profiles and renderers of BLESystems, in-process on the virtual radio.
        .testTarget(name: "BLEToolTests", dependencies: ["BLESystems", "BLE", "BLEHost", "BLEProfiles", "BLERuntime", "BLEVirtual", "BLEVirtualRadio", "BLEWire", "BLETestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// CoreBluetooth on Linux: Apple's API, delegates and semantics over the public async
// API, so code written for iPhone builds here. Built only where Apple's framework is absent, so it
// never shadows the system one.
#if !canImport(Darwin)
package.products.append(.library(name: "CoreBluetooth", targets: ["CoreBluetooth"]))
package.targets += [
    .target(name: "CoreBluetooth", dependencies: ["BLE", "BLERuntime", "BLEVirtual"]),
    .testTarget(name: "CoreBluetoothTests", dependencies: ["CoreBluetooth", "CoreBluetoothExamples", "BLE", "BLEVirtual", "BLESystems", "BLETransport", "BLETestSupport"]),
    // The seed systems written against `import CoreBluetooth`: the apps'
    // BLE classes in a library the tests drive, and one small executable per app.
    .target(name: "CoreBluetoothExamples", dependencies: ["CoreBluetooth"], path: "Examples/CoreBluetoothExamples"),
    .executableTarget(name: "cb-echo", dependencies: ["CoreBluetoothExamples"], path: "Examples/cb-echo"),
    .executableTarget(name: "cb-sample", dependencies: ["CoreBluetoothExamples"], path: "Examples/cb-sample"),
    .executableTarget(name: "cb-heart-rate", dependencies: ["CoreBluetoothExamples"], path: "Examples/cb-heart-rate"),
    .executableTarget(name: "cb-accel-peripheral", dependencies: ["CoreBluetoothExamples"], path: "Examples/cb-accel-peripheral"),
    .executableTarget(name: "cb-accel-central", dependencies: ["CoreBluetoothExamples"], path: "Examples/cb-accel-central"),
    // L2CAP channels through `CBPeripheral.openL2CAPChannel` and the channel's streams.
    .executableTarget(name: "cb-l2cap", dependencies: ["CoreBluetoothExamples"], path: "Examples/cb-l2cap"),
    // Typical iOS idioms (implicitly unwrapped managers, @unknown default, Timer) in Swift 5 mode.
    .testTarget(name: "CoreBluetoothSwift5Tests", dependencies: ["CoreBluetooth"],
                swiftSettings: [.swiftLanguageMode(.v5)]),
]
#endif
