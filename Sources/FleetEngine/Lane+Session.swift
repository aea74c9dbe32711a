import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession

/// The lane's side of each client's MQTT session: CONNACK, subscriptions, deadlines, publishing.
extension Lane {
    func sessionConnected(_ client: Int, sessionPresent: Bool) {
        // The session keeps no subscriptions (`Engine.init`): the lane subscribes again when the broker lost them.
        guard let connected = clients[client].connection.connAckAccepted(
            sessionPresent: sessionPresent, now: now, hasSubscriptions: clients[client].hasSubscriptions,
            resubscribes: clients[client].session.settings.resubscribesWhenSessionLost) else { return }
        let fleet = clients[client].fleet
        wheel.cancel(client: client, kind: TimerKind.connectTimeout)
        pacers[fleet].finished()
        connectWindowFinished(client, retransmitted: clients[client].socket?.totalRetransmissions().map { $0 > 0 })
        metrics.fleets[fleet].counters.connectsSucceeded += 1
        metrics.fleets[fleet].latency.record(.connect, startedAt: connected.connectSentAt, completedAt: now)
        clients[client].publisher.becameSendable(at: now)
        markConnected(client)
        entitlementConnected(client, sessionPresent: sessionPresent)
        // On a reconnect, an on-connect stream whose message went out starts a new schedule, so every
        // connection sends its message.
        if !connected.firstTime { clients[client].publisher.restartOnConnectStreams() }
        // The first time, and whenever the broker lost the session (what it had refused before left out).
        if connected.subscribe {
            _ = clients[client].session.subscribe(subscriptions(of: client), now: now, into: &scratch)
        }
        stage(client)
        if publishing { startPublishing(client) }
    }

    /// The client's subscriptions, made from its fleet's patterns, less the filters the broker refused before
    /// (not subscribed again, as a session that keeps its subscriptions drops them at the SUBACK). Made at each
    /// SUBSCRIBE, never per message.
    func subscriptions(of client: Int) -> [MQTTSubscription] {
        var subscriptions = fleets[clients[client].fleet].subscriptions(of: clients[client].indexInFleet)
        if let refused = refusedFilters[client] { subscriptions.removeAll { refused.contains($0.filter) } }
        return subscriptions
    }

    func subscriptionConfirmed(_ client: Int) {
        entitlementSubscribed(client)
        if let subscribedAt = clients[client].connection.subAckReceived() {
            metrics.fleets[clients[client].fleet].latency.record(.subscribe, startedAt: subscribedAt, completedAt: now)
        }
    }

    /// One timer per client at the session's earliest deadline (ack timeouts, keepalive ping).
    ///
    /// A deadline that moved later is not followed: the timer fires at the earlier one, the session finds nothing
    /// due and the timer is set again to the deadline of then. Every packet a client writes moves its keep-alive
    /// deadline on; moving the timer each time cost a wheel move per packet and, since the client about to get
    /// the next packet is usually the one with the earliest deadline, a fresh walk for the lane's next wakeup.
    /// Lazily, each client's timer fires once per keep-alive period at most while it writes.
    func scheduleSessionDeadline(_ client: Int) {
        if let deadline = clients[client].session.nextDeadline() {
            if let scheduled = wheel.deadline(client: client, kind: TimerKind.session), scheduled <= deadline {
                return
            }
            wheel.schedule(client: client, kind: TimerKind.session, deadline: deadline)
        } else {
            wheel.cancel(client: client, kind: TimerKind.session)
        }
    }

    func sessionDeadline(_ client: Int) {
        guard clients[client].socket != nil else { return }
        var sink = LaneSessionSink(lane: self, client: client)
        clients[client].session.checkDeadlines(now: now, output: &scratch, events: &sink)
        stage(client)
        _ = sink.finish()
    }

    // MARK: Publishing

    /// The start barrier opened: every connected client starts its schedules. The clock is read afresh first:
    /// `now` is the start of the lane's last turn, which on an idle lane may be up to a second old, and
    /// schedules starting from it would begin with that much lag.
    ///
    /// A client not connected by then (its connect failed or is still under way past the ready timeout) has its
    /// scheduled streams started too, as if it had gone offline at this moment: their slots come due from now on,
    /// so a first connect later resumes the schedule as a reconnect does (catching up or dropping by the stream's
    /// policy), and a client that never connects leaves its due slots in `unsentAtEnd` instead of in no counter.
    /// On-connect and closed-model streams owe nothing before a connection.
    func beginPublishing() {
        now = MonotonicClock.now()
        publishing = true
        for client in clients.indices {
            if clients[client].phase == .connected {
                startPublishing(client)
            } else {
                startSchedules(client, plans: { $0 != .onConnect && $0 != .closed })
            }
        }
        turn()
    }

    /// The publishing phase is over. What is due by now gets a last chance to go out (a slot due within the
    /// last tick has not been fired yet), except from a client waiting for its window to refill (it resumes only
    /// once half of it is free: `windowOpened`); then every slot due by now and still unsent is counted in
    /// `unsentAtEnd`: held back by a full window or socket, or by its client being offline.
    func endPublishing() {
        now = MonotonicClock.now()
        for client in clients.indices where clients[client].phase == .connected && !clients[client].awaitingWindow {
            publishDue(client)
        }
        flushDirty()
        publishing = false
        for client in clients.indices {
            let fleet = clients[client].fleet
            let owed = clients[client].publisher.owedAtEnd(
                now: now, connected: clients[client].phase == .connected, buffers: fleets[fleet].offlineBuffers)
            metrics.fleets[fleet].counters.unsentAtEnd &+= owed.unsent
            metrics.fleets[fleet].counters.offline.add(owed.offline)
        }
    }

    /// The drain is over: every QoS 1/2 message still awaiting its ack within its deadline, on any client
    /// (offline ones keep theirs in a persistent session), is `unackedAtEnd`.
    func countUnackedAtEnd() {
        for client in clients.indices {
            let awaiting = clients[client].session.awaitingWithinDeadline
            metrics.fleets[clients[client].fleet].counters.unackedAtEnd.qos1 &+= UInt64(awaiting.qos1)
            metrics.fleets[clients[client].fleet].counters.unackedAtEnd.qos2 &+= UInt64(awaiting.qos2)
        }
    }

    /// Starts every stream's schedule of a connected client (once; later connects resume the same schedule).
    func startPublishing(_ client: Int) {
        guard clients[client].phase == .connected else { return }
        startVehicleClock(client)
        let fleet = clients[client].fleet
        let resumed = clients[client].publisher.resumeFromOffline(now: now, buffers: fleets[fleet].offlineBuffers)
        metrics.fleets[fleet].counters.offline.add(resumed)
        startSchedules(client, plans: { _ in true })
        publishDue(client)
    }

    /// Starts the schedules of `client`'s streams whose plan `plans` accepts and that have none yet, from now.
    func startSchedules(_ client: Int, plans: (PublishPlan) -> Bool) {
        clients[client].publisher.startSchedules(
            now: now, seed: configuration.seed, shapes: fleets[clients[client].fleet].scheduleShapes, plans: plans)
    }

    /// An acknowledgement freed a slot of the in-flight window.
    ///
    /// A client whose window was full resumes once half of it is free, not at every ack: refilling one slot per
    /// ack degenerates a window of 32 into 32 one-message writes, each a TCP segment and a wakeup of the broker;
    /// refilling in halves sends the backlog 16 messages to a write. The window is still honoured, the wait shows
    /// as schedule lag, and a client that never fills its window is not affected. Against a broker seen holding
    /// acks back (Nagle's algorithm: `brokerHoldsAcks`) every ack refills: the broker sends the next ones only
    /// once these are acknowledged, and a PUBLISH carries that acknowledgement where waiting for half the
    /// window would take a TCP_QUICKACK of its own at every read.
    func windowOpened(_ client: Int) {
        // The machine is taken out for the call: it reads the window (the session, in `clients`) only while the
        // client waits, and `clients` must not be under a mutation then.
        var batching = clients[client].ackBatching
        let opened = batching.windowOpened(window: windowState(client), retry: configuration.ackBatchingRetry)
        clients[client].ackBatching = batching
        switch opened {
        case .publish:
            break
        case .keepWaiting:
            return
        case .resume(let rearmed):
            if rearmed { metrics.fleets[clients[client].fleet].counters.lowWatermarkRearms &+= 1 }
            clients[client].publisher.becameSendable(at: now)
        }
        publishDue(client)
    }

    /// The session's in-flight window and count, read in place: these are computed properties of another
    /// module, and reading them through `clients[client].session` copied the whole session out of the array
    /// first (a memmove and a retain per reference it holds) at every acknowledgement.
    @inline(__always)
    func windowState(_ client: Int) -> (window: Int, inFlight: Int) {
        withUnsafeMutablePointer(to: &clients[client].session) { ($0.pointee.inFlightWindow, $0.pointee.inFlightCount) }
    }

    /// Sends what every stream of the client has due, then sleeps until the earliest next slot.
    func publishDue(_ client: Int) {
        clients[client].ackBatching.publishTurnStarted()
        guard publishing, clients[client].phase == .connected else { return }
        // Backpressure: while the socket has not taken the last batch, produce nothing more. The backlog stays
        // in the schedule, where it shows as schedule lag; `flush` wakes this again once the buffer drained.
        guard !clients[client].wantsWritable, clients[client].network?.held != true else {
            wheel.cancel(client: client, kind: TimerKind.publish)
            return
        }
        if fleets[clients[client].fleet].vehicleModel != nil, cutIfInTunnel(client) { return }
        var turn = clients[client].publisher.beginTurn(now: now)
        while let slot = clients[client].publisher.next(in: &turn) {
            let outcome = send(client, slot)
            clients[client].publisher.record(outcome, of: slot, in: &turn)
        }
        let fleet = clients[client].fleet
        metrics.fleets[fleet].counters.droppedSlots &+= turn.dropped
        metrics.fleets[fleet].counters.offline.flushed &+= turn.flushed
        stage(client)
        // A window that filled with nothing left to write (the message that found it full came due after the
        // last write) gets its mark now; a client with bytes to write gets it after the flush.
        if !clients[client].isDirty { adjustLowWatermark(client) }
        if let wake = turn.wake {
            wheel.schedule(client: client, kind: TimerKind.publish, deadline: wake)
        } else {
            wheel.cancel(client: client, kind: TimerKind.publish)
        }
        scheduleSessionDeadline(client)
    }

    /// Encodes and stages one message the publisher handed out, and counts it.
    private func send(_ client: Int, _ slot: ClientPublisher.Slot) -> ClientPublisher.Outcome {
        let stream = slot.stream
        let due = slot.send
        let fleet = clients[client].fleet
        // The fields one by one: a copy of the whole stream state (schedule, payload, request) cost retains and
        // releases per message.
        let streamID = clients[client].publisher.streams[stream].streamID
        let progressSlot = Int(clients[client].publisher.streams[stream].progressSlot)
        let qos = clients[client].publisher.streams[stream].qos
        let retain = clients[client].publisher.streams[stream].retain
        // Dense numbering of what was actually published (a slot dropped while offline takes no number), so a
        // stream's published count is its next sequence number (`StreamProgress`, entitlement windows). Only
        // this lane writes the stream's count.
        let sequence = progress.published(slot: progressSlot)
        let now = self.now
        let header = EndToEndHeader(streamID: streamID, sequence: sequence, intendedTime: due.intendedTime,
                                    runID: runID, sentTime: now)
        let tag = UInt64(streamID) << 32 | (sequence & 0xFFFF_FFFF)
        var topic = clients[client].publisher.streams[stream].topic
        var properties = MQTTEncodedProperties.empty
        if let request = clients[client].publisher.streams[stream].request {
            let target: Int
            if request.random {
                target = Int(clients[client].random.next(below: UInt64(request.targetCount)))
            } else {
                target = (clients[client].indexInFleet &+ Int(truncatingIfNeeded: sequence)) % request.targetCount
            }
            topic = fleets[request.targetFleet].commandTopics[target]
            properties = request.properties
        }
        let result: MQTTPublishResult
        switch clients[client].publisher.streams[stream].payload {
        case .binary(let size):
            result = clients[client].session.publish(
                topic: topic, qos: qos, retain: retain, properties: properties, payloadCount: size,
                intendedAt: due.intendedTime, tag: tag, now: now, into: &scratch
            ) { payload in
                EndToEndPayload.write(header: header, into: payload)
            }
        case .text(let text):
            result = clients[client].session.publish(
                topic: topic, qos: qos, retain: retain, properties: properties, payloadCount: text.count,
                intendedAt: due.intendedTime, tag: tag, now: now, into: &scratch
            ) { payload in
                text.withUnsafeBytes { payload.copyMemory(from: $0) }
            }
        case .template(let template, let clientID):
            let rendered = render(template, client: client, clientID: clientID, header: header,
                                  sequence: sequence, intendedTime: due.intendedTime)
            result = clients[client].session.publish(
                topic: topic, qos: qos, retain: retain, properties: properties, payloadCount: rendered.count,
                intendedAt: due.intendedTime, tag: tag, now: now, into: &scratch
            ) { payload in
                rendered.withUnsafeBytes { payload.copyMemory(from: $0) }
            }
        }
        switch result {
        case .sent:
            metrics.fleets[fleet].counters.published[qos] += 1
            progress.setPublished(slot: progressSlot, sequence &+ 1)
            if clients[client].publisher.streams[stream].request != nil { metrics.fleets[fleet].counters.requestsSent += 1 }
            if let lags = clients[client].publisher.lags(of: slot, now: now) {
                metrics.fleets[fleet].latency.record(.scheduleLag, from: .intended, microseconds: lags.schedule / 1000)
                metrics.fleets[fleet].generatorLag.record(lags.generator / 1000)
            }
            return .sent
        case .windowFull:
            clients[client].ackBatching.windowFull()
            return .windowFull
        case .notConnected, .packetTooLarge, .qosNotSupported:
            metrics.fleets[fleet].counters.droppedSlots += 1
            return .dropped
        }
    }

    /// Renders a template message into the lane's render buffer (reused: no allocation once it has grown).
    /// A JSON-object template carries the text header as its first member; any other gets the binary header in
    /// front. Both carry the run id and the actual send time.
    private func render(_ template: PayloadTemplate, client: Int, clientID: [UInt8], header: EndToEndHeader,
                        sequence: UInt64, intendedTime: UInt64) -> [UInt8] {
        renderBuffer.removeAll(keepingCapacity: true)
        var random = clients[client].random
        let context = PayloadContext(
            clientID: clientID, clientIndex: clients[client].indexInFleet, sequence: sequence,
            timestampMilliseconds: (intendedTime &+ wallClockOffset) / 1_000_000,
            vehicle: template.usesVehicle ? vehicleSample(client, at: intendedTime) : .none)
        switch template.headerForm {
        case .text:
            template.render(into: &renderBuffer, context: context, random: &random, header: header)
        case .binary:
            header.appendBinary(to: &renderBuffer)
            template.render(into: &renderBuffer, context: context, random: &random)
        }
        clients[client].random = random
        return renderBuffer
    }
}

/// Payload layout of fleetbench binary messages: the end-to-end header (which carries the actual send time),
/// then zeros up to the configured size.
enum EndToEndPayload {
    @inline(__always)
    static func write(header: EndToEndHeader, into payload: UnsafeMutableRawBufferPointer) {
        let written = header.writeBinary(to: payload)
        if written < payload.count {
            (payload.baseAddress! + written).initializeMemory(as: UInt8.self, repeating: 0, count: payload.count - written)
        }
    }
}
