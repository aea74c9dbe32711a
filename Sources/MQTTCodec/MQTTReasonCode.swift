/// Every MQTT 5.0 reason code (5.0 §2.4). Values shared by several names (0x00) have one case and
/// static aliases. MQTT 3.1.1 CONNACK return codes and SUBACK return codes map onto these cases.
public enum MQTTReasonCode: UInt8, Sendable, CaseIterable, CustomStringConvertible, Error {
    /// Success; also Normal disconnection and Granted QoS 0.
    case success = 0x00
    case grantedQoS1 = 0x01
    case grantedQoS2 = 0x02
    case disconnectWithWillMessage = 0x04
    case noMatchingSubscribers = 0x10
    case noSubscriptionExisted = 0x11
    case continueAuthentication = 0x18
    case reAuthenticate = 0x19
    case unspecifiedError = 0x80
    case malformedPacket = 0x81
    case protocolError = 0x82
    case implementationSpecificError = 0x83
    case unsupportedProtocolVersion = 0x84
    case clientIdentifierNotValid = 0x85
    case badUserNameOrPassword = 0x86
    case notAuthorized = 0x87
    case serverUnavailable = 0x88
    case serverBusy = 0x89
    case banned = 0x8A
    case serverShuttingDown = 0x8B
    case badAuthenticationMethod = 0x8C
    case keepAliveTimeout = 0x8D
    case sessionTakenOver = 0x8E
    case topicFilterInvalid = 0x8F
    case topicNameInvalid = 0x90
    case packetIdentifierInUse = 0x91
    case packetIdentifierNotFound = 0x92
    case receiveMaximumExceeded = 0x93
    case topicAliasInvalid = 0x94
    case packetTooLarge = 0x95
    case messageRateTooHigh = 0x96
    case quotaExceeded = 0x97
    case administrativeAction = 0x98
    case payloadFormatInvalid = 0x99
    case retainNotSupported = 0x9A
    case qosNotSupported = 0x9B
    case useAnotherServer = 0x9C
    case serverMoved = 0x9D
    case sharedSubscriptionsNotSupported = 0x9E
    case connectionRateExceeded = 0x9F
    case maximumConnectTime = 0xA0
    case subscriptionIdentifiersNotSupported = 0xA1
    case wildcardSubscriptionsNotSupported = 0xA2

    /// 0x00 in DISCONNECT.
    public static let normalDisconnection = MQTTReasonCode.success
    /// 0x00 in SUBACK.
    public static let grantedQoS0 = MQTTReasonCode.success

    /// Codes below 0x80 report success (5.0 §2.4).
    @inlinable public var isSuccess: Bool { rawValue < 0x80 }

    /// The SUBACK code granting `qos`.
    public static func granted(_ qos: MQTTQoS) -> MQTTReasonCode {
        switch qos {
        case .atMostOnce: return .success
        case .atLeastOnce: return .grantedQoS1
        case .exactlyOnce: return .grantedQoS2
        }
    }

    /// The specification's name of the code.
    public var description: String {
        switch self {
        case .success: return "Success"
        case .grantedQoS1: return "Granted QoS 1"
        case .grantedQoS2: return "Granted QoS 2"
        case .disconnectWithWillMessage: return "Disconnect with Will Message"
        case .noMatchingSubscribers: return "No matching subscribers"
        case .noSubscriptionExisted: return "No subscription existed"
        case .continueAuthentication: return "Continue authentication"
        case .reAuthenticate: return "Re-authenticate"
        case .unspecifiedError: return "Unspecified error"
        case .malformedPacket: return "Malformed Packet"
        case .protocolError: return "Protocol Error"
        case .implementationSpecificError: return "Implementation specific error"
        case .unsupportedProtocolVersion: return "Unsupported Protocol Version"
        case .clientIdentifierNotValid: return "Client Identifier not valid"
        case .badUserNameOrPassword: return "Bad User Name or Password"
        case .notAuthorized: return "Not authorized"
        case .serverUnavailable: return "Server unavailable"
        case .serverBusy: return "Server busy"
        case .banned: return "Banned"
        case .serverShuttingDown: return "Server shutting down"
        case .badAuthenticationMethod: return "Bad authentication method"
        case .keepAliveTimeout: return "Keep Alive timeout"
        case .sessionTakenOver: return "Session taken over"
        case .topicFilterInvalid: return "Topic Filter invalid"
        case .topicNameInvalid: return "Topic Name invalid"
        case .packetIdentifierInUse: return "Packet Identifier in use"
        case .packetIdentifierNotFound: return "Packet Identifier not found"
        case .receiveMaximumExceeded: return "Receive Maximum exceeded"
        case .topicAliasInvalid: return "Topic Alias invalid"
        case .packetTooLarge: return "Packet too large"
        case .messageRateTooHigh: return "Message rate too high"
        case .quotaExceeded: return "Quota exceeded"
        case .administrativeAction: return "Administrative action"
        case .payloadFormatInvalid: return "Payload format invalid"
        case .retainNotSupported: return "Retain not supported"
        case .qosNotSupported: return "QoS not supported"
        case .useAnotherServer: return "Use another server"
        case .serverMoved: return "Server moved"
        case .sharedSubscriptionsNotSupported: return "Shared Subscriptions not supported"
        case .connectionRateExceeded: return "Connection rate exceeded"
        case .maximumConnectTime: return "Maximum connect time"
        case .subscriptionIdentifiersNotSupported: return "Subscription Identifiers not supported"
        case .wildcardSubscriptionsNotSupported: return "Wildcard Subscriptions not supported"
        }
    }

    /// Whether this code may appear in a packet of `type` (5.0 §2.4 table 2-6).
    public func isAllowed(in type: MQTTPacketType) -> Bool {
        switch type {
        case .connAck:
            switch self {
            case .success, .unspecifiedError, .malformedPacket, .protocolError, .implementationSpecificError,
                .unsupportedProtocolVersion, .clientIdentifierNotValid, .badUserNameOrPassword, .notAuthorized,
                .serverUnavailable, .serverBusy, .banned, .badAuthenticationMethod, .topicNameInvalid,
                .packetTooLarge, .quotaExceeded, .payloadFormatInvalid, .retainNotSupported, .qosNotSupported,
                .useAnotherServer, .serverMoved, .connectionRateExceeded:
                return true
            default: return false
            }
        case .pubAck, .pubRec:
            switch self {
            case .success, .noMatchingSubscribers, .unspecifiedError, .implementationSpecificError,
                .notAuthorized, .topicNameInvalid, .packetIdentifierInUse, .quotaExceeded, .payloadFormatInvalid:
                return true
            default: return false
            }
        case .pubRel, .pubComp:
            return self == .success || self == .packetIdentifierNotFound
        case .subAck:
            switch self {
            case .success, .grantedQoS1, .grantedQoS2, .unspecifiedError, .implementationSpecificError,
                .notAuthorized, .topicFilterInvalid, .packetIdentifierInUse, .quotaExceeded,
                .sharedSubscriptionsNotSupported, .subscriptionIdentifiersNotSupported,
                .wildcardSubscriptionsNotSupported:
                return true
            default: return false
            }
        case .unsubAck:
            switch self {
            case .success, .noSubscriptionExisted, .unspecifiedError, .implementationSpecificError,
                .notAuthorized, .topicFilterInvalid, .packetIdentifierInUse:
                return true
            default: return false
            }
        case .disconnect:
            switch self {
            case .grantedQoS1, .grantedQoS2, .noMatchingSubscribers, .noSubscriptionExisted,
                .continueAuthentication, .reAuthenticate, .unsupportedProtocolVersion, .clientIdentifierNotValid,
                .badUserNameOrPassword, .serverUnavailable, .banned, .badAuthenticationMethod,
                .packetIdentifierInUse, .packetIdentifierNotFound, .connectionRateExceeded:
                return false
            default: return true
            }
        case .auth:
            return self == .success || self == .continueAuthentication || self == .reAuthenticate
        case .connect, .publish, .subscribe, .unsubscribe, .pingReq, .pingResp:
            return false
        }
    }
}

/// MQTT 3.1/3.1.1 CONNACK return codes (3.1.1 §3.2.2.3), mapped to and from MQTT 5 reason codes so the
/// rest of the program handles one type.
public enum MQTTConnectReturnCode: UInt8, Sendable, CaseIterable {
    case accepted = 0
    case unacceptableProtocolVersion = 1
    case identifierRejected = 2
    case serverUnavailable = 3
    case badUserNameOrPassword = 4
    case notAuthorized = 5

    public var reasonCode: MQTTReasonCode {
        switch self {
        case .accepted: return .success
        case .unacceptableProtocolVersion: return .unsupportedProtocolVersion
        case .identifierRejected: return .clientIdentifierNotValid
        case .serverUnavailable: return .serverUnavailable
        case .badUserNameOrPassword: return .badUserNameOrPassword
        case .notAuthorized: return .notAuthorized
        }
    }

    /// The nearest 3.1.1 return code for an MQTT 5 reason code (5.0 codes without a 3.1.1 twin become
    /// "server unavailable", the generic refusal).
    public init(_ reasonCode: MQTTReasonCode) {
        switch reasonCode {
        case .success: self = .accepted
        case .unsupportedProtocolVersion: self = .unacceptableProtocolVersion
        case .clientIdentifierNotValid: self = .identifierRejected
        case .badUserNameOrPassword: self = .badUserNameOrPassword
        case .notAuthorized, .banned: self = .notAuthorized
        default: self = .serverUnavailable
        }
    }
}
