import MQTTCodec

/// Plain per-session counters: the session lives on one lane, so the engine reads them without a lock.
/// 32-bit counters keep an idle session small; at 4 billion a counter wraps (the engine, which also sees
/// every event, should aggregate into its own 64-bit lane totals).
public struct MQTTSessionStatistics: Sendable {
    /// PUBLISH written by `publish`, per QoS 0/1/2 (retransmissions not included).
    public var published: (UInt32, UInt32, UInt32) = (0, 0, 0)
    /// Flows completed: QoS 1 by PUBACK, QoS 2 by PUBCOMP (a failure reason code counts too: the flow ended).
    public var acknowledgedQoS1: UInt32 = 0
    public var acknowledgedQoS2: UInt32 = 0
    /// PUBLISH delivered to the engine, per QoS 0/1/2 (QoS 2 duplicates suppressed are not counted).
    public var received: (UInt32, UInt32, UInt32) = (0, 0, 0)
    /// Inbound PUBLISH carrying DUP=1.
    public var duplicatesReceived: UInt32 = 0
    /// Inbound QoS 2 PUBLISH not delivered because its packet identifier already awaited PUBREL (§4.3.3).
    public var duplicatesSuppressed: UInt32 = 0
    /// Missed deadlines per `MQTTAckKind` raw value.
    public var ackTimeouts: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0, 0)
    /// Acknowledgements for identifiers nobody waited for.
    public var unexpectedAcknowledgements: UInt32 = 0
    /// PUBLISH (DUP=1) and PUBREL written again after a reconnect with the session present.
    public var retransmittedPublishes: UInt32 = 0
    public var retransmittedReleases: UInt32 = 0
    /// In-flight messages given up (see `MQTTSessionEvent.publishDropped`).
    public var droppedPublishes: UInt32 = 0
    /// PINGREQ written.
    public var pingsSent: UInt32 = 0

    public init() {}

    public func published(_ qos: MQTTQoS) -> UInt32 {
        switch qos {
        case .atMostOnce: return published.0
        case .atLeastOnce: return published.1
        case .exactlyOnce: return published.2
        }
    }

    public func received(_ qos: MQTTQoS) -> UInt32 {
        switch qos {
        case .atMostOnce: return received.0
        case .atLeastOnce: return received.1
        case .exactlyOnce: return received.2
        }
    }

    public func ackTimeouts(_ kind: MQTTAckKind) -> UInt32 {
        switch kind {
        case .connAck: return ackTimeouts.0
        case .subAck: return ackTimeouts.1
        case .unsubAck: return ackTimeouts.2
        case .pubAck: return ackTimeouts.3
        case .pubRec: return ackTimeouts.4
        case .pubComp: return ackTimeouts.5
        case .pingResp: return ackTimeouts.6
        }
    }

    mutating func countPublished(_ qos: MQTTQoS) {
        switch qos {
        case .atMostOnce: published.0 &+= 1
        case .atLeastOnce: published.1 &+= 1
        case .exactlyOnce: published.2 &+= 1
        }
    }

    mutating func countReceived(_ qos: MQTTQoS) {
        switch qos {
        case .atMostOnce: received.0 &+= 1
        case .atLeastOnce: received.1 &+= 1
        case .exactlyOnce: received.2 &+= 1
        }
    }

    mutating func countTimeout(_ kind: MQTTAckKind) {
        switch kind {
        case .connAck: ackTimeouts.0 &+= 1
        case .subAck: ackTimeouts.1 &+= 1
        case .unsubAck: ackTimeouts.2 &+= 1
        case .pubAck: ackTimeouts.3 &+= 1
        case .pubRec: ackTimeouts.4 &+= 1
        case .pubComp: ackTimeouts.5 &+= 1
        case .pingResp: ackTimeouts.6 &+= 1
        }
    }
}
