import CMosquitto
import Glibc

/// libmosquitto's callbacks, as C function pointers that find their `MQTTClient` through the
/// client's user-data pointer (set to the client, unretained: the network thread keeps the
/// client alive for as long as callbacks can come).
enum MosquittoCallbacks {
    static func install(on handle: OpaquePointer) {
        mosquitto_connect_v5_callback_set(handle) { _, object, reasonCode, _, _ in
            mosquittoClient(object)?.didConnect(reasonCode: reasonCode)
        }
        mosquitto_publish_v5_callback_set(handle) { _, object, messageID, reasonCode, _ in
            mosquittoClient(object)?.didPublish(messageID: messageID, reasonCode: reasonCode)
        }
        mosquitto_disconnect_v5_callback_set(handle) { _, object, reasonCode, _ in
            mosquittoClient(object)?.didDisconnect(reasonCode: reasonCode)
        }
        mosquitto_message_v5_callback_set(handle) { _, object, message, properties in
            guard let client = mosquittoClient(object), let message else { return }
            client.didReceive(receivedMessage(message.pointee, properties))
        }
    }

}

private func mosquittoClient(_ object: UnsafeMutableRawPointer?) -> MQTTClient? {
    object.map { Unmanaged<MQTTClient>.fromOpaque($0).takeUnretainedValue() }
}

/// A received message as a value: topic, payload, and the request/response properties.
private func receivedMessage(_ m: mosquitto_message, _ properties: OpaquePointer?) -> MQTTMessage {
    let topic = m.topic.map { String(cString: $0) } ?? ""
    var payload: [UInt8] = []
    if let bytes = m.payload, m.payloadlen > 0 {
        payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(m.payloadlen)))
    }
    var message = MQTTMessage(topic: topic, payload: payload, qos: m.qos, retain: m.retain)
    var text: UnsafeMutablePointer<CChar>?
    if mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &text, false) != nil, let text {
        message.responseTopic = String(cString: text)
        free(text)
    }
    var data: UnsafeMutableRawPointer?
    var length: UInt16 = 0
    if mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &data, &length, false) != nil {
        if let data {
            message.correlationData = Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
            free(data)
        } else {
            message.correlationData = []
        }
    }
    return message
}
