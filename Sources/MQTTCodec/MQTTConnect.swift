/// The Will Message a CONNECT may carry (3.1.1 §3.1.2.5, 5.0 §3.1.2.5 and §3.1.3.2).
public struct MQTTWill: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool
    /// Will Properties (5.0 §3.1.3.2); ignored before 5.0.
    public var properties: [MQTTProperty]

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
                properties: [MQTTProperty] = []) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
    }
}

/// CONNECT (3.1.1 §3.1, 5.0 §3.1). Its own `version` decides how it is encoded and decoded.
public struct MQTTConnect: Sendable, Hashable {
    public var version: MQTTProtocolVersion
    public var clientID: String
    /// Clean Session in 3.1/3.1.1, Clean Start in 5.0 (same bit, §3.1.2.4).
    public var cleanStart: Bool
    /// Seconds; 0 turns keep-alive off (§3.1.2.10).
    public var keepAlive: UInt16
    public var username: String?
    public var password: [UInt8]?
    public var will: MQTTWill?
    /// CONNECT properties (5.0 §3.1.2.11); ignored before 5.0.
    public var properties: [MQTTProperty]

    public init(version: MQTTProtocolVersion, clientID: String, cleanStart: Bool = true, keepAlive: UInt16 = 60,
                username: String? = nil, password: [UInt8]? = nil, will: MQTTWill? = nil,
                properties: [MQTTProperty] = []) {
        self.version = version
        self.clientID = clientID
        self.cleanStart = cleanStart
        self.keepAlive = keepAlive
        self.username = username
        self.password = password
        self.will = will
        self.properties = properties
    }

    /// Alias of `cleanStart` under its 3.1.1 name.
    public var cleanSession: Bool {
        get { cleanStart }
        set { cleanStart = newValue }
    }
}

/// CONNACK (3.1.1 §3.2, 5.0 §3.2). In 3.1/3.1.1 the return code is carried as the equivalent MQTT 5 reason
/// code (see `MQTTConnectReturnCode`), so callers handle one type.
public struct MQTTConnAck: Sendable, Hashable {
    public var sessionPresent: Bool
    public var reasonCode: MQTTReasonCode
    public var properties: [MQTTProperty]

    public init(sessionPresent: Bool = false, reasonCode: MQTTReasonCode = .success,
                properties: [MQTTProperty] = []) {
        self.sessionPresent = sessionPresent
        self.reasonCode = reasonCode
        self.properties = properties
    }
}
