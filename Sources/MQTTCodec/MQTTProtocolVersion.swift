/// The protocol level carried in CONNECT (MQTT 3.1 §3.1, 3.1.1 §3.1.2.2, 5.0 §3.1.2.2).
public enum MQTTProtocolVersion: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// MQTT 3.1: protocol name "MQIsdp", level 3. Same packets as 3.1.1 except CONNECT's name.
    case v3_1 = 3
    /// MQTT 3.1.1: protocol name "MQTT", level 4.
    case v3_1_1 = 4
    /// MQTT 5.0: protocol name "MQTT", level 5; adds properties, reason codes and AUTH.
    case v5 = 5

    /// The protocol name CONNECT carries (3.1.1 §3.1.2.1).
    public var protocolName: String { self == .v3_1 ? "MQIsdp" : "MQTT" }

    /// Whether packets carry a property section and reason codes (only 5.0).
    @inlinable public var hasProperties: Bool { self == .v5 }

    public var description: String {
        switch self {
        case .v3_1: return "MQTT 3.1"
        case .v3_1_1: return "MQTT 3.1.1"
        case .v5: return "MQTT 5.0"
        }
    }
}

/// Quality of service of a PUBLISH or a subscription (3.1.1 §4.3, 5.0 §4.3).
public enum MQTTQoS: UInt8, Sendable, CaseIterable, Comparable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2

    public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Control packet types, the high nibble of the first byte (3.1.1 §2.2.1, 5.0 §2.1.2).
public enum MQTTPacketType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case connect = 1
    case connAck = 2
    case publish = 3
    case pubAck = 4
    case pubRec = 5
    case pubRel = 6
    case pubComp = 7
    case subscribe = 8
    case subAck = 9
    case unsubscribe = 10
    case unsubAck = 11
    case pingReq = 12
    case pingResp = 13
    case disconnect = 14
    /// MQTT 5.0 only; type 15 is reserved in 3.1.1.
    case auth = 15

    /// The fixed-header flags every packet but PUBLISH must carry (5.0 §2.1.3, 3.1.1 §2.2.2):
    /// 0b0010 for PUBREL, SUBSCRIBE and UNSUBSCRIBE, 0 otherwise. PUBLISH flags are DUP/QoS/RETAIN.
    @inlinable public var requiredFlags: UInt8? {
        switch self {
        case .publish: return nil
        case .pubRel, .subscribe, .unsubscribe: return 0b0010
        default: return 0
        }
    }

    /// The name the specification uses, for messages.
    public var description: String {
        switch self {
        case .connect: return "CONNECT"
        case .connAck: return "CONNACK"
        case .publish: return "PUBLISH"
        case .pubAck: return "PUBACK"
        case .pubRec: return "PUBREC"
        case .pubRel: return "PUBREL"
        case .pubComp: return "PUBCOMP"
        case .subscribe: return "SUBSCRIBE"
        case .subAck: return "SUBACK"
        case .unsubscribe: return "UNSUBSCRIBE"
        case .unsubAck: return "UNSUBACK"
        case .pingReq: return "PINGREQ"
        case .pingResp: return "PINGRESP"
        case .disconnect: return "DISCONNECT"
        case .auth: return "AUTH"
        }
    }
}
