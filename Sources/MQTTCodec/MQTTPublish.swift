/// PUBLISH (3.1.1 §3.3, 5.0 §3.3): the general, allocating form. The engine's hot path uses
/// `MQTTByteBuffer.writePublish` and `MQTTPacketView` instead.
public struct MQTTPublish: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool
    public var dup: Bool
    /// Packet Identifier (§3.3.2.2); only on the wire for QoS 1 and 2, where it must not be 0. Keep 0 for QoS 0.
    public var packetID: UInt16
    public var properties: [MQTTProperty]

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
                dup: Bool = false, packetID: UInt16 = 0, properties: [MQTTProperty] = []) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.dup = dup
        self.packetID = packetID
        self.properties = properties
    }
}

/// PUBACK, PUBREC, PUBREL and PUBCOMP share one shape (5.0 §3.4-§3.7): a packet identifier and, in 5.0,
/// an optional reason code and properties. The packet type is the `MQTTPacket` case.
public struct MQTTPubAck: Sendable, Hashable {
    public var packetID: UInt16
    /// Always `.success` in 3.1/3.1.1 (no reason code on the wire).
    public var reasonCode: MQTTReasonCode
    public var properties: [MQTTProperty]

    public init(packetID: UInt16, reasonCode: MQTTReasonCode = .success, properties: [MQTTProperty] = []) {
        self.packetID = packetID
        self.reasonCode = reasonCode
        self.properties = properties
    }
}

public typealias MQTTPubRec = MQTTPubAck
public typealias MQTTPubRel = MQTTPubAck
public typealias MQTTPubComp = MQTTPubAck
