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
    /// Only for clients mixing shared and plain subscriptions; nil keeps the one-key path free of matching.
    let deliveryRoutes: DeliveryRoutes?
    /// Some subscription of the client keeps the RETAIN flag of forwarded messages (MQTT 5 Retain As Published).
    let retainAsPublished: Bool
    var connected: Bool?
    var subscribed = false
    var windowOpened = false
    var closeReason: DisconnectReason?
    var refused: MQTTReasonCode?
    /// Property bytes of the packet being handed to the session (set by the lane before each packet), so a
    /// responder can find a request's Response Topic and Correlation Data.
    var properties = UnsafeRawBufferPointer(start: nil, count: 0)
    /// The client's command topic when its fleet answers requests, else empty.
    let commandTopic: [UInt8]
    /// Global ids of the client's own streams, and which of them are request streams (by stream index).
    let ownStreams: Range<UInt32>
    let isRequestStream: [Bool]
    /// Per stream index: the request timeout in ns (0: none).
    let requestTimeouts: [UInt64]
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
        commandTopic = runtime.commandTopics.isEmpty ? [] : runtime.commandTopics[lane.clients[client].indexInFleet].utf8
        if runtime.hasRequestStreams {
            let first = UInt32(runtime.firstStream + lane.clients[client].indexInFleet * runtime.configuration.streams.count)
            ownStreams = first..<(first + UInt32(runtime.configuration.streams.count))
            isRequestStream = runtime.isRequestStream
            requestTimeouts = runtime.requestTimeouts
        } else {
            ownStreams = 0..<0
            isRequestStream = []
            requestTimeouts = []
        }
        self.subscriberKey = lane.clients[client].deliveryKey
        self.deliveryRoutes = lane.clients[client].deliveryRoutes
        self.retainAsPublished = lane.clients[client].retainAsPublished
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
        if !commandTopic.isEmpty, topic.elementsEqual(commandTopic) {
            // A request: answered whoever sent it, counted as received only when it is this run's.
            if let header = try? EndToEndHeader.read(from: payload), header.runID == lane.runID {
                lane.metrics.fleets[fleet].counters.received[message.qos] += 1
            } else {
                lane.metrics.fleets[fleet].counters.foreignMessages += 1
            }
            lane.queueReply(payload: payload, properties: properties)
            return
        }
        guard let header = try? EndToEndHeader.read(from: payload) else {
            lane.metrics.fleets[fleet].counters.foreignMessages += 1
            return
        }
        if message.retain, retainedOnSubscribe(header) {
            // Stored by the broker and handed over because of a SUBSCRIBE: not a delivery of the stream as it
            // is published, so outside the exactly-once accounting and the latency histograms.
            lane.metrics.fleets[fleet].counters.retainedOnSubscribe += 1
            return
        }
        guard header.runID == lane.runID else {
            // Another run's message (or a header from before run ids): not this run's to count.
            lane.metrics.fleets[fleet].counters.foreignMessages += 1
            return
        }
        lane.metrics.fleets[fleet].counters.received[message.qos] += 1
        let sentAt = header.sentTime
        if ownStreams.contains(header.streamID), isRequestStream[Int(header.streamID - ownStreams.lowerBound)] {
            // A reply to one of this client's requests: the payload echoes the request's header. A round trip,
            // not an end-to-end delivery.
            lane.metrics.fleets[fleet].latency.record(.requestResponse, intendedAt: header.intendedTime, sentAt: sentAt,
                                                      completedAt: now)
            lane.metrics.fleets[fleet].counters.responsesReceived += 1
            let timeout = requestTimeouts[Int(header.streamID - ownStreams.lowerBound)]
            if timeout > 0 && now &- header.intendedTime > timeout { lane.metrics.fleets[fleet].counters.responsesLate += 1 }
            return
        }
        // Someone else's request or reply (3.1.1 reply filters catch every requester's replies): no accounting.
        if Int(header.streamID) < lane.streamTracked.count, !lane.streamTracked[Int(header.streamID)] { return }
        lane.metrics.fleets[fleet].latency.record(.endToEnd, intendedAt: header.intendedTime, sentAt: sentAt, completedAt: now)
        if brokerSide {
            // The send time of a publisher with a profile is when its bytes left its emulated link (stamped at
            // release); this end is when they were read here, before this client's own emulated delay.
            lane.metrics.fleets[fleet].latency.record(.endToEndBrokerSide, startedAt: sentAt,
                                                      completedAt: network?.deliveringReadAt ?? now)
        }
        let key = (deliveryRoutes?.key(topic: topic) ?? subscriberKey) | UInt64(header.streamID)
        let stream: Int
        if let known = lane.metrics.deliveryKeys[key] {
            stream = known
        } else {
            stream = lane.metrics.deliveryKeys.count
            lane.metrics.deliveryKeys[key] = stream
        }
        _ = lane.metrics.delivery.record(stream: stream, sequence: header.sequence)
    }

    /// Whether a message with the RETAIN flag was delivered because of a subscription rather than forwarded as
    /// published. Without Retain As Published the broker clears the flag on forwarded messages (3.1.1 §3.3.1.3,
    /// 5.0 §3.3.1.3), so the flag alone says it; with it, only a message of this run sent before the client's
    /// latest SUBSCRIBE can be (another run's cannot be told apart and stays foreign).
    private func retainedOnSubscribe(_ header: EndToEndHeader) -> Bool {
        guard retainAsPublished else { return true }
        return header.runID == lane.runID && header.sentTime < lane.clients[client].connection.subscribeSentAt
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

