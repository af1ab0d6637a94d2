// What `import BLE` brings with it: everything an application names when it uses the API, so
// that `import BLE` alone is enough (ARCHITECTURE.md: the public API stands alone). The protocol
// machinery of the lower layers (ATT bearers, the ATT server, L2CAP, HCI packets) stays out of
// sight; import those modules by name to work at that level.

// Addresses, UUIDs, advertising data and the SIG name tables.
@_exported import BLEWire
// The clock and transport seams: `BLEClock`, `SystemClock`, `ManualClock`, `HCITransport`,
// `InMemoryTransport`, `TransportError`.
@_exported import BLERuntime
// Which controller to open, written as one string: what `TransportFactory.open(spec:)`, the
// `BLE_HCI` environment variable and `ble --hci` take (`tcp:HOST:PORT`, `serial:PATH`, `hci0`,
// `virtual`), parsed and printed.
@_exported import enum BLETransport.TransportSpec

// What an `HCITransport` moves: one HCI packet with its H4 indicator (Vol 4 Part A §2), for an
// application that brings a transport of its own.
@_exported import struct BLEHCI.H4Frame
@_exported import enum BLEHCI.HCIPacketType

// Controller facts and HCI outcomes that reach the API (ControllerInfo, BLEError, Peripheral).
@_exported import struct BLEHCI.HCIStatus
@_exported import enum BLEHCI.HCIError
@_exported import struct BLEHCI.HCIOpcode
@_exported import struct BLEHCI.LEPHY
@_exported import struct BLEHCI.LEPHYSet
@_exported import struct BLEHCI.LocalVersionInformation
@_exported import struct BLEHCI.LocalSupportedCommands
@_exported import struct BLEHCI.LocalSupportedFeatures
@_exported import struct BLEHCI.LESupportedFeatures
@_exported import struct BLEHCI.SupportedCommandBit
@_exported import struct BLEHCI.LEMaximumDataLength

// Scanning.
@_exported import struct BLEHost.ScanFilter
@_exported import struct BLEHost.ScannedDevice
@_exported import struct BLEHost.ExtendedAdvertisingInfo
@_exported import enum BLEHost.AdvertisingEventKind

// The GATT client's view of a peer's database, and its errors.
@_exported import struct BLEHost.GATTService
@_exported import struct BLEHost.GATTIncludedService
@_exported import struct BLEHost.GATTCharacteristic
@_exported import struct BLEHost.GATTDescriptor
@_exported import struct BLEHost.ATTHandleValue
@_exported import struct BLEHost.ATTErrorCode
@_exported import struct BLEHost.ATTOpcode
@_exported import enum BLEHost.GATTError
@_exported import enum BLEHost.GATTUUID

// The GATT server's database definitions.
@_exported import struct BLEHost.GATTServiceDefinition
@_exported import struct BLEHost.GATTCharacteristicDefinition
@_exported import struct BLEHost.GATTDescriptorDefinition
@_exported import struct BLEHost.GATTServiceHandles
@_exported import struct BLEHost.GATTCharacteristicHandles
@_exported import struct BLEHost.CharacteristicProperties
@_exported import struct BLEHost.AttributePermissions
@_exported import struct BLEHost.GATTDatabaseError

// Pairing and security: what `SecuritySettings`, `PairingAgent`, `Bond` and the errors name.
@_exported import struct BLEHost.SMPPairingSettings
@_exported import struct BLEHost.SMPIOCapability
@_exported import struct BLEHost.SMPAuthRequirements
@_exported import struct BLEHost.SMPKeyDistribution
@_exported import struct BLEHost.SMPPairingFeatures
@_exported import struct BLEHost.SMPPairingFailedReason
@_exported import struct BLEHost.SMPOutOfBandData
@_exported import struct BLEHost.SMPLocalOOB
@_exported import struct BLEHost.SMPAttemptLimiter
@_exported import enum BLEHost.SMPPairingError
@_exported import enum BLEHost.SMPAssociationModel
@_exported import enum BLEHost.SecurityLevel

// LE credit-based L2CAP channels: their parameters, what a listener requires, and their errors.
@_exported import struct BLEHost.CreditBasedChannelParameters
@_exported import struct BLEHost.CreditBasedChannelInfo
@_exported import struct BLEHost.L2CAPSecurityRequirement
@_exported import enum BLEHost.L2CAPChannelError
@_exported import enum BLEHost.CreditBasedMode
