// Eclipse Mosquitto's client library, libmosquitto 2.0 (Debian package libmosquitto-dev):
// MQTT 3.1.1 and 5 with TLS, for `ble gateway` and `ble ui --broker` (BLEMQTT).
#ifndef BLE_CMOSQUITTO_SHIM_H
#define BLE_CMOSQUITTO_SHIM_H

#include <mosquitto.h>
#include <mqtt_protocol.h>

#endif
