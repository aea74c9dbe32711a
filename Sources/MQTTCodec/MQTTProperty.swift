/// The wire type of a property value (5.0 §1.5, §2.2.2.2).
public enum MQTTPropertyValueType: Sendable {
    case byte, twoByteInteger, fourByteInteger, variableByteInteger, utf8String, binaryData, utf8StringPair
}

/// Where a property list appears: a packet's own properties, or the Will Properties inside CONNECT.
public enum MQTTPropertyContext: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case connect, connAck, publish, will, pubAck, pubRec, pubRel, pubComp
    case subscribe, subAck, unsubscribe, unsubAck, disconnect, auth

    /// The context of a packet's own property list (nil for packets without properties).
    public init?(_ type: MQTTPacketType) {
        switch type {
        case .connect: self = .connect
        case .connAck: self = .connAck
        case .publish: self = .publish
        case .pubAck: self = .pubAck
        case .pubRec: self = .pubRec
        case .pubRel: self = .pubRel
        case .pubComp: self = .pubComp
        case .subscribe: self = .subscribe
        case .subAck: self = .subAck
        case .unsubscribe: self = .unsubscribe
        case .unsubAck: self = .unsubAck
        case .disconnect: self = .disconnect
        case .auth: self = .auth
        case .pingReq, .pingResp: return nil
        }
    }

    @inlinable var bit: UInt16 { 1 << UInt16(rawValue) }

    public var description: String {
        switch self {
        case .connect: return "CONNECT"
        case .connAck: return "CONNACK"
        case .publish: return "PUBLISH"
        case .will: return "Will Properties"
        case .pubAck: return "PUBACK"
        case .pubRec: return "PUBREC"
        case .pubRel: return "PUBREL"
        case .pubComp: return "PUBCOMP"
        case .subscribe: return "SUBSCRIBE"
        case .subAck: return "SUBACK"
        case .unsubscribe: return "UNSUBSCRIBE"
        case .unsubAck: return "UNSUBACK"
        case .disconnect: return "DISCONNECT"
        case .auth: return "AUTH"
        }
    }
}

/// Every MQTT 5.0 property identifier (5.0 §2.2.2.2 table 2-4).
public enum MQTTPropertyIdentifier: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case payloadFormatIndicator = 0x01
    case messageExpiryInterval = 0x02
    case contentType = 0x03
    case responseTopic = 0x08
    case correlationData = 0x09
    case subscriptionIdentifier = 0x0B
    case sessionExpiryInterval = 0x11
    case assignedClientIdentifier = 0x12
    case serverKeepAlive = 0x13
    case authenticationMethod = 0x15
    case authenticationData = 0x16
    case requestProblemInformation = 0x17
    case willDelayInterval = 0x18
    case requestResponseInformation = 0x19
    case responseInformation = 0x1A
    case serverReference = 0x1C
    case reasonString = 0x1F
    case receiveMaximum = 0x21
    case topicAliasMaximum = 0x22
    case topicAlias = 0x23
    case maximumQoS = 0x24
    case retainAvailable = 0x25
    case userProperty = 0x26
    case maximumPacketSize = 0x27
    case wildcardSubscriptionAvailable = 0x28
    case subscriptionIdentifierAvailable = 0x29
    case sharedSubscriptionAvailable = 0x2A

    public var valueType: MQTTPropertyValueType {
        switch self {
        case .payloadFormatIndicator, .requestProblemInformation, .requestResponseInformation, .maximumQoS,
            .retainAvailable, .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable,
            .sharedSubscriptionAvailable:
            return .byte
        case .serverKeepAlive, .receiveMaximum, .topicAliasMaximum, .topicAlias:
            return .twoByteInteger
        case .messageExpiryInterval, .sessionExpiryInterval, .willDelayInterval, .maximumPacketSize:
            return .fourByteInteger
        case .subscriptionIdentifier:
            return .variableByteInteger
        case .contentType, .responseTopic, .assignedClientIdentifier, .authenticationMethod,
            .responseInformation, .serverReference, .reasonString:
            return .utf8String
        case .correlationData, .authenticationData:
            return .binaryData
        case .userProperty:
            return .utf8StringPair
        }
    }

    /// Bit set of the contexts this property may appear in (5.0 §2.2.2.2 table 2-4).
    @usableFromInline var allowedContextBits: UInt16 {
        typealias C = MQTTPropertyContext
        func bits(_ contexts: C...) -> UInt16 { contexts.reduce(0) { $0 | $1.bit } }
        switch self {
        case .payloadFormatIndicator, .messageExpiryInterval, .contentType, .responseTopic, .correlationData:
            return C.publish.bit | C.will.bit
        case .subscriptionIdentifier: return C.publish.bit | C.subscribe.bit
        case .sessionExpiryInterval: return C.connect.bit | C.connAck.bit | C.disconnect.bit
        case .assignedClientIdentifier, .serverKeepAlive, .responseInformation, .maximumQoS, .retainAvailable,
            .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable, .sharedSubscriptionAvailable:
            return C.connAck.bit
        case .authenticationMethod, .authenticationData: return C.connect.bit | C.connAck.bit | C.auth.bit
        case .requestProblemInformation, .requestResponseInformation: return C.connect.bit
        case .willDelayInterval: return C.will.bit
        case .serverReference: return C.connAck.bit | C.disconnect.bit
        case .reasonString:
            return C.connAck.bit | C.pubAck.bit | C.pubRec.bit | C.pubRel.bit | C.pubComp.bit | C.subAck.bit
                | C.unsubAck.bit | C.disconnect.bit | C.auth.bit
        case .receiveMaximum, .topicAliasMaximum, .maximumPacketSize: return C.connect.bit | C.connAck.bit
        case .topicAlias: return C.publish.bit
        case .userProperty: return 0x3FFF  // every context
        }
    }

    /// Whether this property may appear in `context`.
    @inlinable public func isAllowed(in context: MQTTPropertyContext) -> Bool {
        allowedContextBits & context.bit != 0
    }

    /// Whether this property may appear more than once in `context`: User Property anywhere, Subscription
    /// Identifier only in PUBLISH (5.0 §3.3.2.3.8); every other property at most once.
    @inlinable public func mayRepeat(in context: MQTTPropertyContext) -> Bool {
        self == .userProperty || (self == .subscriptionIdentifier && context == .publish)
    }

    /// The specification's name, for messages.
    public var description: String {
        switch self {
        case .payloadFormatIndicator: return "Payload Format Indicator"
        case .messageExpiryInterval: return "Message Expiry Interval"
        case .contentType: return "Content Type"
        case .responseTopic: return "Response Topic"
        case .correlationData: return "Correlation Data"
        case .subscriptionIdentifier: return "Subscription Identifier"
        case .sessionExpiryInterval: return "Session Expiry Interval"
        case .assignedClientIdentifier: return "Assigned Client Identifier"
        case .serverKeepAlive: return "Server Keep Alive"
        case .authenticationMethod: return "Authentication Method"
        case .authenticationData: return "Authentication Data"
        case .requestProblemInformation: return "Request Problem Information"
        case .willDelayInterval: return "Will Delay Interval"
        case .requestResponseInformation: return "Request Response Information"
        case .responseInformation: return "Response Information"
        case .serverReference: return "Server Reference"
        case .reasonString: return "Reason String"
        case .receiveMaximum: return "Receive Maximum"
        case .topicAliasMaximum: return "Topic Alias Maximum"
        case .topicAlias: return "Topic Alias"
        case .maximumQoS: return "Maximum QoS"
        case .retainAvailable: return "Retain Available"
        case .userProperty: return "User Property"
        case .maximumPacketSize: return "Maximum Packet Size"
        case .wildcardSubscriptionAvailable: return "Wildcard Subscription Available"
        case .subscriptionIdentifierAvailable: return "Subscription Identifier Available"
        case .sharedSubscriptionAvailable: return "Shared Subscription Available"
        }
    }
}

/// One MQTT 5.0 property with its value (5.0 §2.2.2.2).
public enum MQTTProperty: Sendable, Hashable {
    case payloadFormatIndicator(UInt8)
    case messageExpiryInterval(UInt32)
    case contentType(String)
    case responseTopic(String)
    case correlationData([UInt8])
    case subscriptionIdentifier(UInt32)
    case sessionExpiryInterval(UInt32)
    case assignedClientIdentifier(String)
    case serverKeepAlive(UInt16)
    case authenticationMethod(String)
    case authenticationData([UInt8])
    case requestProblemInformation(UInt8)
    case willDelayInterval(UInt32)
    case requestResponseInformation(UInt8)
    case responseInformation(String)
    case serverReference(String)
    case reasonString(String)
    case receiveMaximum(UInt16)
    case topicAliasMaximum(UInt16)
    case topicAlias(UInt16)
    case maximumQoS(UInt8)
    case retainAvailable(UInt8)
    case userProperty(name: String, value: String)
    case maximumPacketSize(UInt32)
    case wildcardSubscriptionAvailable(UInt8)
    case subscriptionIdentifierAvailable(UInt8)
    case sharedSubscriptionAvailable(UInt8)

    public var identifier: MQTTPropertyIdentifier {
        switch self {
        case .payloadFormatIndicator: return .payloadFormatIndicator
        case .messageExpiryInterval: return .messageExpiryInterval
        case .contentType: return .contentType
        case .responseTopic: return .responseTopic
        case .correlationData: return .correlationData
        case .subscriptionIdentifier: return .subscriptionIdentifier
        case .sessionExpiryInterval: return .sessionExpiryInterval
        case .assignedClientIdentifier: return .assignedClientIdentifier
        case .serverKeepAlive: return .serverKeepAlive
        case .authenticationMethod: return .authenticationMethod
        case .authenticationData: return .authenticationData
        case .requestProblemInformation: return .requestProblemInformation
        case .willDelayInterval: return .willDelayInterval
        case .requestResponseInformation: return .requestResponseInformation
        case .responseInformation: return .responseInformation
        case .serverReference: return .serverReference
        case .reasonString: return .reasonString
        case .receiveMaximum: return .receiveMaximum
        case .topicAliasMaximum: return .topicAliasMaximum
        case .topicAlias: return .topicAlias
        case .maximumQoS: return .maximumQoS
        case .retainAvailable: return .retainAvailable
        case .userProperty: return .userProperty
        case .maximumPacketSize: return .maximumPacketSize
        case .wildcardSubscriptionAvailable: return .wildcardSubscriptionAvailable
        case .subscriptionIdentifierAvailable: return .subscriptionIdentifierAvailable
        case .sharedSubscriptionAvailable: return .sharedSubscriptionAvailable
        }
    }
}
