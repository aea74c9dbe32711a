import MQTTCodec

/// A SUBSCRIBE or UNSUBSCRIBE awaiting its acknowledgement.
struct MQTTPendingRequest {
    var kind: MQTTAckKind  // .subAck or .unsubAck
    var packetID: UInt16
    var filterCount: Int
    var sentAt: UInt64
    var timeoutReported: Bool
}

/// Filters subscribed with one SUBSCRIBE (same properties, e.g. a Subscription Identifier), replayed when
/// the broker lost the session.
struct MQTTSubscriptionGroup {
    var packetID: UInt16
    var subscriptions: [MQTTSubscription]
    var properties: [MQTTProperty]
}

/// The MQTT client side of one connection and its session, for 3.1, 3.1.1 and 5.0, with no I/O: the engine
/// feeds it received packets and the time, it appends the bytes to send to the engine's output buffer and
/// reports events to the engine's handler.
///
/// A struct, so the engine can keep thousands in one contiguous array per lane; idle it holds no heap
/// storage of its own (its tables stay empty until used) beyond the shared settings and the client id.
///
/// Driving it:
/// 1. TCP (and TLS) up: `connect(now:into:)`, then flush the output.
/// 2. Bytes read: `receive(from:now:output:events:)` (or `receive(_:in:now:output:events:)` per view).
/// 3. Timer: reschedule at `nextDeadline()` after every call; when it fires, `checkDeadlines(now:output:events:)`.
/// 4. Socket closed (by either side, or because an event `closesConnection`): `connectionLost(now:events:)`,
///    then `connect` again to reconnect: the session state carries over.
public struct MQTTClientSession: Sendable {
    public enum State: UInt8, Sendable {
        /// No connection (initial, and after `connectionLost`).
        case disconnected
        /// CONNECT written, CONNACK awaited.
        case awaitingConnAck
        case connected
        /// The session asked for (or wrote a DISCONNECT and expects) the connection to close; input is ignored.
        case closing
    }

    public let settings: MQTTSessionSettings
    /// The Client Identifier; replaced by a 5.0 Assigned Client Identifier (§3.2.2.3.7) for later connects.
    public internal(set) var clientID: String
    /// The session's counters, when it keeps them (`keepsStatistics`); zeros otherwise. The engine counts every
    /// event itself and keeps none: 8 bytes in each session instead of the counters' 88 inline.
    public var statistics: MQTTSessionStatistics { statisticsStorage.first ?? MQTTSessionStatistics() }

    /// Counts into the statistics when the session keeps them. A `_modify` accessor yielding a discarded copy
    /// for a session without them allocated the accessor's frame (malloc and free) at every publish and ack.
    @inline(__always)
    mutating func updateStatistics(_ change: (inout MQTTSessionStatistics) -> Void) {
        if !statisticsStorage.isEmpty { change(&statisticsStorage[0]) }
    }
    /// One element when the session keeps statistics, none otherwise (no storage).
    var statisticsStorage: [MQTTSessionStatistics]

    // MARK: Limits from the broker's CONNACK (5.0 §3.2.2.3); protocol defaults before 5.0

    /// Broker's Receive Maximum (65535 when absent).
    public internal(set) var brokerReceiveMaximum: UInt16 = 65535
    /// Broker's Maximum Packet Size (0: no limit).
    public internal(set) var brokerMaximumPacketSize: UInt32 = 0
    /// Broker's Topic Alias Maximum (0: no outbound aliases).
    public internal(set) var brokerTopicAliasMaximum: UInt16 = 0
    public internal(set) var brokerMaximumQoS: MQTTQoS = .exactlyOnce
    /// Keep Alive in force (seconds): the client's, or the 5.0 Server Keep Alive.
    public internal(set) var keepAliveSeconds: UInt16
    /// Next packet identifier to try. Beside the 2-byte limits above: it fills their last 2 bytes of padding.
    var nextPacketID: UInt16 = 1

    // MARK: Timing (monotonic ns)

    var connectSentAt: UInt64 = 0
    /// Last packet written: PINGREQ is due `keepAliveSeconds` later.
    var lastPacketSentAt: UInt64 = 0
    var pingSentAt: UInt64 = 0

    // MARK: Tables (empty, unallocated, when idle)

    var outbound = MQTTOutboundWindow()
    // The 1-byte fields right after the window, whose last field is 1 byte too: they fill its 7 bytes of padding
    // (a field of 1 byte between 8-byte ones took 8).
    var pingOutstanding = false
    var pingTimeoutReported = false
    /// Set once identifiers wrapped past 65535: only then can a candidate still be in use.
    var packetIDsWrapped = false
    public internal(set) var state: State = .disconnected
    var connAckTimeoutReported = false
    /// Whether the session keeps what it subscribed to, to send it again when a CONNACK says the broker lost the
    /// session (`resubscribesWhenSessionLost`). A session that does not (`keepsSubscriptions: false`) keeps a
    /// SUBSCRIBE's filters only until its SUBACK (to name the refused ones) and re-subscribes nothing: its owner
    /// subscribes again itself. The engine's vehicles do so: the filters, their array and the group kept for the
    /// whole run cost each vehicle subscribed to its command topic 176 bytes (docs/performance.md).
    public let keepsSubscriptions: Bool
    var pendingRequests: [MQTTPendingRequest] = []
    var subscriptionGroups: [MQTTSubscriptionGroup] = []
    /// Inbound QoS 2 packet identifiers whose PUBREC was sent and PUBREL not yet received (§4.3.3).
    var inboundAwaitingRelease: [UInt16] = []
    /// Inbound topic aliases (index alias - 1) of this connection.
    var inboundAliases: [[UInt8]] = []
    /// Outbound topic aliases (index alias - 1) of this connection: the topics' UTF-8 bytes.
    var outboundAliases: [[UInt8]] = []

    /// `keepsStatistics`: whether `statistics` counts (a session that nobody reads them from keeps none).
    /// `keepsSubscriptions`: whether subscriptions are kept to be replayed (see the property).
    /// `windowStorage`: where the in-flight window's slot array comes from while messages are in flight, and goes
    /// back to when the last is acknowledged (nil: the window keeps its own between messages). The pool must be
    /// used on one thread only: the sessions sharing it are driven on the same one.
    public init(settings: MQTTSessionSettings, clientID: String, keepsStatistics: Bool = true,
                keepsSubscriptions: Bool = true, windowStorage: MQTTWindowStoragePool? = nil) {
        self.settings = settings
        self.clientID = clientID
        self.keepsSubscriptions = keepsSubscriptions
        outbound.storagePool = windowStorage
        self.statisticsStorage = keepsStatistics ? [MQTTSessionStatistics()] : []
        self.keepAliveSeconds = settings.keepAliveSeconds
    }

    /// Messages in flight (QoS 1/2 awaiting PUBACK, PUBREC or PUBCOMP).
    public var inFlightCount: Int { outbound.count }

    /// In-flight messages of each QoS (index 1 and 2; index 0 stays 0) whose acknowledgement deadline has not
    /// been reported yet: the ones an end-of-run drain still waits for. A message whose deadline passed is
    /// already an ack timeout of its kind, so each unacknowledged message is counted once, one way or the other.
    public var awaitingWithinDeadline: (qos1: Int, qos2: Int) {
        var qos1 = 0
        var qos2 = 0
        var index = outbound.head
        while index < outbound.slots.count {
            let slot = outbound.slots[index]
            if slot.awaiting != nil, !slot.timeoutReported {
                if slot.qos == .exactlyOnce { qos2 += 1 } else { qos1 += 1 }
            }
            index += 1
        }
        return (qos1, qos2)
    }

    /// The in-flight limit now: the configured window, capped in 5.0 by the broker's Receive Maximum.
    public var inFlightWindow: Int {
        Int(settings.version.hasProperties ? min(settings.inFlightWindow, brokerReceiveMaximum) : settings.inFlightWindow)
    }

    /// Filters that would be re-subscribed if the broker lost the session; without `keepsSubscriptions`, those
    /// whose SUBACK has not come yet.
    public var subscriptions: [MQTTSubscription] { subscriptionGroups.flatMap(\.subscriptions) }

    /// Frees the capacity of tables that are empty now (in-flight window, retransmission copies, inbound
    /// QoS 2 identifiers), e.g. when a publisher goes idle, so an idle session keeps no heap storage. The
    /// next QoS 1/2 message allocates again.
    public mutating func releaseIdleStorage() {
        if outbound.isEmpty {
            outbound.slots = []
            outbound.storedBytes = []
            outbound.head = 0
            outbound.storedStart = 0
        }
        if pendingRequests.isEmpty { pendingRequests = [] }
        if inboundAwaitingRelease.isEmpty { inboundAwaitingRelease = [] }
    }

    // MARK: Connecting

    /// Writes CONNECT and starts the CONNACK deadline. Call when the transport is up; after an earlier
    /// connection, call `connectionLost` first.
    public mutating func connect(now: UInt64, into output: inout MQTTByteBuffer) {
        pendingRequests.removeAll()
        MQTTPacket.connect(settings.connectPacket(clientID: clientID)).encode(version: settings.version, into: &output)
        state = .awaitingConnAck
        connectSentAt = now
        connAckTimeoutReported = false
        lastPacketSentAt = now
        pingOutstanding = false
        pingTimeoutReported = false
        keepAliveSeconds = settings.keepAliveSeconds
        // Topic aliases live as long as one network connection (5.0 §3.3.2.3.4).
        inboundAliases.removeAll()
        outboundAliases.removeAll()
    }

    /// The connection is gone (closed by either side). Session state (in-flight messages, inbound QoS 2
    /// identifiers, subscriptions) is kept for the next `connect`; SUBSCRIBE/UNSUBSCRIBE still awaiting their
    /// acknowledgement are reported as `.requestAbandoned`.
    public mutating func connectionLost<Handler: MQTTSessionEventHandler>(now: UInt64, events: inout Handler) {
        state = .disconnected
        pingOutstanding = false
        for request in pendingRequests {
            events.sessionEvent(.requestAbandoned(request.kind, packetID: request.packetID))
        }
        pendingRequests.removeAll()
        // Unanswered SUBSCRIBEs of a session that keeps no subscriptions are its owner's to send again.
        if !keepsSubscriptions { subscriptionGroups = [] }
    }

    /// Writes DISCONNECT (5.0: with `reasonCode`, and a new Session Expiry Interval if given; §3.14) and waits
    /// for the engine to close the socket. `.disconnectWithWillMessage` asks a 5.0 broker to publish the will.
    public mutating func disconnect(
        reasonCode: MQTTReasonCode = .normalDisconnection, sessionExpiryInterval: UInt32? = nil,
        now: UInt64, into output: inout MQTTByteBuffer
    ) {
        guard state == .connected || state == .awaitingConnAck else { return }
        var properties: [MQTTProperty] = []
        if let sessionExpiryInterval { properties.append(.sessionExpiryInterval(sessionExpiryInterval)) }
        MQTTPacket.disconnect(MQTTDisconnect(reasonCode: reasonCode, properties: properties))
            .encode(version: settings.version, into: &output)
        lastPacketSentAt = now
        state = .closing
    }

    // MARK: Publishing

    /// Writes a PUBLISH whose payload `writePayload` writes in place (exactly `payloadCount` bytes). QoS 1/2
    /// messages enter the in-flight window with `intendedAt`, `now` (the actual send) and the engine's
    /// `tag`, which come back in `.publishAcknowledged`. Allocates nothing once the window's storage is warm.
    public mutating func publish(
        topic: MQTTTopicName, qos: MQTTQoS, retain: Bool = false, properties: MQTTEncodedProperties = .empty,
        payloadCount: Int, intendedAt: UInt64, tag: UInt64, now: UInt64, into output: inout MQTTByteBuffer,
        payload writePayload: (UnsafeMutableRawBufferPointer) -> Void
    ) -> MQTTPublishResult {
        guard state == .connected else { return .notConnected }
        if qos > brokerMaximumQoS { return .qosNotSupported(maximum: brokerMaximumQoS) }
        if qos != .atMostOnce, outbound.count >= inFlightWindow { return .windowFull }
        let version = settings.version

        // 5.0 §3.3.2.3.4 topic alias: an existing one replaces the topic; a free one is assigned and sent
        // beside the topic. Before 5.0, or when the broker allows none, topics are always sent whole.
        var alias: UInt16 = 0
        var aliasIsNew = false
        if settings.usesOutgoingTopicAliases, version.hasProperties, brokerTopicAliasMaximum > 0 {
            if let index = outboundAliases.firstIndex(of: topic.utf8) {
                alias = UInt16(index + 1)
            } else if outboundAliases.count < Int(brokerTopicAliasMaximum) {
                alias = UInt16(outboundAliases.count + 1)
                aliasIsNew = true
            }
        }
        let sendsTopic = alias == 0 || aliasIsNew
        let propertyCount = properties.bytes.count + (alias == 0 ? 0 : 3)
        let size = MQTTByteBuffer.publishSize(
            topicByteCount: sendsTopic ? topic.utf8.count : 0, qos: qos, version: version,
            propertiesByteCount: propertyCount, payloadCount: payloadCount)
        if brokerMaximumPacketSize != 0, size > Int(brokerMaximumPacketSize) {
            return .packetTooLarge(size: size, maximum: Int(brokerMaximumPacketSize))
        }
        var packetID: UInt16 = 0
        if qos != .atMostOnce {
            packetID = allocatePacketID()
            if packetID == 0 { return .windowFull }
        }
        if aliasIsNew { outboundAliases.append(topic.utf8) }

        topic.utf8.withUnsafeBytes { topicBytes in
            let sentTopic = sendsTopic ? topicBytes : UnsafeRawBufferPointer(rebasing: topicBytes[0..<0])
            properties.bytes.withUnsafeBytes { propertyBytes in
                if alias == 0 {
                    output.writePublish(
                        topic: sentTopic, packetID: packetID, qos: qos, retain: retain, dup: false, version: version,
                        properties: propertyBytes, payloadCount: payloadCount, payload: writePayload)
                } else {
                    // The caller's properties plus Topic Alias (0x23, Two Byte Integer), on the stack.
                    withUnsafeTemporaryAllocation(byteCount: propertyCount, alignment: 1) { combined in
                        if propertyBytes.count > 0 { combined.copyMemory(from: propertyBytes) }
                        combined[propertyCount - 3] = MQTTPropertyIdentifier.topicAlias.rawValue
                        combined[propertyCount - 2] = UInt8(truncatingIfNeeded: alias >> 8)
                        combined[propertyCount - 1] = UInt8(truncatingIfNeeded: alias)
                        output.writePublish(
                            topic: sentTopic, packetID: packetID, qos: qos, retain: retain, dup: false,
                            version: version, properties: UnsafeRawBufferPointer(combined),
                            payloadCount: payloadCount, payload: writePayload)
                    }
                }
            }
        }
        lastPacketSentAt = now
        updateStatistics { $0.countPublished(qos) }
        guard qos != .atMostOnce else { return .sent(packetID: 0) }

        // The packet is the last `size` bytes of the output (writing may have compacted the buffer).
        let packetEnd = output.writerIndex
        var storedOffset = 0
        var storedCount = 0
        // A clean start never resumes a session (a CONNACK saying otherwise is a violation), so nothing kept
        // would ever be retransmitted: such sessions keep no copy (no memcpy per message, no bytes per client).
        if settings.keepsPublishesForRetransmission, !settings.cleanStart {
            if alias == 0 {
                storedOffset = output.withUnsafeBytes(in: (packetEnd - size)..<packetEnd) { outbound.store($0) }
                storedCount = size
            } else {
                // A retransmission goes on a new connection, where this alias means nothing: keep the
                // PUBLISH with its whole topic and without the alias.
                let payloadRange = (packetEnd - payloadCount)..<packetEnd
                (storedOffset, storedCount) = output.withUnsafeBytes(in: payloadRange) { payloadBytes in
                    topic.utf8.withUnsafeBytes { topicBytes in
                        properties.bytes.withUnsafeBytes { propertyBytes in
                            outbound.storePublish(topic: topicBytes, packetID: packetID, qos: qos, retain: retain,
                                                  version: version, properties: propertyBytes, payload: payloadBytes)
                        }
                    }
                }
            }
        }
        let awaiting: MQTTAckKind = qos == .atLeastOnce ? .pubAck : .pubRec
        outbound.append(
            MQTTOutboundMessage(
                awaiting: awaiting, packetID: packetID, qos: qos, timeoutReported: false, storedOffset: storedOffset,
                storedCount: storedCount, intendedAt: intendedAt, sentAt: now, stageSentAt: now, tag: tag),
            deadline: now &+ settings.timeouts.timeout(for: awaiting))
        return .sent(packetID: packetID)
    }

    /// Convenience: publish a payload copied from `payload`.
    public mutating func publish(
        topic: MQTTTopicName, qos: MQTTQoS, retain: Bool = false, properties: MQTTEncodedProperties = .empty,
        payload: UnsafeRawBufferPointer, intendedAt: UInt64, tag: UInt64, now: UInt64,
        into output: inout MQTTByteBuffer
    ) -> MQTTPublishResult {
        publish(topic: topic, qos: qos, retain: retain, properties: properties, payloadCount: payload.count,
                intendedAt: intendedAt, tag: tag, now: now, into: &output) { target in
            if payload.count > 0 { target.copyMemory(from: payload) }
        }
    }

    // MARK: Subscribing

    /// Writes SUBSCRIBE (one packet for all `subscriptions`, §3.8) and remembers the filters for
    /// re-subscription. The SUBACK comes back as `.subscribed` with one result per filter.
    public mutating func subscribe(
        _ subscriptions: [MQTTSubscription], properties: [MQTTProperty] = [], now: UInt64,
        into output: inout MQTTByteBuffer
    ) -> MQTTRequestResult {
        guard state == .connected else { return .notConnected }
        guard !subscriptions.isEmpty else { return .empty }
        let packetID = writeSubscribe(subscriptions, properties: properties, now: now, into: &output)
        if packetID == 0 { return .notConnected }
        subscriptionGroups.append(
            MQTTSubscriptionGroup(packetID: packetID, subscriptions: subscriptions, properties: properties))
        return .sent(packetID: packetID)
    }

    /// Writes UNSUBSCRIBE (§3.10) and stops re-subscribing `filters`.
    public mutating func unsubscribe(
        _ filters: [String], properties: [MQTTProperty] = [], now: UInt64, into output: inout MQTTByteBuffer
    ) -> MQTTRequestResult {
        guard state == .connected else { return .notConnected }
        guard !filters.isEmpty else { return .empty }
        let packetID = allocatePacketID()
        if packetID == 0 { return .notConnected }
        MQTTPacket.unsubscribe(MQTTUnsubscribe(packetID: packetID, filters: filters, properties: properties))
            .encode(version: settings.version, into: &output)
        pendingRequests.append(MQTTPendingRequest(
            kind: .unsubAck, packetID: packetID, filterCount: filters.count, sentAt: now, timeoutReported: false))
        lastPacketSentAt = now
        for index in subscriptionGroups.indices {
            subscriptionGroups[index].subscriptions.removeAll { filters.contains($0.filter) }
        }
        subscriptionGroups.removeAll { $0.subscriptions.isEmpty }
        return .sent(packetID: packetID)
    }

    mutating func writeSubscribe(
        _ subscriptions: [MQTTSubscription], properties: [MQTTProperty], now: UInt64, into output: inout MQTTByteBuffer
    ) -> UInt16 {
        let packetID = allocatePacketID()
        guard packetID != 0 else { return 0 }
        MQTTPacket.subscribe(MQTTSubscribe(packetID: packetID, subscriptions: subscriptions, properties: properties))
            .encode(version: settings.version, into: &output)
        pendingRequests.append(MQTTPendingRequest(
            kind: .subAck, packetID: packetID, filterCount: subscriptions.count, sentAt: now, timeoutReported: false))
        lastPacketSentAt = now
        return packetID
    }

    // MARK: Packet identifiers

    /// The next free packet identifier (§2.2.1: never 0, never one still in use), or 0 when every
    /// identifier is in use.
    mutating func allocatePacketID() -> UInt16 {
        for _ in 0..<65535 {
            let candidate = nextPacketID
            if candidate == 65535 {
                nextPacketID = 1
                packetIDsWrapped = true
            } else {
                nextPacketID = candidate + 1
            }
            // Before the first wrap every identifier from here on is unused: no lookup needed.
            if !packetIDsWrapped || !packetIDInUse(candidate) { return candidate }
        }
        return 0
    }

    func packetIDInUse(_ packetID: UInt16) -> Bool {
        if outbound.contains(packetID) { return true }
        for request in pendingRequests where request.packetID == packetID { return true }
        return false
    }
}
