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
    /// What each received message is to the accounting.
    let arrivals: ArrivalClassifier
    var connected: Bool?
    var subscribed = false
    var windowOpened = false
    var closeReason: DisconnectReason?
    var refused: MQTTReasonCode?
    /// Property bytes of the packet being handed to the session (set by the lane before each packet), so a
    /// responder can find a request's Response Topic and Correlation Data.
    var properties = UnsafeRawBufferPointer(start: nil, count: 0)
    /// The client's emulated link (nil without a network profile), taken before the session call.
    let network: NetworkLink?
    /// Some fleet emulates network conditions: record the broker-side end-to-end latency too.
    let brokerSide: Bool

    init(lane: Lane, client: Int) {
        self.lane = lane
        self.client = client
        let fleet = lane.clients[client].fleet
        self.fleet = fleet
        let runtime = lane.fleets[fleet]
        let indexInFleet = lane.clients[client].indexInFleet
        let ownStreams: Range<UInt32>
        if runtime.hasRequestStreams {
            let first = UInt32(runtime.firstStream + indexInFleet * runtime.configuration.streams.count)
            ownStreams = first..<(first + UInt32(runtime.configuration.streams.count))
        } else {
            ownStreams = 0..<0
        }
        arrivals = ArrivalClassifier(
            runID: lane.runID,
            commandTopic: runtime.commandTopics.isEmpty ? [] : runtime.commandTopics[indexInFleet].utf8,
            ownStreams: ownStreams,
            isRequestStream: runtime.hasRequestStreams ? runtime.isRequestStream : [],
            requestTimeouts: runtime.hasRequestStreams ? runtime.requestTimeouts : [],
            streamTracked: lane.streamTracked,
            subscriberKey: lane.clients[client].deliveryKey,
            deliveryRoutes: lane.clients[client].deliveryRoutes,
            retainAsPublished: lane.clients[client].retainAsPublished,
            subscribeSentAt: lane.clients[client].connection.subscribeSentAt)
        self.network = lane.clients[client].network
        self.brokerSide = lane.networkEmulation
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
            // From the PUBLISH leaving the emulated link to the PUBACK reaching it: the two emulated delays out.
            // By packet identifier: a PUBLISH resent after a reconnect is timed from its resend.
            if kind == .puback, let network, let released = network.releaseOfPublish(packetID: ack.packetID) {
                lane.metrics.fleets[fleet].latency.record(.pubackBrokerSide, startedAt: released,
                                                          completedAt: network.deliveringReadAt)
            }
            if ack.kind != .pubRec { windowOpened = true }
        case .publishDropped:
            lane.metrics.fleets[fleet].counters.abandonedPublishes += 1
        case .subscribed:
            subscribed = true
        case .subscriptionNotGranted(let filter, _, let result):
            if result.isSuccess {
                lane.metrics.fleets[fleet].counters.subscriptionsDowngraded += 1
            } else {
                lane.metrics.fleets[fleet].counters.subscriptionsRefused += 1
                lane.refusedFilters[client, default: []].append(filter)
            }
        case .publishAcknowledgedAtLowerQoS:
            lane.metrics.fleets[fleet].counters.qos2AckedAsQoS1 += 1
            windowOpened = true
        case .unsubscribed, .requestAbandoned, .unexpectedAcknowledgement:
            break
        case .pingResponse(let sentAt, let receivedAt):
            lane.metrics.fleets[fleet].latency.record(.pingresp, startedAt: sentAt, completedAt: receivedAt)
        case .ackTimeout(let timeout):
            lane.metrics.fleets[fleet].counters.ackTimeouts[AckKind(timeout.kind)] += 1
        case .serverDisconnected(let code, _):
            closeReason = .serverDisconnect(reasonCode: code.rawValue)
        case .closeConnection(let reason):
            closeReason = DisconnectReason(sessionClose: reason)
        }
    }

    mutating func messageReceived(
        _ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer
    ) {
        let now = lane.now
        lane.messagesThisTurn &+= 1
        lane.metrics.fleets[fleet].counters.arrived[message.qos] += 1
        switch arrivals.classify(topic: topic, payload: payload, retain: message.retain, now: now) {
        case .request(let ours):
            // Answered whoever sent it, counted as received only when it is this run's.
            if ours {
                lane.metrics.fleets[fleet].counters.received[message.qos] += 1
            } else {
                lane.metrics.fleets[fleet].counters.foreignMessages += 1
            }
            lane.queueReply(payload: payload, properties: properties)
        case .foreign:
            lane.metrics.fleets[fleet].counters.foreignMessages += 1
        case .retainedOnSubscribe:
            lane.metrics.fleets[fleet].counters.retainedOnSubscribe += 1
        case .response(let header, let late):
            lane.metrics.fleets[fleet].counters.received[message.qos] += 1
            lane.metrics.fleets[fleet].latency.record(.requestResponse, intendedAt: header.intendedTime,
                                                      sentAt: header.sentTime, completedAt: now)
            lane.metrics.fleets[fleet].counters.responsesReceived += 1
            if late { lane.metrics.fleets[fleet].counters.responsesLate += 1 }
        case .untracked:
            lane.metrics.fleets[fleet].counters.received[message.qos] += 1
        case .delivery(let header, let key):
            lane.metrics.fleets[fleet].counters.received[message.qos] += 1
            lane.metrics.fleets[fleet].latency.record(.endToEnd, intendedAt: header.intendedTime, sentAt: header.sentTime,
                                                      completedAt: now)
            if brokerSide {
                // The send time of a publisher with a profile is when its bytes left its emulated link (stamped at
                // release); this end is when they were read here, before this client's own emulated delay.
                lane.metrics.fleets[fleet].latency.record(.endToEndBrokerSide, startedAt: header.sentTime,
                                                          completedAt: network?.deliveringReadAt ?? now)
            }
            let stream: Int
            if let known = lane.metrics.deliveryKeys[key] {
                stream = known
            } else {
                stream = lane.metrics.deliveryKeys.count
                lane.metrics.deliveryKeys[key] = stream
            }
            _ = lane.metrics.delivery.record(stream: stream, sequence: header.sequence)
        }
    }

    /// Applies what the events asked for. Returns false when the connection was closed.
    mutating func finish() -> Bool {
        if !lane.pendingReplies.isEmpty {
            if refused == nil && closeReason == nil {
                lane.sendReplies(client)
            } else {
                lane.dropReplies(client)
            }
        }
        if let refused {
            lane.connAckRefused(client, code: refused.rawValue)
            return false
        }
        if let sessionPresent = connected { lane.sessionConnected(client, sessionPresent: sessionPresent) }
        if subscribed { lane.subscriptionConfirmed(client) }
        if let closeReason {
            lane.connectionLost(client, reason: closeReason)
            return false
        }
        if windowOpened { lane.windowOpened(client) }
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

extension DisconnectReason {
    /// Why the lane closes a connection the session gave up on (an ack or ping timeout, bad bytes).
    init(sessionClose reason: MQTTSessionCloseReason) {
        switch reason.cause {
        case .ackTimeout(let kind): self = .ackTimeout(AckKind(kind))
        case .malformedPacket, .protocolViolation: self = .protocolError
        }
    }
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

