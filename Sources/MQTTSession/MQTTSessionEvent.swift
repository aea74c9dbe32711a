import MQTTCodec

/// Every acknowledgement the session waits for, with its own deadline.
public enum MQTTAckKind: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case connAck, subAck, unsubAck, pubAck, pubRec, pubComp, pingResp

    public var description: String {
        switch self {
        case .connAck: return "CONNACK"
        case .subAck: return "SUBACK"
        case .unsubAck: return "UNSUBACK"
        case .pubAck: return "PUBACK"
        case .pubRec: return "PUBREC"
        case .pubComp: return "PUBCOMP"
        case .pingResp: return "PINGRESP"
        }
    }
}

/// An acknowledgement of one of our PUBLISHes, with everything needed to record its latency twice: from the
/// intended send time (no coordinated omission) and from the actual send.
public struct MQTTPublishAcknowledgement: Sendable, Hashable {
    /// `.pubAck` (QoS 1 done), `.pubRec` (QoS 2 first step; PUBREL was sent) or `.pubComp` (QoS 2 done).
    public var kind: MQTTAckKind
    public var packetID: UInt16
    /// When the engine meant to send the message and when the session first wrote it (monotonic ns).
    public var intendedAt: UInt64
    public var sentAt: UInt64
    /// The `now` of the call that delivered the acknowledgement.
    public var receivedAt: UInt64
    /// The engine's opaque tag (e.g. stream id and sequence number).
    public var tag: UInt64
    /// 5.0 reason code of the acknowledgement (Success before 5.0). A code >= 0x80 ends the flow.
    public var reasonCode: MQTTReasonCode

    public init(kind: MQTTAckKind, packetID: UInt16, intendedAt: UInt64, sentAt: UInt64, receivedAt: UInt64,
                tag: UInt64, reasonCode: MQTTReasonCode) {
        self.kind = kind
        self.packetID = packetID
        self.intendedAt = intendedAt
        self.sentAt = sentAt
        self.receivedAt = receivedAt
        self.tag = tag
        self.reasonCode = reasonCode
    }
}

/// An in-flight message the session gave up: the broker's session is gone (CONNACK Session Present 0) or
/// the PUBLISH was not kept for retransmission.
public struct MQTTDroppedPublish: Sendable, Hashable {
    public var packetID: UInt16
    public var qos: MQTTQoS
    /// The flow step it was waiting for.
    public var awaiting: MQTTAckKind
    public var intendedAt: UInt64
    public var tag: UInt64

    public init(packetID: UInt16, qos: MQTTQoS, awaiting: MQTTAckKind, intendedAt: UInt64, tag: UInt64) {
        self.packetID = packetID
        self.qos = qos
        self.awaiting = awaiting
        self.intendedAt = intendedAt
        self.tag = tag
    }
}

/// A missed acknowledgement deadline, reported once.
public struct MQTTAckTimeout: Sendable, Hashable {
    public var kind: MQTTAckKind
    /// Packet identifier for PUBACK/PUBREC/PUBCOMP/SUBACK/UNSUBACK; 0 for CONNACK and PINGRESP.
    public var packetID: UInt16
    /// The engine's tag for publish acknowledgements; 0 otherwise.
    public var tag: UInt64
    /// When the awaited packet (CONNECT, SUBSCRIBE, PUBLISH, PUBREL, PINGREQ) was written.
    public var sentAt: UInt64
    /// The deadline that passed.
    public var deadline: UInt64

    public init(kind: MQTTAckKind, packetID: UInt16, tag: UInt64, sentAt: UInt64, deadline: UInt64) {
        self.kind = kind
        self.packetID = packetID
        self.tag = tag
        self.sentAt = sentAt
        self.deadline = deadline
    }
}

/// Why the session wants its connection closed.
public enum MQTTCloseCause: Sendable, Hashable {
    /// A deadline passed and the policy is `.close`.
    case ackTimeout(MQTTAckKind)
    /// The broker's bytes are not a valid packet (an `MQTTDecodeError`).
    case malformedPacket
    /// A valid packet that breaks the protocol's rules for a client, e.g. a second CONNACK.
    case protocolViolation
}

/// The reason the session asks the engine to close the connection: `message` is one clear sentence,
/// `reasonCode` is the MQTT 5 code (also written in the DISCONNECT the session sent, in 5.0).
public struct MQTTSessionCloseReason: Sendable, Hashable, CustomStringConvertible {
    public var cause: MQTTCloseCause
    public var reasonCode: MQTTReasonCode
    public var message: String

    public init(cause: MQTTCloseCause, reasonCode: MQTTReasonCode, message: String) {
        self.cause = cause
        self.reasonCode = reasonCode
        self.message = message
    }

    public var description: String { "\(message) (\(reasonCode))" }
}

/// What the session reports to the engine. Every case but `.messageReceived` (delivered through
/// `MQTTSessionEventHandler.messageReceived`) goes through `MQTTSessionEventHandler.sessionEvent`.
public enum MQTTSessionEvent: Sendable, Hashable {
    /// CONNACK accepted. Retransmissions (present session) or re-subscriptions (lost session) were written.
    case connected(sessionPresent: Bool)
    /// CONNACK refused (3.1.1 return codes mapped to their 5.0 reason codes). The engine closes the socket.
    case connectionRefused(MQTTReasonCode, reasonString: String?)
    /// PUBACK, PUBREC or PUBCOMP of one of our messages.
    case publishAcknowledged(MQTTPublishAcknowledgement)
    /// An in-flight message the session will not complete; the engine counts it.
    case publishDropped(MQTTDroppedPublish)
    /// SUBACK: one result per filter, in order (Granted QoS 0-2, or a failure code >= 0x80).
    case subscribed(packetID: UInt16, results: [MQTTReasonCode])
    /// One filter of a SUBACK granted less than asked: a lower QoS, or a failure code (>= 0x80). Reported
    /// before `.subscribed`, once per such filter, so a downgrade is counted rather than passed silently.
    case subscriptionNotGranted(filter: String, requested: MQTTQoS, result: MQTTReasonCode)
    /// PUBACK for a QoS 2 PUBLISH still waiting for its PUBREC: the broker ran the message as QoS 1 (RabbitMQ
    /// downgrades QoS 2 so). The message is out of the window and not counted as acknowledged at QoS 2.
    case publishAcknowledgedAtLowerQoS(MQTTPublishAcknowledgement)
    /// UNSUBACK: one result per filter (always Success before 5.0, which has no codes).
    case unsubscribed(packetID: UInt16, results: [MQTTReasonCode])
    /// A SUBSCRIBE or UNSUBSCRIBE whose acknowledgement will not come: the connection was lost first.
    case requestAbandoned(MQTTAckKind, packetID: UInt16)
    /// PINGRESP for the PINGREQ written at `sentAt`.
    case pingResponse(sentAt: UInt64, receivedAt: UInt64)
    /// A deadline passed (once per awaited packet). With `.close` a `.closeConnection` follows.
    case ackTimeout(MQTTAckTimeout)
    /// An acknowledgement for a packet identifier the session is not waiting for: counted, then ignored
    /// (a late duplicate is harmless to a load generator; closing would distort the run).
    case unexpectedAcknowledgement(MQTTPacketType, packetID: UInt16)
    /// 5.0 DISCONNECT from the broker. The engine closes the socket.
    case serverDisconnected(MQTTReasonCode, reasonString: String?)
    /// The session wants the connection closed (any DISCONNECT it owed is already in the output).
    case closeConnection(MQTTSessionCloseReason)

    /// Whether the engine must close the socket (then call `connectionLost`).
    public var closesConnection: Bool {
        switch self {
        case .connectionRefused, .serverDisconnected, .closeConnection: return true
        default: return false
        }
    }
}

/// A PUBLISH from the broker. Ranges are absolute offsets in the bytes given to `receive`; `topic` and
/// `payload` given beside it to the handler are those bytes (valid only during the call). When the broker
/// used a 5.0 topic alias with an empty topic, `topicRange` is empty, `topicAlias` is set and the handler's
/// `topic` is the resolved name.
public struct MQTTReceivedMessage: Sendable, Hashable {
    public var topicRange: Range<Int>
    public var payloadRange: Range<Int>
    public var qos: MQTTQoS
    public var retain: Bool
    public var dup: Bool
    public var packetID: UInt16
    /// 5.0 Topic Alias the PUBLISH carried; 0 when none.
    public var topicAlias: UInt16

    public init(topicRange: Range<Int>, payloadRange: Range<Int>, qos: MQTTQoS, retain: Bool, dup: Bool,
                packetID: UInt16, topicAlias: UInt16) {
        self.topicRange = topicRange
        self.payloadRange = payloadRange
        self.qos = qos
        self.retain = retain
        self.dup = dup
        self.packetID = packetID
        self.topicAlias = topicAlias
    }
}

/// The engine's receiver of session events. The session's methods are generic over it and take it `inout`,
/// so calls are specialized and inlined, nothing is boxed, and one call may report any number of events
/// without building an array (a returned `[Event]` would allocate on every packet).
public protocol MQTTSessionEventHandler {
    mutating func sessionEvent(_ event: MQTTSessionEvent)
    /// `topic` and `payload` are borrowed: copy or parse them before returning.
    mutating func messageReceived(
        _ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer)
}

/// Result of `MQTTClientSession.publish`: the engine decides whether a refused message is queued or dropped.
public enum MQTTPublishResult: Sendable, Hashable {
    /// Written to the output; QoS 1/2 carry their packet identifier (0 for QoS 0).
    case sent(packetID: UInt16)
    /// The in-flight window is full: retry after an acknowledgement.
    case windowFull
    /// No accepted connection (before CONNACK, after a close or a lost connection).
    case notConnected
    /// Larger than the broker's 5.0 Maximum Packet Size (§3.1.2.11.4: must not be sent).
    case packetTooLarge(size: Int, maximum: Int)
    /// Above the broker's 5.0 Maximum QoS (§3.2.2.3.4).
    case qosNotSupported(maximum: MQTTQoS)
}

/// Result of `subscribe`/`unsubscribe`.
public enum MQTTRequestResult: Sendable, Hashable {
    case sent(packetID: UInt16)
    case notConnected
    /// No topic filter was given.
    case empty
}
