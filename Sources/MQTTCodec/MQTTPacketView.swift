/// A decoded packet's shape without copying: type, flags and the absolute byte ranges of its fields inside
/// the decoder's buffer. PUBLISH, the four publish acknowledgements, PINGREQ and PINGRESP are fully
/// validated when the view is made; other types carry only `bodyRange` and are validated and decoded by
/// `MQTTDecoder.packet(for:)`. Ranges stay valid until the decoder's buffer is next written (`feed`).
public struct MQTTPacketView: Sendable, Hashable {
    public let type: MQTTPacketType
    /// Low nibble of the first byte (5.0 §2.1.3).
    public let flags: UInt8
    /// The whole packet, fixed header included.
    public let packetRange: Range<Int>
    /// Everything after the fixed header (the remaining length's bytes).
    public let bodyRange: Range<Int>
    /// PUBLISH topic name bytes, without the length prefix; empty otherwise.
    public let topicRange: Range<Int>
    /// 5.0 property list bytes (without the Property Length) of PUBLISH and the acks; empty otherwise.
    public let propertiesRange: Range<Int>
    /// PUBLISH application payload; empty otherwise.
    public let payloadRange: Range<Int>
    /// PUBLISH (QoS 1/2) and acknowledgement packet identifier; 0 otherwise.
    public let packetID: UInt16
    /// Acknowledgement reason code (Success when absent or before 5.0).
    public let reasonCode: MQTTReasonCode
    /// Bit per property identifier present (PUBLISH and acks, 5.0), e.g. to spot a Topic Alias.
    public let propertyBits: UInt64

    @inlinable public var qos: MQTTQoS { MQTTQoS(rawValue: (flags >> 1) & 0b11) ?? .atMostOnce }
    @inlinable public var retain: Bool { type == .publish && flags & 1 != 0 }
    @inlinable public var dup: Bool { type == .publish && flags & 0b1000 != 0 }
    @inlinable public var byteCount: Int { packetRange.count }

    /// Whether the packet carries property `identifier` (PUBLISH and acks).
    @inlinable public func hasProperty(_ identifier: MQTTPropertyIdentifier) -> Bool {
        propertyBits & (1 << UInt64(identifier.rawValue)) != 0
    }
}
