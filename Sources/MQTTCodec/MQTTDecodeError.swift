/// Why bytes are not a valid MQTT packet. Each case has an exact `message` and the MQTT 5 `reasonCode` a
/// receiver sends in its DISCONNECT (or CONNACK): 0x81 Malformed Packet, 0x82 Protocol Error,
/// 0x95 Packet too large, 0x84 Unsupported Protocol Version.
public enum MQTTDecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A variable byte integer has a continuation bit on its fourth byte (5.0 §1.5.5).
    case variableByteIntegerTooLong(field: String)
    /// The packet (fixed header included) is larger than the configured maximum (5.0 §3.1.2.11.4).
    case packetTooLarge(size: Int, maximum: Int)
    /// Packet type 0 (or 15 before 5.0) is reserved (3.1.1 §2.2.1).
    case reservedPacketType(UInt8, version: MQTTProtocolVersion)
    /// Fixed-header flags differ from those the type requires (5.0 §2.1.3).
    case invalidFixedHeaderFlags(MQTTPacketType, flags: UInt8, required: UInt8)
    /// PUBLISH QoS bits are 3, or a subscription option asks for QoS 3 (5.0 §3.3.1.2, §3.8.3.1).
    case invalidQoS(MQTTPacketType)
    /// DUP set on a QoS 0 PUBLISH (5.0 §3.3.1.1).
    case dupWithQoS0
    /// A Packet Identifier of 0 (5.0 §2.2.1).
    case packetIdentifierZero(MQTTPacketType)
    /// A string field is not well-formed UTF-8 (5.0 §1.5.4).
    case invalidUTF8(field: String)
    /// A string field contains U+0000 (5.0 §1.5.4).
    case nullCharacter(field: String)
    /// A PUBLISH or Will topic contains '+' or '#' (5.0 §3.3.2.1).
    case wildcardInTopicName(field: String, wildcard: Character)
    /// A PUBLISH topic is empty without a Topic Alias (5.0 §3.3.2.1; always an error before 5.0), or a Will
    /// Topic is empty (5.0 §3.1.3.3).
    case emptyTopicName(field: String)
    /// A property identifier that MQTT 5.0 does not define (5.0 §2.2.2.2).
    case unknownProperty(UInt8, context: MQTTPropertyContext)
    /// A property not valid in this packet (5.0 §2.2.2.2: a Malformed Packet).
    case propertyNotAllowed(MQTTPropertyIdentifier, context: MQTTPropertyContext)
    /// A property that may appear once appears again (5.0 §3.x.2.x: a Protocol Error).
    case duplicateProperty(MQTTPropertyIdentifier, context: MQTTPropertyContext)
    /// A property value outside its allowed range, e.g. Receive Maximum 0.
    case invalidPropertyValue(MQTTPropertyIdentifier, value: UInt32)
    /// A field runs past the end of the packet's remaining length.
    case truncated(MQTTPacketType, field: String)
    /// Bytes are left after the packet's last field: the remaining length disagrees with the content.
    case trailingBytes(MQTTPacketType, count: Int)
    /// CONNECT with a protocol name or level this codec does not speak (5.0 §3.1.2.1-2).
    case unsupportedProtocol(name: String, level: UInt8)
    /// CONNECT flags break a rule: reserved bit set, will QoS/retain without will, password without user name.
    case invalidConnectFlags(UInt8, reason: String)
    /// A reason code not defined for this packet type (5.0 §2.4).
    case invalidReasonCode(UInt8, MQTTPacketType)
    /// CONNACK acknowledge flags have reserved bits, or session present with a failure code (5.0 §3.2.2.1).
    case invalidConnAckFlags(UInt8)
    /// Subscription options with reserved bits set or Retain Handling 3 (5.0 §3.8.3.1).
    case invalidSubscriptionOptions(UInt8)
    /// SUBSCRIBE or UNSUBSCRIBE with no topic filter (5.0 §3.8.3, §3.10.3).
    case noTopicFilters(MQTTPacketType)
    /// A packet the decoder's version does not have, e.g. AUTH in 3.1.1.
    case packetNotInVersion(MQTTPacketType, MQTTProtocolVersion)

    /// The MQTT 5 reason code for this error.
    public var reasonCode: MQTTReasonCode {
        switch self {
        case .packetTooLarge: return .packetTooLarge
        case .unsupportedProtocol: return .unsupportedProtocolVersion
        case .packetIdentifierZero, .wildcardInTopicName, .emptyTopicName, .duplicateProperty,
            .invalidPropertyValue, .noTopicFilters, .dupWithQoS0:
            return .protocolError
        case .variableByteIntegerTooLong, .reservedPacketType, .invalidFixedHeaderFlags, .invalidQoS,
            .invalidUTF8, .nullCharacter, .unknownProperty, .propertyNotAllowed, .truncated, .trailingBytes,
            .invalidConnectFlags, .invalidReasonCode, .invalidConnAckFlags, .invalidSubscriptionOptions,
            .packetNotInVersion:
            return .malformedPacket
        }
    }

    /// What is wrong, in one sentence.
    public var message: String {
        switch self {
        case .variableByteIntegerTooLong(let field): return "\(field) exceeds 4 bytes"
        case .packetTooLarge(let size, let maximum):
            return "packet of \(size) bytes exceeds the maximum packet size of \(maximum) bytes"
        case .reservedPacketType(let type, let version): return "packet type \(type) is reserved in \(version)"
        case .invalidFixedHeaderFlags(let type, let flags, let required):
            return "\(type) fixed header flags are \(binary(flags, width: 4)), must be \(binary(required, width: 4))"
        case .invalidQoS(let type): return "\(type) QoS is 3"
        case .dupWithQoS0: return "PUBLISH has DUP set with QoS 0"
        case .packetIdentifierZero(let type): return "\(type) packet identifier is 0"
        case .invalidUTF8(let field): return "\(field) is not valid UTF-8"
        case .nullCharacter(let field): return "\(field) contains U+0000"
        case .wildcardInTopicName(let field, let wildcard): return "\(field) contains wildcard '\(wildcard)'"
        case .emptyTopicName(let field): return "\(field) is empty"
        case .unknownProperty(let id, let context):
            return "unknown property identifier 0x\(hex(id)) in \(context)"
        case .propertyNotAllowed(let id, let context): return "property \(id) is not allowed in \(context)"
        case .duplicateProperty(let id, let context): return "property \(id) appears more than once in \(context)"
        case .invalidPropertyValue(let id, let value): return "property \(id) has invalid value \(value)"
        case .truncated(let type, let field): return "\(type) \(field) is truncated"
        case .trailingBytes(let type, let count):
            return "\(type) has \(count) byte\(count == 1 ? "" : "s") after its last field"
        case .unsupportedProtocol(let name, let level):
            return "CONNECT protocol name \"\(name)\" level \(level) is not supported"
        case .invalidConnectFlags(let flags, let reason): return "CONNECT flags \(binary(flags)): \(reason)"
        case .invalidReasonCode(let code, let type): return "reason code 0x\(hex(code)) is not valid in \(type)"
        case .invalidConnAckFlags(let flags): return "CONNACK acknowledge flags \(binary(flags)) are invalid"
        case .invalidSubscriptionOptions(let options):
            return "subscription options \(binary(options)) have reserved bits or Retain Handling 3"
        case .noTopicFilters(let type): return "\(type) has no topic filter"
        case .packetNotInVersion(let type, let version): return "\(type) does not exist in \(version)"
        }
    }

    public var description: String { message }
}

private func hex(_ byte: UInt8) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
}

private func binary(_ bits: UInt8, width: Int = 8) -> String {
    var text = "0b"
    for shift in stride(from: width - 1, through: 0, by: -1) { text.append((bits >> UInt8(shift)) & 1 == 1 ? "1" : "0") }
    return text
}
