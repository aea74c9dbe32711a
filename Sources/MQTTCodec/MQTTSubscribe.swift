/// Retain Handling subscription option (5.0 §3.8.3.1).
public enum MQTTRetainHandling: UInt8, Sendable, CaseIterable {
    /// Send retained messages at the time of the subscribe.
    case sendOnSubscribe = 0
    /// Send retained messages only if the subscription did not exist.
    case sendOnNewSubscribe = 1
    case doNotSend = 2
}

/// Subscription Options byte (5.0 §3.8.3.1); in 3.1.1 only the QoS bits exist (§3.8.3).
public struct MQTTSubscriptionOptions: Sendable, Hashable {
    public var qos: MQTTQoS
    public var noLocal: Bool
    public var retainAsPublished: Bool
    public var retainHandling: MQTTRetainHandling

    public init(qos: MQTTQoS = .atMostOnce, noLocal: Bool = false, retainAsPublished: Bool = false,
                retainHandling: MQTTRetainHandling = .sendOnSubscribe) {
        self.qos = qos
        self.noLocal = noLocal
        self.retainAsPublished = retainAsPublished
        self.retainHandling = retainHandling
    }
}

/// One topic filter with its options in a SUBSCRIBE payload.
public struct MQTTSubscription: Sendable, Hashable {
    public var filter: String
    public var options: MQTTSubscriptionOptions

    public init(filter: String, options: MQTTSubscriptionOptions = MQTTSubscriptionOptions()) {
        self.filter = filter
        self.options = options
    }

    public init(filter: String, qos: MQTTQoS) {
        self.init(filter: filter, options: MQTTSubscriptionOptions(qos: qos))
    }
}

/// SUBSCRIBE (3.1.1 §3.8, 5.0 §3.8).
public struct MQTTSubscribe: Sendable, Hashable {
    public var packetID: UInt16
    public var subscriptions: [MQTTSubscription]
    public var properties: [MQTTProperty]

    public init(packetID: UInt16, subscriptions: [MQTTSubscription], properties: [MQTTProperty] = []) {
        self.packetID = packetID
        self.subscriptions = subscriptions
        self.properties = properties
    }
}

/// SUBACK (3.1.1 §3.9, 5.0 §3.9). 3.1.1 return codes 0x00-0x02 and 0x80 are the same values as the 5.0
/// reason codes Granted QoS 0-2 and Unspecified error.
public struct MQTTSubAck: Sendable, Hashable {
    public var packetID: UInt16
    public var reasonCodes: [MQTTReasonCode]
    public var properties: [MQTTProperty]

    public init(packetID: UInt16, reasonCodes: [MQTTReasonCode], properties: [MQTTProperty] = []) {
        self.packetID = packetID
        self.reasonCodes = reasonCodes
        self.properties = properties
    }
}

/// UNSUBSCRIBE (3.1.1 §3.10, 5.0 §3.10).
public struct MQTTUnsubscribe: Sendable, Hashable {
    public var packetID: UInt16
    public var filters: [String]
    public var properties: [MQTTProperty]

    public init(packetID: UInt16, filters: [String], properties: [MQTTProperty] = []) {
        self.packetID = packetID
        self.filters = filters
        self.properties = properties
    }
}

/// UNSUBACK (3.1.1 §3.11, 5.0 §3.11). 3.1.1 has no reason codes: `reasonCodes` is empty there.
public struct MQTTUnsubAck: Sendable, Hashable {
    public var packetID: UInt16
    public var reasonCodes: [MQTTReasonCode]
    public var properties: [MQTTProperty]

    public init(packetID: UInt16, reasonCodes: [MQTTReasonCode] = [], properties: [MQTTProperty] = []) {
        self.packetID = packetID
        self.reasonCodes = reasonCodes
        self.properties = properties
    }
}
