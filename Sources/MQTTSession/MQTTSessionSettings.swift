import MQTTCodec

/// How long the session waits for each awaited acknowledgement, in nanoseconds of the engine's monotonic clock.
public struct MQTTAckTimeouts: Sendable, Hashable {
    public var connAck: UInt64
    public var subAck: UInt64
    public var unsubAck: UInt64
    public var pubAck: UInt64
    public var pubRec: UInt64
    public var pubComp: UInt64
    public var pingResp: UInt64

    public static let second: UInt64 = 1_000_000_000

    /// Defaults: CONNACK 12 s, every other acknowledgement 15 s.
    public init(connAck: UInt64 = 12 * second, subAck: UInt64 = 15 * second, unsubAck: UInt64 = 15 * second,
                pubAck: UInt64 = 15 * second, pubRec: UInt64 = 15 * second, pubComp: UInt64 = 15 * second,
                pingResp: UInt64 = 15 * second) {
        self.connAck = connAck
        self.subAck = subAck
        self.unsubAck = unsubAck
        self.pubAck = pubAck
        self.pubRec = pubRec
        self.pubComp = pubComp
        self.pingResp = pingResp
    }

    @inlinable public func timeout(for kind: MQTTAckKind) -> UInt64 {
        switch kind {
        case .connAck: return connAck
        case .subAck: return subAck
        case .unsubAck: return unsubAck
        case .pubAck: return pubAck
        case .pubRec: return pubRec
        case .pubComp: return pubComp
        case .pingResp: return pingResp
        }
    }
}

/// What the session does after it reports a missed acknowledgement deadline.
public enum MQTTAckTimeoutPolicy: Sendable, Hashable {
    /// Emit `.closeConnection` (cause `.ackTimeout`): the engine closes the socket and may reconnect; a present
    /// session then retransmits what was not acknowledged (MQTT 5.0 §4.4).
    case close
    /// Keep the connection and keep waiting: a late acknowledgement is still matched and reported.
    case keepWaiting
}

/// Settings shared by many sessions (one instance per client group of a scenario): a final class so each
/// session holds one 8-byte reference instead of a copy of the strings, arrays and limits below.
/// Immutable, hence `Sendable` and safe to share across lanes.
public final class MQTTSessionSettings: Sendable {
    public let version: MQTTProtocolVersion
    /// Clean Session (3.1/3.1.1) or Clean Start (5.0), §3.1.2.4.
    public let cleanStart: Bool
    /// Keep Alive in seconds (§3.1.2.10); 0 turns PINGREQ off. A 5.0 Server Keep Alive replaces it.
    public let keepAliveSeconds: UInt16
    /// 5.0 Session Expiry Interval in seconds (§3.1.2.11.2); 0 is not sent. Ignored before 5.0.
    public let sessionExpiryInterval: UInt32
    public let username: String?
    public let password: [UInt8]?
    /// Will message; in 5.0 its `properties` carry Will Delay Interval etc. (§3.1.3.2).
    public let will: MQTTWill?
    /// 5.0 Receive Maximum the client advertises (§3.1.2.11.3): the most inbound QoS 1/2 PUBLISH the broker
    /// may have unacknowledged. 65535 is the protocol default and is not sent.
    public let receiveMaximum: UInt16
    /// 5.0 Maximum Packet Size the client advertises (§3.1.2.11.4) and accepts; nil: not sent, no limit.
    public let maximumPacketSize: UInt32?
    /// 5.0 Topic Alias Maximum the client accepts from the broker (§3.1.2.11.5); 0 refuses inbound aliases.
    public let topicAliasMaximum: UInt16
    /// Extra CONNECT properties (5.0), e.g. user properties; the ones above are added by the session.
    public let connectProperties: [MQTTProperty]
    /// Most outbound QoS 1/2 messages awaiting acknowledgement. In 5.0 the broker's Receive Maximum also
    /// caps it (the smaller wins, §4.9).
    public let inFlightWindow: UInt16
    /// Assign outbound topic aliases (5.0 §3.3.2.3.4) when the broker's Topic Alias Maximum is above 0.
    public let usesOutgoingTopicAliases: Bool
    /// When a CONNACK says the session is not present, re-send the SUBSCRIBEs made so far.
    public let resubscribesWhenSessionLost: Bool
    /// Keep a copy of each in-flight QoS 1/2 PUBLISH so a present session can retransmit it with DUP=1
    /// (§4.4). When false no copy is made and those messages are reported as dropped at reconnect.
    public let keepsPublishesForRetransmission: Bool
    public let timeouts: MQTTAckTimeouts
    public let onAckTimeout: MQTTAckTimeoutPolicy

    public init(version: MQTTProtocolVersion, cleanStart: Bool = true, keepAliveSeconds: UInt16 = 60,
                sessionExpiryInterval: UInt32 = 0, username: String? = nil, password: [UInt8]? = nil,
                will: MQTTWill? = nil, receiveMaximum: UInt16 = 65535, maximumPacketSize: UInt32? = nil,
                topicAliasMaximum: UInt16 = 0, connectProperties: [MQTTProperty] = [],
                inFlightWindow: UInt16 = 32, usesOutgoingTopicAliases: Bool = false,
                resubscribesWhenSessionLost: Bool = true, keepsPublishesForRetransmission: Bool = true,
                timeouts: MQTTAckTimeouts = MQTTAckTimeouts(), onAckTimeout: MQTTAckTimeoutPolicy = .close) {
        self.version = version
        self.cleanStart = cleanStart
        self.keepAliveSeconds = keepAliveSeconds
        self.sessionExpiryInterval = sessionExpiryInterval
        self.username = username
        self.password = password
        self.will = will
        self.receiveMaximum = max(receiveMaximum, 1)  // 0 is a protocol error (5.0 §3.1.2.11.3)
        self.maximumPacketSize = maximumPacketSize
        self.topicAliasMaximum = topicAliasMaximum
        self.connectProperties = connectProperties
        self.inFlightWindow = max(inFlightWindow, 1)
        self.usesOutgoingTopicAliases = usesOutgoingTopicAliases
        self.resubscribesWhenSessionLost = resubscribesWhenSessionLost
        self.keepsPublishesForRetransmission = keepsPublishesForRetransmission
        self.timeouts = timeouts
        self.onAckTimeout = onAckTimeout
    }

    /// The largest packet the engine's decoder should accept for this session.
    public var decoderMaximumPacketSize: Int {
        guard let maximumPacketSize, version.hasProperties else { return MQTTDecoder.protocolMaximumPacketSize }
        return Int(maximumPacketSize)
    }

    /// The CONNECT this session sends (allocates; once per connection attempt).
    func connectPacket(clientID: String) -> MQTTConnect {
        var properties: [MQTTProperty] = []
        if version.hasProperties {
            // 5.0 §3.1.2.11: only values that differ from the protocol defaults are sent.
            if sessionExpiryInterval != 0 { properties.append(.sessionExpiryInterval(sessionExpiryInterval)) }
            if receiveMaximum != 65535 { properties.append(.receiveMaximum(receiveMaximum)) }
            if let maximumPacketSize { properties.append(.maximumPacketSize(maximumPacketSize)) }
            if topicAliasMaximum != 0 { properties.append(.topicAliasMaximum(topicAliasMaximum)) }
            properties.append(contentsOf: connectProperties)
        }
        var will = self.will
        if !version.hasProperties { will?.properties = [] }
        return MQTTConnect(version: version, clientID: clientID, cleanStart: cleanStart, keepAlive: keepAliveSeconds,
                           username: username, password: password, will: will, properties: properties)
    }
}
