import FleetMetrics
import MQTTCodec
import MQTTSession

/// Receives one client's session events during a session call and records them in the lane's metrics.
///
/// It never touches `lane.clients` while the session call is running (the session is borrowed out of that
/// array for the call; touching it again would be an exclusivity violation). What changes the client's state
/// (connected, closed, window opened) is noted here and applied by `finish()` after the call returns.
struct LaneSessionSink: MQTTSessionEventHandler {
    unowned(unsafe) let lane: Lane
    let client: Int
    let fleet: Int
    let subscriberKey: UInt64
    var connected: Bool?
    var subscribed = false
    var windowOpened = false
    var closeReason: DisconnectReason?
    var refused: MQTTReasonCode?

    init(lane: Lane, client: Int) {
        self.lane = lane
        self.client = client
        self.fleet = lane.clients[client].fleet
        self.subscriberKey = UInt64(lane.clients[client].globalIndex) << 32
    }

    mutating func sessionEvent(_ event: MQTTSessionEvent) {
        let now = lane.now
        switch event {
        case .connected(let sessionPresent):
            connected = sessionPresent
        case .connectionRefused(let code, _):
            refused = code
        case .publishAcknowledged(let ack):
            let kind: LatencyKind
            switch ack.kind {
            case .pubAck:
                kind = .puback
                lane.metrics.fleets[fleet].counters.acked[.atLeastOnce] += 1
            case .pubRec:
                kind = .pubrec
            default:
                kind = .pubcomp
                lane.metrics.fleets[fleet].counters.acked[.exactlyOnce] += 1
            }
            lane.metrics.fleets[fleet].latency.record(kind, intendedAt: ack.intendedAt, sentAt: ack.sentAt, completedAt: now)
            if ack.kind != .pubRec { windowOpened = true }
        case .publishDropped:
            lane.metrics.fleets[fleet].abandonedPublishes += 1
        case .subscribed:
            subscribed = true
        case .unsubscribed, .requestAbandoned, .unexpectedAcknowledgement:
            break
        case .pingResponse:
            break
        case .ackTimeout(let timeout):
            lane.metrics.fleets[fleet].counters.ackTimeouts[AckKind(timeout.kind)] += 1
        case .serverDisconnected(let code, _):
            closeReason = .serverDisconnect(reasonCode: code.rawValue)
        case .closeConnection(let reason):
            switch reason.cause {
            case .ackTimeout(let kind): closeReason = .ackTimeout(AckKind(kind))
            case .malformedPacket, .protocolViolation: closeReason = .protocolError
            }
        }
    }

    mutating func messageReceived(
        _ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer
    ) {
        let now = lane.now
        lane.metrics.fleets[fleet].counters.received[QoSLevel(message.qos)] += 1
        guard let header = try? EndToEndHeader.readBinary(from: payload) else {
            lane.metrics.fleets[fleet].foreignMessages += 1
            return
        }
        let sentAt = EndToEndPayload.sentTime(in: payload) ?? header.intendedTime
        lane.metrics.fleets[fleet].latency.record(.endToEnd, intendedAt: header.intendedTime, sentAt: sentAt, completedAt: now)
        let key = subscriberKey | UInt64(header.streamID)
        let stream: Int
        if let known = lane.metrics.deliveryKeys[key] {
            stream = known
        } else {
            stream = lane.metrics.deliveryKeys.count
            lane.metrics.deliveryKeys[key] = stream
        }
        _ = lane.metrics.delivery.record(stream: stream, sequence: header.sequence)
    }

    /// Applies what the events asked for. Returns false when the connection was closed.
    mutating func finish() -> Bool {
        if let refused {
            lane.metrics.fleets[fleet].counters.recordConnectFailure(.connackRefused(code: refused.rawValue))
            lane.pacers[lane.clients[client].fleet].finished()
            lane.closeSocket(client, abortive: false)
            var discard = DiscardingSessionSink()
            lane.clients[client].session.connectionLost(now: lane.now, events: &discard)
            lane.scheduleReconnect(client)
            return false
        }
        if let sessionPresent = connected { lane.sessionConnected(client, sessionPresent: sessionPresent) }
        if subscribed { lane.subscriptionConfirmed(client) }
        if let closeReason {
            lane.connectionLost(client, reason: closeReason)
            return false
        }
        if windowOpened { lane.publishDue(client) }
        lane.scheduleSessionDeadline(client)
        return true
    }
}

/// For session calls whose events do not matter (a connection that never reached CONNACK).
struct DiscardingSessionSink: MQTTSessionEventHandler {
    mutating func sessionEvent(_ event: MQTTSessionEvent) {}
    mutating func messageReceived(
        _ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) {}
}

extension AckKind {
    init(_ kind: MQTTAckKind) {
        switch kind {
        case .connAck: self = .connack
        case .subAck: self = .suback
        case .unsubAck: self = .unsuback
        case .pubAck: self = .puback
        case .pubRec: self = .pubrec
        case .pubComp: self = .pubcomp
        case .pingResp: self = .pingresp
        }
    }
}

extension QoSLevel {
    init(_ qos: MQTTQoS) {
        switch qos {
        case .atMostOnce: self = .atMostOnce
        case .atLeastOnce: self = .atLeastOnce
        case .exactlyOnce: self = .exactlyOnce
        }
    }
}
