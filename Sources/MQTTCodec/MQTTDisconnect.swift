/// DISCONNECT (3.1.1 §3.14, 5.0 §3.14). In 3.1/3.1.1 it has no body: reason is `.normalDisconnection`.
public struct MQTTDisconnect: Sendable, Hashable {
    public var reasonCode: MQTTReasonCode
    public var properties: [MQTTProperty]

    public init(reasonCode: MQTTReasonCode = .normalDisconnection, properties: [MQTTProperty] = []) {
        self.reasonCode = reasonCode
        self.properties = properties
    }
}

/// AUTH (5.0 §3.15), MQTT 5.0 only.
public struct MQTTAuth: Sendable, Hashable {
    public var reasonCode: MQTTReasonCode
    public var properties: [MQTTProperty]

    public init(reasonCode: MQTTReasonCode = .success, properties: [MQTTProperty] = []) {
        self.reasonCode = reasonCode
        self.properties = properties
    }
}
