import MQTTCodec

/// Acks a client waits for under a deadline; a missed deadline is an ack timeout of that kind.
public enum AckKind: Int, CaseIterable, Sendable {
    case connack, suback, unsuback, puback, pubrec, pubcomp, pingresp

    /// The key used in report.json (`ack_timeouts.<name>`).
    public var reportName: String {
        switch self {
        case .connack: return "connack"
        case .suback: return "suback"
        case .unsuback: return "unsuback"
        case .puback: return "puback"
        case .pubrec: return "pubrec"
        case .pubcomp: return "pubcomp"
        case .pingresp: return "pingresp"
        }
    }
}

/// Ack timeouts by kind, without allocation.
public struct AckTimeoutCounts: Equatable, Sendable {
    public var connack: UInt64 = 0
    public var suback: UInt64 = 0
    public var unsuback: UInt64 = 0
    public var puback: UInt64 = 0
    public var pubrec: UInt64 = 0
    public var pubcomp: UInt64 = 0
    public var pingresp: UInt64 = 0

    public init() {}

    public subscript(kind: AckKind) -> UInt64 {
        get {
            switch kind {
            case .connack: return connack
            case .suback: return suback
            case .unsuback: return unsuback
            case .puback: return puback
            case .pubrec: return pubrec
            case .pubcomp: return pubcomp
            case .pingresp: return pingresp
            }
        }
        set {
            switch kind {
            case .connack: connack = newValue
            case .suback: suback = newValue
            case .unsuback: unsuback = newValue
            case .puback: puback = newValue
            case .pubrec: pubrec = newValue
            case .pubcomp: pubcomp = newValue
            case .pingresp: pingresp = newValue
            }
        }
    }

    public var total: UInt64 { AckKind.allCases.reduce(0) { $0 &+ self[$1] } }

    public mutating func add(_ other: AckTimeoutCounts) {
        for kind in AckKind.allCases { self[kind] &+= other[kind] }
    }
}

/// Why a connection attempt failed.
public enum ConnectFailureReason: Hashable, Sendable {
    /// TCP connection refused (ECONNREFUSED).
    case refused
    /// TCP connect did not complete before its deadline.
    case timeout
    /// Another socket error while connecting (unreachable, reset, no ports left); `errno` kept.
    case socketError(errno: Int32)
    case tlsHandshakeFailed
    case websocketUpgradeFailed
    /// No CONNACK before its deadline.
    case connackTimeout
    /// CONNACK with a failure code: MQTT 3.1.1 §3.2.2.3 return code or MQTT 5.0 §3.2.2.2 reason code.
    case connackRefused(code: UInt8)
    /// The broker closed the connection before CONNACK.
    case closedBeforeConnack
    /// Malformed bytes from the broker before CONNACK.
    case protocolError

    /// The key used in report.json (`connections.failed_by_reason.<name>`).
    public var reportName: String {
        switch self {
        case .refused: return "refused"
        case .timeout: return "timeout"
        case .socketError(let errno): return "socket_error_\(errno)"
        case .tlsHandshakeFailed: return "tls_handshake_failed"
        case .websocketUpgradeFailed: return "websocket_upgrade_failed"
        case .connackTimeout: return "connack_timeout"
        case .connackRefused(let code): return "connack_refused_0x" + hexByte(code)
        case .closedBeforeConnack: return "closed_before_connack"
        case .protocolError: return "protocol_error"
        }
    }
}

/// Why an established connection ended.
public enum DisconnectReason: Hashable, Sendable {
    /// The client sent DISCONNECT (end of run, scenario step).
    case clientInitiated
    /// The broker sent DISCONNECT with this MQTT 5.0 §3.14.2.1 reason code.
    case serverDisconnect(reasonCode: UInt8)
    /// The broker closed the socket without DISCONNECT.
    case closedByPeer
    /// A socket error (reset, broken pipe); `errno` kept.
    case socketError(errno: Int32)
    /// An ack deadline expired and the client's policy closes the connection.
    case ackTimeout(AckKind)
    /// Malformed bytes from the broker.
    case protocolError
    /// A scenario's tunnel fault cut the connection abruptly (RST, no DISCONNECT: the broker publishes the will).
    case tunnel
    /// A scenario's churn fault disconnected the client cleanly (DISCONNECT) to reconnect it.
    case churn
    /// An emulated link drop ended the connection (`network.loss.drop_interval`).
    case networkDrop
    /// An emulated network outage cut the connection (`network.outages`).
    case networkOutage

    /// Who or what ended a connection, as the progress line and the summary group the reasons.
    public enum Cause: Sendable, Equatable {
        /// The client itself, cleanly: the end of the run, a churn step.
        case client
        /// The scenario cut the link on purpose: a tunnel (stage or route), an emulated link drop or outage.
        /// Expected, and reconnected by the fleet's policy: not an error.
        case linkCut
        /// Everything else: the broker closed or refused, a socket error, an ack timeout, malformed bytes.
        case error
    }

    public var cause: Cause {
        switch self {
        case .clientInitiated, .churn: return .client
        case .tunnel, .networkDrop, .networkOutage: return .linkCut
        case .serverDisconnect, .closedByPeer, .socketError, .ackTimeout, .protocolError: return .error
        }
    }

    /// The cause of a reason by its report.json name (`disconnects_by_reason`), for reports read back. Every
    /// reason that is not an error carries no value, so its name is matched against those reasons' own names.
    public static func cause(ofReportName name: String) -> Cause {
        let notErrors: [DisconnectReason] = [.clientInitiated, .churn, .tunnel, .networkDrop, .networkOutage]
        return notErrors.first { $0.reportName == name }?.cause ?? .error
    }

    public var reportName: String {
        switch self {
        case .clientInitiated: return "client_initiated"
        case .serverDisconnect(let code): return "server_disconnect_0x" + hexByte(code)
        case .closedByPeer: return "closed_by_peer"
        case .socketError(let errno): return "socket_error_\(errno)"
        case .ackTimeout(let kind): return "\(kind.reportName)_timeout"
        case .protocolError: return "protocol_error"
        case .tunnel: return "tunnel"
        case .churn: return "churn"
        case .networkDrop: return "network_drop"
        case .networkOutage: return "network_outage"
        }
    }
}

private func hexByte(_ byte: UInt8) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
    return String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0f)])
}

/// A run's counters are the sum of its lanes' and processes' `ClientCounters`.
public typealias RunCounters = ClientCounters

/// Counters of a set of clients: one fleet's on one lane, one fleet's or a whole run's (after `add`), from the lane
/// through the engine's result to report.json and `fleetbench merge`. Declared once, here: a counter added to
/// this struct and to `add(_:)` reaches every stage.
///
/// Per-message counters are plain fields (an increment is one add, no allocation). Failures, disconnects and
/// transport errors are counted by reason in small dictionaries: they happen per connection, not per message.
public struct ClientCounters: Equatable, Sendable {
    public var connectsAttempted: UInt64 = 0
    public var connectsSucceeded: UInt64 = 0
    public private(set) var connectsFailed: UInt64 = 0
    public private(set) var connectFailures: [ConnectFailureReason: UInt64] = [:]
    public private(set) var disconnects: [DisconnectReason: UInt64] = [:]
    public var reconnects: UInt64 = 0
    /// Connects that reached CONNACK only after their socket sent something again (a SYN or the CONNECT): the
    /// broker's listen queue was full. And how often a lane halved its bound of connects in flight to a broker
    /// address for that (`ConnectWindow`).
    public var connectsRetransmitted: UInt64 = 0
    public var connectWindowDecreases: UInt64 = 0
    public var published = PerQoSCounts()
    /// PUBACK for QoS 1, PUBCOMP for QoS 2 (never QoS 0).
    public var acked = PerQoSCounts()
    /// This run's messages received (report.json `messages.qosN.received`), by the QoS they arrived with:
    /// end-to-end deliveries of its streams (duplicates included), its requests' responses, requests reaching a
    /// responder. Not other runs' or other publishers' messages (`foreignMessages`), not retained messages
    /// handed over on subscribe (`retainedOnSubscribe`).
    public var received = PerQoSCounts()
    /// Every PUBLISH that arrived, whoever sent it (`messages.qosN.arrived`): `received` plus the foreign and
    /// retained-on-subscribe arrivals.
    public var arrived = PerQoSCounts()
    public var bytesIn: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var ackTimeouts = AckTimeoutCounts()
    /// What the broker granted below what was asked (report.json `downgrades`): SUBACK filters granted a lower
    /// QoS, SUBACK filters refused (failure code), QoS 2 messages answered with PUBACK (run as QoS 1).
    public var subscriptionsDowngraded: UInt64 = 0
    public var subscriptionsRefused: UInt64 = 0
    public var qos2AckedAsQoS1: UInt64 = 0
    /// Clients that never got a CONNACK accepting them during the whole run (set at the end of the run; a
    /// client that connected once and then lost its connection is not counted).
    public var neverConnected: UInt64 = 0

    // Arrivals outside the delivery accounting.
    /// Messages received that carried no fleetbench header (foreign publishers, will messages) or another run's
    /// id (report.json `delivery.foreign`).
    public var foreignMessages: UInt64 = 0
    /// Messages a broker handed over because of a subscription, from its retained store
    /// (`delivery.retained_on_subscribe`): not counted as deliveries, no latency.
    public var retainedOnSubscribe: UInt64 = 0

    // The generator's own accounting of what it did not send.
    /// Slots a `drop` stream skipped because it was behind.
    public var droppedSlots: UInt64 = 0
    /// In-flight messages given up (session lost on reconnect, or connection closed for good).
    public var abandonedPublishes: UInt64 = 0
    /// Schedule slots due by the end of the publishing phase that were never sent (window or socket full, the
    /// client offline): counted once, when publishing stops.
    public var unsentAtEnd: UInt64 = 0
    /// QoS 1/2 messages still awaiting their ack, within its deadline, when the drain ended (by QoS).
    public var unackedAtEnd = PerQoSCounts()

    // Request/response.
    /// Requester side: requests sent, replies received to them, and replies that came after the request's timeout.
    public var requestsSent: UInt64 = 0
    public var responsesReceived: UInt64 = 0
    public var responsesLate: UInt64 = 0
    /// Responder side: requests answered, and requests that could not be (no reply topic, window full, closed).
    public var requestsAnswered: UInt64 = 0
    public var requestsUnanswered: UInt64 = 0

    /// Churn disconnects that found no connected client of the fleet on their lane (report.json
    /// `connections.churn_skipped`).
    public var churnSkipped: UInt64 = 0
    /// Offline store-and-forward (streams with `offline`).
    public var offline = OfflineCounts()
    /// TLS and WebSocket failures by their reason text ("certificate verify failed: ...", "WebSocket upgrade
    /// refused: HTTP 404 ..."), connect failures and closed connections alike (the connect and disconnect reasons
    /// keep only the kind). At most `transportErrorKinds` distinct texts (`recordTransportError`).
    public private(set) var transportErrors: [String: UInt64] = [:]
    /// SO_RCVLOWAT batching of acks: connections seen holding acks below a raised low watermark (a broker with
    /// Nagle's algorithm on), read at every byte from then on until re-armed; and the re-arms.
    public var lowWatermarkFallbacks: UInt64 = 0
    public var lowWatermarkRearms: UInt64 = 0
    /// Times a lane paused between reads to let a heavy inbound stream gather
    /// (`EngineConfiguration.receiveCoalescing`): 0 means every receive time was taken as soon as the bytes could
    /// be read. The lane's, not a fleet's: counted in `LaneMetrics.lane`, so only run totals have it.
    public var receiveCoalescingPauses: UInt64 = 0
    /// Times a lane waited after a turn to batch the reads of a steady stream (`EngineConfiguration.receiveBatching`):
    /// receive times up to that long late. The lane's, like `receiveCoalescingPauses`.
    public var receiveBatchingPauses: UInt64 = 0

    public init() {}

    public mutating func recordConnectFailure(_ reason: ConnectFailureReason, count: UInt64 = 1) {
        connectsFailed &+= count
        connectFailures[reason, default: 0] &+= count
    }

    public mutating func recordDisconnect(_ reason: DisconnectReason, count: UInt64 = 1) {
        disconnects[reason, default: 0] &+= count
    }

    public var disconnectsTotal: UInt64 { disconnects.values.reduce(0, &+) }

    /// Disconnects of one cause (`DisconnectReason.cause`).
    public func disconnects(_ cause: DisconnectReason.Cause) -> UInt64 {
        disconnects.reduce(0) { $1.key.cause == cause ? $0 &+ $1.value : $0 }
    }

    /// Distinct transport error texts kept; further ones are counted under `otherTransportError`, so a hostile
    /// peer cannot grow the table without bound.
    public static let transportErrorKinds = 32
    public static let otherTransportError = "other transport error"

    public mutating func recordTransportError(_ text: String, count: UInt64 = 1) {
        if transportErrors[text] != nil || transportErrors.count < Self.transportErrorKinds {
            transportErrors[text, default: 0] &+= count
        } else {
            transportErrors[Self.otherTransportError, default: 0] &+= count
        }
    }

    public var transportErrorsTotal: UInt64 { transportErrors.values.reduce(0, &+) }

    /// Requests without a reply by the end of the run, plus late replies.
    public var requestsTimedOut: UInt64 {
        (requestsSent > responsesReceived ? requestsSent - responsesReceived : 0) &+ responsesLate
    }

    /// Adds another lane's, fleet's, process's or run's counters to these.
    public mutating func add(_ other: ClientCounters) {
        connectsAttempted &+= other.connectsAttempted
        connectsSucceeded &+= other.connectsSucceeded
        for (reason, count) in other.connectFailures { recordConnectFailure(reason, count: count) }
        for (reason, count) in other.disconnects { recordDisconnect(reason, count: count) }
        reconnects &+= other.reconnects
        connectsRetransmitted &+= other.connectsRetransmitted
        connectWindowDecreases &+= other.connectWindowDecreases
        published.add(other.published)
        acked.add(other.acked)
        received.add(other.received)
        arrived.add(other.arrived)
        bytesIn &+= other.bytesIn
        bytesOut &+= other.bytesOut
        ackTimeouts.add(other.ackTimeouts)
        subscriptionsDowngraded &+= other.subscriptionsDowngraded
        subscriptionsRefused &+= other.subscriptionsRefused
        qos2AckedAsQoS1 &+= other.qos2AckedAsQoS1
        neverConnected &+= other.neverConnected
        foreignMessages &+= other.foreignMessages
        retainedOnSubscribe &+= other.retainedOnSubscribe
        droppedSlots &+= other.droppedSlots
        abandonedPublishes &+= other.abandonedPublishes
        unsentAtEnd &+= other.unsentAtEnd
        unackedAtEnd.add(other.unackedAtEnd)
        requestsSent &+= other.requestsSent
        responsesReceived &+= other.responsesReceived
        responsesLate &+= other.responsesLate
        requestsAnswered &+= other.requestsAnswered
        requestsUnanswered &+= other.requestsUnanswered
        churnSkipped &+= other.churnSkipped
        offline.add(other.offline)
        for (text, count) in other.transportErrors { recordTransportError(text, count: count) }
        lowWatermarkFallbacks &+= other.lowWatermarkFallbacks
        lowWatermarkRearms &+= other.lowWatermarkRearms
        receiveCoalescingPauses &+= other.receiveCoalescingPauses
        receiveBatchingPauses &+= other.receiveBatchingPauses
    }
}

extension ClientCounters: Mergeable {}
extension OfflineCounts: Mergeable {}
extension AckTimeoutCounts: Mergeable {}
extension DeliveryCounts: Mergeable {}
