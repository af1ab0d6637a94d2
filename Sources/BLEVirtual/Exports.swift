// What `import BLEVirtual` brings with it, so that it alone is enough for a test or demo that
// uses a virtual world (docs/LIBRARY.md, "The virtual radio in your own tests"): the whole public
// API (`import BLE`), and the virtual-radio types that `VirtualWorld` and `VirtualRadio` name in
// their signatures. The virtual controller's and medium's sans-IO internals (host-bound packets,
// air actions, deliveries) stay out of sight; import BLEVirtualRadio by name to drive them.

// Central, Peripheral, PeripheralManager and everything they name (ScanFilter, HCITransport, ...).
@_exported import BLE

// The radio, its devices and their fault-injection handles (`VirtualMedium.ControllerID`,
// `VirtualMedium.ScanResponseFault`), where a device stands (`VirtualMedium.Position`) and how far
// it is heard (`VirtualMedium.Propagation`).
@_exported import class BLEVirtualRadio.VirtualRadio
@_exported import struct BLEVirtualRadio.VirtualDevice
@_exported import struct BLEVirtualRadio.VirtualMedium
// A device's fixed controller answers (`addCentral(controller:)`) and the controller state
// `VirtualRadio.controller(_:)` returns.
@_exported import struct BLEVirtualRadio.VirtualControllerConfiguration
@_exported import struct BLEVirtualRadio.VirtualController
// Controller profiles by core version (`virtual:4.0`) and documented real-controller quirks.
@_exported import enum BLEVirtualRadio.VirtualControllerProfile
@_exported import enum BLEVirtualRadio.VirtualControllerQuirk
// Virtual time (`VirtualWorld.run`), and the error it ends a run with.
@_exported import class BLEVirtualRadio.VirtualTime
@_exported import enum BLEVirtualRadio.VirtualTimeError
