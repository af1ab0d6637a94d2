// The dictionary keys of CoreBluetooth, with Apple's string values (apps sometimes spell them out).

/// Advertisement data: the local name (`String`).
public let CBAdvertisementDataLocalNameKey = "kCBAdvDataLocalName"
/// Advertisement data: the manufacturer data (`Data`: the company identifier, little-endian, then the data).
public let CBAdvertisementDataManufacturerDataKey = "kCBAdvDataManufacturerData"
/// Advertisement data: service data (`[CBUUID: Data]`).
public let CBAdvertisementDataServiceDataKey = "kCBAdvDataServiceData"
/// Advertisement data: the advertised service UUIDs (`[CBUUID]`), complete and incomplete lists.
public let CBAdvertisementDataServiceUUIDsKey = "kCBAdvDataServiceUUIDs"
/// Advertisement data: services in the iOS background "overflow" area (`[CBUUID]`; never present on Linux).
public let CBAdvertisementDataOverflowServiceUUIDsKey = "kCBAdvDataOverflowServiceUUIDs"
/// Advertisement data: the transmit power level (`NSNumber`, dBm).
public let CBAdvertisementDataTxPowerLevelKey = "kCBAdvDataTxPowerLevel"
/// Advertisement data: whether the advertisement is connectable (`NSNumber`, a Bool).
public let CBAdvertisementDataIsConnectable = "kCBAdvDataIsConnectable"
/// Advertisement data: the solicited service UUIDs (`[CBUUID]`).
public let CBAdvertisementDataSolicitedServiceUUIDsKey = "kCBAdvDataSolicitedServiceUUIDs"

/// Scan option: report every advertisement, not once per change of a device's data (`NSNumber`, a Bool).
public let CBCentralManagerScanOptionAllowDuplicatesKey = "kCBScanOptionAllowDuplicates"
/// Scan option: also report devices soliciting any of these services (`[CBUUID]`).
public let CBCentralManagerScanOptionSolicitedServiceUUIDsKey = "kCBScanOptionSolicitedServiceUUIDs"

/// Manager option: show a power alert (iOS UI; ignored on Linux).
public let CBCentralManagerOptionShowPowerAlertKey = "kCBInitOptionShowPowerAlert"
/// Manager option: the state-restoration identifier (iOS background relaunch; ignored on Linux).
public let CBCentralManagerOptionRestoreIdentifierKey = "kCBInitOptionRestoreIdentifier"
/// Restored state: peripherals (never delivered on Linux).
public let CBCentralManagerRestoredStatePeripheralsKey = "kCBRestoredPeripherals"
/// Restored state: the scanned services (never delivered on Linux).
public let CBCentralManagerRestoredStateScanServicesKey = "kCBRestoredScanServices"
/// Restored state: the scan options (never delivered on Linux).
public let CBCentralManagerRestoredStateScanOptionsKey = "kCBRestoredScanOptions"

/// Connect option: alert on connection while suspended (iOS UI; ignored on Linux).
public let CBConnectPeripheralOptionNotifyOnConnectionKey = "kCBConnectOptionNotifyOnConnection"
/// Connect option: alert on disconnection while suspended (iOS UI; ignored on Linux).
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey = "kCBConnectOptionNotifyOnDisconnection"
/// Connect option: alert on notifications while suspended (iOS UI; ignored on Linux).
public let CBConnectPeripheralOptionNotifyOnNotificationKey = "kCBConnectOptionNotifyOnNotification"
/// Connect option: delay before connecting (ignored on Linux).
public let CBConnectPeripheralOptionStartDelayKey = "kCBConnectOptionStartDelay"
/// Connect option: bridge classic transports (ignored on Linux).
public let CBConnectPeripheralOptionEnableTransportBridgingKey = "kCBConnectOptionEnableTransportBridging"
/// Connect option: require ANCS (ignored on Linux).
public let CBConnectPeripheralOptionRequiresANCS = "kCBConnectOptionRequiresANCS"

/// SwiftBLE's own option, for `CBCentralManager(delegate:queue:options:)` (and the peripheral
/// manager): which controller to open, as a `String` in the spec form of `ble --hci` and
/// `BLE_HCI` (`virtual`, `tcp:HOST:PORT`, `serial:PATH[@BAUD]`, `hci0`). Without it the manager
/// uses `BLE_HCI`, else the first Linux adapter that opens. Managers given the same controller
/// share it (one host per controller per process).
public let SwiftBLEManagerOptionHCIKey = "SwiftBLEManagerOptionHCI"
