import FleetMetrics
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession

/// Connecting, reading, flushing and closing: the lane's socket work.
extension Lane {
    // MARK: Connect

    /// The connect timer: start an attempt if the client is idle and its fleet's pacer allows.
    func startConnect(_ client: Int) {
        let fleet = clients[client].fleet
        guard !stopping, clients[client].phase == .idle else { return }
        let window = connectWindows.slot(of: clients[client].broker)
        // A full window queues the client; the end of a connect to the same address wakes it.
        guard connectWindows.admit(client, slot: window) else { return }
        let connectTimeout = fleets[fleet].configuration.connectTimeout
        let start = clients[client].connection.connectTimerFired(
            now: now, stopping: stopping, pacer: &pacers[fleet], tick: wheel.tickNanoseconds, connectTimeout: connectTimeout)
        switch start {
        case .none:
            return
        case .paced(let retryAt):
            wheel.schedule(client: client, kind: TimerKind.connect, deadline: retryAt)
        case .open(let isReconnect, let timeoutAt):
            connectWindows.started(slot: window)
            metrics.fleets[fleet].counters.connectsAttempted += 1
            if isReconnect { metrics.fleets[fleet].counters.reconnects += 1 }
            // The emulated link draws this attempt's delays, losses and cuts from streams of its own.
            clients[client].network?.beginAttempt()
            let broker = clients[client].broker
            do {
                let socket = try TCPSocket.makeNonBlocking(family: broker.family)
                clients[client].socket = socket
                if let source = clients[client].source { try socket.bind(to: source) }
                try epoll.add(socket.fileDescriptor, events: [.readable, .writable], token: UInt64(client))
                clients[client].wantsWritable = true
                wheel.schedule(client: client, kind: TimerKind.connectTimeout, deadline: timeoutAt)
                if try socket.connect(to: broker) == .connected { tcpReady(client) }
            } catch {
                connectFailed(client, reason: Self.connectFailure(error))
            }
        }
    }

    /// Writability after a connect in progress: check SO_ERROR, then write CONNECT.
    func tcpConnected(_ client: Int) {
        guard let socket = clients[client].socket else { return }
        do {
            try socket.finishConnect()
        } catch {
            connectFailed(client, reason: Self.connectFailure(error))
            return
        }
        metrics.fleets[clients[client].fleet].latency.record(.tcpConnect, startedAt: clients[client].connection.connectStartedAt, completedAt: now)
        if receiveRing != nil { armRingReceive(client) }
        guard clients[client].socket != nil else { return }
        if let endpoint = clients[client].endpoint {
            startLayers(client, endpoint)
        } else {
            startSession(client)
        }
    }

    func connectTimedOut(_ client: Int) {
        switch connectionEvent(client, { $0.connectTimeoutFired(now: now, reconnect: $2, random: &$1) }) {
        case .none:
            break
        case .handshakeTimedOut:
            handshakeTimedOut(client)
        case .tcpTimedOut(let teardown):
            tearDown(client, teardown)
        case .connAckTimedOut(let teardown):
            // The session reports the CONNACK deadline itself (counted by kind); this only backs it up.
            metrics.fleets[clients[client].fleet].counters.ackTimeouts[.connack] += 1
            tearDown(client, teardown)
        }
    }

    /// An event of the client's connection machine that may end the connection: it gets the fleet's reconnect
    /// policy and the client's random generator (taken out and put back: both live in the client).
    @inline(__always)
    func connectionEvent<Result>(
        _ client: Int,
        _ event: (inout ClientConnectionMachine, inout SeededRandom, ClientConnectionMachine.Reconnect) -> Result
    ) -> Result {
        let reconnect = ClientConnectionMachine.Reconnect(policy: fleets[clients[client].fleet].configuration.reconnect,
                                                          stopping: stopping)
        var machine = clients[client].connection
        var random = clients[client].random
        let result = event(&machine, &random, reconnect)
        clients[client].connection = machine
        clients[client].random = random
        return result
    }

    static func connectFailure(_ error: any Error) -> ConnectFailureReason {
        if let error = error as? SystemError {
            return error.errno == ECONNREFUSED ? .refused : .socketError(errno: error.errno)
        }
        return .socketError(errno: 0)
    }

    /// A connect that did not reach CONNACK: count it, close, and follow the reconnect policy.
    func connectFailed(_ client: Int, reason: ConnectFailureReason) {
        tearDown(client, connectionEvent(client) { $0.connectFailed(reason, now: now, reconnect: $2, random: &$1) })
    }

    /// CONNACK with a failure code (counted per code; the policy decides the reconnect).
    func connAckRefused(_ client: Int, code: UInt8) {
        tearDown(client, connectionEvent(client) { $0.connAckRefused(code: code, now: now, reconnect: $2, random: &$1) })
    }

    /// The end of a connect (CONNACK, refusal, failure) for its broker address's window: `retransmitted` as in
    /// `ConnectWindow.finished`. Wakes the clients the window now has places for.
    func connectWindowFinished(_ client: Int, retransmitted: Bool?) {
        let fleet = clients[client].fleet
        if retransmitted == true { metrics.fleets[fleet].counters.connectsRetransmitted += 1 }
        let decreased = connectWindows.finished(
            slot: connectWindows.slot(of: clients[client].broker), startedAt: clients[client].connection.connectStartedAt,
            retransmitted: retransmitted, now: now
        ) { waiting in
            wheel.schedule(client: waiting, kind: TimerKind.connect, deadline: now &+ 1)
        }
        if decreased { metrics.fleets[fleet].counters.connectWindowDecreases += 1 }
    }

    /// The connection ended or broke (before CONNACK: the connect failed).
    func connectionLost(_ client: Int, reason: DisconnectReason) {
        switch connectionEvent(client, { $0.linkLost(reason, now: now, reconnect: $2, random: &$1) }) {
        case .ignored: break
        case .handshakeInterrupted: handshakeInterrupted(client, reason: reason)
        case .tearDown(let teardown): tearDown(client, teardown)
        }
    }

    /// The one way a client's connection ends, whatever ended it (a failed connect, a lost link, a refused
    /// CONNACK, a tunnel, an emulated drop or outage, churn, the end of the run), as its connection machine
    /// decided: count it, give back what the attempt or connection held (the pacer's slot before CONNACK, the
    /// connected gauges and entitlement windows after), close the socket, tell the session, cancel the
    /// connection's timers, and arm the reconnect.
    func tearDown(_ client: Int, _ teardown: Teardown) {
        let fleet = clients[client].fleet
        switch teardown.record {
        case .connectFailure(let reason): metrics.fleets[fleet].counters.recordConnectFailure(reason)
        case .disconnect(let reason): metrics.fleets[fleet].counters.recordDisconnect(reason)
        case .nothing: break
        }
        switch teardown.released {
        case .connection: markDisconnected(client)
        case .connectSlot:
            pacers[fleet].finished()
            connectWindowFinished(client, retransmitted: nil)
        case .nothing: break
        }
        closeSocket(client, abortive: teardown.close == .abortive)
        var discard = DiscardingSessionSink()
        // Only `.requestAbandoned` comes out of this call: nothing the lane records.
        clients[client].session.connectionLost(now: now, events: &discard)
        wheel.cancel(client: client, kind: TimerKind.session)
        wheel.cancel(client: client, kind: TimerKind.publish)
        wheel.cancel(client: client, kind: TimerKind.connectTimeout)
        if case .reconnect(let at) = teardown.next { wheel.schedule(client: client, kind: TimerKind.connect, deadline: at) }
    }

    /// DISCONNECT, written and flushed at once (churn, end of run); the close follows. A failed flush tears
    /// the connection down as lost.
    func sayGoodbye(_ client: Int) {
        clients[client].session.disconnect(now: now, into: &scratch)
        stage(client)
        flush(client)
    }

    func markConnected(_ client: Int) {
        let fleet = clients[client].fleet
        gauges.total.increment()
        gauges.fleets[fleet].increment()
        metrics.fleets[fleet].connected += 1
        if let link = clients[client].network { networkConnected(client, link) }
    }

    func markDisconnected(_ client: Int) {
        entitlementCut(client)
        gauges.total.decrement()
        gauges.fleets[clients[client].fleet].decrement()
        metrics.fleets[clients[client].fleet].connected -= 1
    }

    func closeSocket(_ client: Int, abortive: Bool) {
        guard let socket = clients[client].socket else { return }
        if let link = clients[client].network { networkClosed(client, link) }
        if let transport = clients[client].transport {
            if !abortive { closeLayers(client, transport, socket: socket) }
            clients[client].transport = nil
        }
        cancelRingReceive(client, socket)
        try? epoll.remove(socket.fileDescriptor)
        if abortive { try? socket.closeAbortively() } else { try? socket.close() }
        clients[client].socket = nil
        clients[client].ackBatching = AckBatchingMachine()
        wheel.cancel(client: client, kind: TimerKind.lowWatermarkProbe)
        clients[client].wantsWritable = false
        clients[client].inbound = []
        clients[client].outbound.removeAll()
        clients[client].outbound.releaseStorage()
    }

    // MARK: Events

    func handleSocketEvent(client: Int, flags: EpollEvents) {
        guard client < clients.count, clients[client].socket != nil else { return }
        if clients[client].phase == .connecting {
            if !flags.isDisjoint(with: [.writable, .error, .hangup]) { tcpReady(client) }
            return
        }
        if flags.contains(.writable) { flush(client) }
        // The ring reads this socket, and reports its end of stream or error itself.
        if readsThroughRing(client) { return }
        if !flags.isDisjoint(with: [.readable, .error, .hangup]) { readAvailable(client) }
    }

    /// Reads what the socket has (bounded per turn so one busy connection cannot starve the lane).
    func readAvailable(_ client: Int) {
        var readBytes = false
        defer { if readBytes { afterRead(client) } }
        for _ in 0..<4 {
            guard let socket = clients[client].socket else { return }
            let result: TCPSocket.ReadResult
            do {
                result = try socket.read(into: readBuffer)
            } catch {
                connectionLost(client, reason: .socketError(errno: error.errno))
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .endOfStream:
                connectionLost(client, reason: .closedByPeer)
                return
            case .bytes(let count):
                // Receive time per read: later reads of a turn must not inherit the turn's start, or a message
                // sent after the turn began would arrive "before" its send time (a negative latency).
                now = MonotonicClock.now()
                readBytes = true
                metrics.fleets[clients[client].fleet].counters.bytesIn += UInt64(count)
                if let transport = clients[client].transport {
                    if !receiveLayered(client, transport, count: count) || clients[client].socket == nil { return }
                } else if !receive(client, bytes: UnsafeRawBufferPointer(start: readBuffer.baseAddress, count: count)) {
                    return
                }
                if count < readBuffer.count || clients[client].network?.readPaused == true { return }
            }
        }
    }

    /// After a turn's reads of a client: acknowledge what was read if nothing answers it, and set the mark for
    /// the next wakeup (a client with bytes to write sets it after its flush).
    func afterRead(_ client: Int) {
        acknowledgeIfSilent(client)
        if !clients[client].isDirty { adjustLowWatermark(client) }
        if let probeAt = clients[client].ackBatching.readFinished(now: now) {
            wheel.schedule(client: client, kind: TimerKind.lowWatermarkProbe, deadline: probeAt)
        }
    }

    /// SO_RCVLOWAT for the next wakeup, as the client's `AckBatchingMachine` wants it. The lane's part of the
    /// decision: the mark may be raised only on a connected plain-TCP client with nothing to write, no partial
    /// packet kept, no subscription (a message for it must be read, and timed, when it comes) and no emulated link.
    func adjustLowWatermark(_ client: Int) {
        guard let socket = clients[client].socket else { return }
        let batching = clients[client].ackBatching  // read outside `clients`: its conditions read `clients`
        let wanted = batching.wantedMark(
            eligible: !clients[client].wantsWritable && !clients[client].isDirty && clients[client].transport == nil
                && clients[client].inbound.isEmpty && clients[client].phase == .connected
                && !clients[client].hasSubscriptions && clients[client].network == nil,
            window: windowState(client))
        guard let mark = wanted else { return }
        var accepted = true
        // While the lane looks for held acks beside a receive ring, the socket's mark is set at the look's end.
        if receiveRing?.quietClient != client {
            do { try socket.setReceiveLowWatermark(mark) } catch { accepted = false }
        }
        switch clients[client].ackBatching.markApplied(mark, accepted: accepted, now: now) {
        case .arm(let deadline): wheel.schedule(client: client, kind: TimerKind.lowWatermarkProbe, deadline: deadline)
        case .cancel: wheel.cancel(client: client, kind: TimerKind.lowWatermarkProbe)
        }
    }

    /// The probe of a raised mark (`AckBatchingMachine.probeFired`). A broker with Nagle's algorithm on sends its
    /// first small ack and holds the next ones until that one is acknowledged, which a socket nobody reads does
    /// only at its delayed-ACK timer: at a stall the lane reads what is there and acknowledges it at once, then
    /// looks again (FIONREAD) and reads what came. A busy broker on a loaded machine thus costs a read at a probe
    /// now and then, not the batching.
    func probeLowWatermark(_ client: Int) {
        guard let socket = clients[client].socket else { return }
        let retry = configuration.ackBatchingRetry
        let probe = clients[client].ackBatching.probeFired(
            queued: (try? socket.queuedBytes()) ?? -1, readsThroughRing: readsThroughRing(client), now: now, retry: retry)
        switch probe {
        case .none:
            return
        case .again(let deadline):
            wheel.schedule(client: client, kind: TimerKind.lowWatermarkProbe, deadline: deadline)
        case .stalled(let read, let fellBack):
            // Lowering the mark wakes a receive ring's pending receive (tcp_set_rcvlowat signals the data).
            try? socket.setReceiveLowWatermark(1)
            if fellBack { countAckBatchingFallback(client) }
            if read { readAvailable(client) }
        case .lookForHeldAcks(let pending) where readsThroughRing(client):
            lookForHeldAcksBesideRing(client, socket, pending, retry: retry)
        case .lookForHeldAcks(let pending):
            // Below the mark: the read must not wait for it (the read sets the next mark).
            try? socket.setReceiveLowWatermark(1)
            readAvailable(client)
            lookForHeldAcks(client, pending, retry: retry)
        }
    }

    /// After a read emptied the socket: acknowledges at once (even when this turn writes, whose segment would carry
    /// the acknowledgement only later), looks whether the broker sent acks it held for it, and applies the machine's
    /// answer: the held acks read (the read sets the next mark, 1 if the connection just fell back) or the mark set.
    private func lookForHeldAcks(_ client: Int, _ pending: AckBatchingMachine.PendingLook, retry: AckBatchingRetry) {
        guard let socket = clients[client].socket else { return }
        try? socket.acknowledgeNow()
        let shown = ((try? socket.queuedBytes()) ?? 0) > 0
        switch clients[client].ackBatching.heldAcksLooked(shown: shown, pending, retry: retry) {
        case .readHeldAcks(let fellBack):
            if fellBack { countAckBatchingFallback(client) }
            readAvailable(client)
        case .adjustMark(let fellBack):
            if fellBack { countAckBatchingFallback(client) }
            if !clients[client].isDirty { adjustLowWatermark(client) }
        case .nothing:
            break
        }
    }

    /// A mark no burst of acks reaches (a window's acks are 4 bytes each), small enough that the kernel does not
    /// grow the socket's receive buffer for it: it keeps a ring's receive asleep while the lane looks itself.
    static let ringQuietMark: Int32 = 16_384

    /// `probeLowWatermark`'s look for held acks on a socket a receive ring reads. The acknowledgement goes out only
    /// once the receive queue is empty (the kernel's `tcp_cleanup_rbuf`), so the bytes must be read first; the
    /// lane reads them itself, with recv(2), while a mark nothing reaches keeps the ring's receive from waking (its
    /// multishot receive takes bytes only when the socket signals them), looks, then sets the mark its
    /// `AckBatchingMachine` holds: from then on the ring reads again (a mark of 1 with bytes queued wakes it at
    /// once). Completions already in the ring's queue may hold this socket's earlier bytes: then the ring reads,
    /// and the stall counts as showing held acks (as no look can be made).
    private func lookForHeldAcksBesideRing(
        _ client: Int, _ socket: TCPSocket, _ pending: AckBatchingMachine.PendingLook, retry: AckBatchingRetry
    ) {
        try? socket.setReceiveLowWatermark(Self.ringQuietMark)
        if let receiving = receiveRing, receiving.ring.readyCount > 0 {
            try? socket.setReceiveLowWatermark(1)
            switch clients[client].ackBatching.heldAcksLooked(shown: true, pending, retry: retry) {
            case .readHeldAcks(let fellBack), .adjustMark(let fellBack):
                if fellBack { countAckBatchingFallback(client) }
            case .nothing:
                break
            }
            return
        }
        receiveRing?.quietClient = client
        defer { receiveRing?.quietClient = -1 }
        readAvailable(client)  // its `afterRead` may raise the machine's mark again: set below
        lookForHeldAcks(client, pending, retry: retry)
        guard let socket = clients[client].socket else { return }
        try? socket.setReceiveLowWatermark(clients[client].ackBatching.mark)
    }

    func countAckBatchingFallback(_ client: Int) {
        metrics.fleets[clients[client].fleet].counters.lowWatermarkFallbacks &+= 1
    }

    /// Acks were read and this turn writes nothing back: the kernel would delay its TCP acknowledgement (40 ms
    /// or more), and a broker with Nagle's algorithm on (mosquitto's default) holds its next acks until it comes;
    /// a window of 32 then advanced a few acks per delayed-ACK timer. With TCP_QUICKACK the broker sends the
    /// rest at once. A client with bytes to flush needs no call: its next segment carries the acknowledgement.
    /// Only while messages are in flight: that is when the broker owes more and the wait would be ours.
    func acknowledgeIfSilent(_ client: Int) {
        guard !clients[client].isDirty, windowState(client).inFlight > 0,
              let socket = clients[client].socket else { return }
        try? socket.acknowledgeNow()
    }

    /// Hands `count` freshly read bytes to the session. Whole packets are decoded straight from the lane's read
    /// buffer; only the bytes of an unfinished packet are copied into the client. False when the client closed.
    func receive(_ client: Int, bytes: UnsafeRawBufferPointer) -> Bool {
        if let link = clients[client].network, !link.delivering { return queueInbound(client, link, bytes) }
        let count = bytes.count
        var sink = LaneSessionSink(lane: self, client: client)
        if clients[client].inbound.isEmpty {
            let consumed = deliver(bytes, to: client, sink: &sink)
            if consumed < count { clients[client].inbound.append(contentsOf: bytes[consumed...]) }
        } else {
            var pending = clients[client].inbound
            clients[client].inbound = []
            pending.append(contentsOf: bytes)
            let consumed = pending.withUnsafeBytes { deliver($0, to: client, sink: &sink) }
            if consumed < pending.count {
                pending.removeSubrange(0..<consumed)
                clients[client].inbound = pending
            }
        }
        stage(client)
        return sink.finish()
    }

    /// Decodes and hands over every whole packet in `bytes`; returns how many bytes were consumed.
    private func deliver(_ bytes: UnsafeRawBufferPointer, to client: Int, sink: inout LaneSessionSink) -> Int {
        let settings = clients[client].session.settings
        var offset = 0
        while offset < bytes.count {
            let view: MQTTPacketView?
            do {
                view = try MQTTDecoder.view(in: bytes, from: offset, to: bytes.count, version: settings.version,
                                            maximumPacketSize: settings.decoderMaximumPacketSize)
            } catch {
                clients[client].session.receiveFailed(error, now: now, output: &scratch, events: &sink)
                return bytes.count
            }
            guard let view else { return offset }
            sink.properties = UnsafeRawBufferPointer(rebasing: bytes[view.propertiesRange])
            clients[client].session.receive(view, in: bytes, now: now, output: &scratch, events: &sink)
            offset = view.packetRange.upperBound
            let state = clients[client].session.state
            if state == .closing || state == .disconnected { return bytes.count }
        }
        return offset
    }

    // MARK: Writing

    /// Moves the session's output from the lane scratch into the client's outbound buffer and marks the
    /// client for the end-of-turn flush.
    func stage(_ client: Int) {
        guard scratch.readableCount > 0 else { return }
        defer { scratch.clear() }
        guard clients[client].socket != nil else { return }
        // At the end of the run the DISCONNECT goes out at once: the socket is closed right after it.
        if let link = clients[client].network, !stopping {
            queueOutbound(client, link)
            return
        }
        // Layered clients collect the turn's MQTT bytes as plaintext, framed and encrypted at flush.
        let target = clients[client].transport?.plaintext ?? clients[client].outbound
        let appended = scratch.withUnsafeReadableBytes { target.append($0) }
        if !appended {
            // Backpressure beyond the buffer's cap: the broker stopped reading. Treat as a broken connection.
            connectionLost(client, reason: .socketError(errno: ENOBUFS))
            return
        }
        metrics.fleets[clients[client].fleet].counters.bytesOut += UInt64(scratch.readableCount)
        markDirty(client)
    }

    func flush(_ client: Int) {
        guard let socket = beginFlush(client) else { return }
        let result: OutboundBuffer.FlushResult
        do {
            result = try clients[client].outbound.flush(to: socket)
        } catch {
            connectionLost(client, reason: .socketError(errno: error.errno))
            return
        }
        finishFlush(client, socket: socket, result: result)
    }

    /// Clears the dirty mark and seals the transport layers: the socket to write the outbound bytes to, or nil
    /// when the client has no connection (any more).
    func beginFlush(_ client: Int) -> TCPSocket? {
        clients[client].isDirty = false
        guard let socket = clients[client].socket else { return nil }
        if let transport = clients[client].transport, !sealLayers(client, transport) { return nil }
        return socket
    }

    /// After a write: EPOLLOUT interest while bytes remain, publishing resumed once they are gone, an idle
    /// client's buffers given back.
    func finishFlush(_ client: Int, socket: TCPSocket, result: OutboundBuffer.FlushResult) {
        do {
            let wantsWritable = result == .pending
            if wantsWritable != clients[client].wantsWritable {
                clients[client].wantsWritable = wantsWritable
                try epoll.modify(socket.fileDescriptor, events: readInterest(client, writable: wantsWritable),
                                 token: UInt64(client))
                // Drained after backpressure: resume publishing at the next turn (not now: this may run inside
                // the end-of-turn flush loop, which must not gain new dirty clients).
                if !wantsWritable && publishing && !clients[client].publisher.isEmpty {
                    clients[client].publisher.becameSendable(at: now)
                    wheel.schedule(client: client, kind: TimerKind.publish, deadline: now)
                }
            }
            if !wantsWritable { adjustLowWatermark(client) }
            if !wantsWritable && clients[client].publisher.isEmpty {
                clients[client].outbound.releaseStorage()
                if let transport = clients[client].transport {
                    transport.plaintext.releaseStorage()
                    transport.frames.releaseStorage()
                }
            }
        } catch {
            connectionLost(client, reason: .socketError(errno: error.errno))
        }
    }

    /// The end-of-turn flush through the lane's `SendRing`: every dirty client's bytes in one submission (more
    /// only past the ring's capacity), then each completion handled as `flush` would handle its write.
    func flushBatched(_ dirty: [Int32], ring: SendRing) {
        for entry in dirty {
            let client = Int(entry)
            guard let socket = beginFlush(client) else { continue }
            let pending = clients[client].outbound.readableBytes
            if pending.isEmpty {
                finishFlush(client, socket: socket, result: .complete)
                continue
            }
            if ring.prepare(socket, pending, token: UInt64(client)) { continue }
            submitSends(ring)  // full: send what is prepared, then this one
            if !ring.prepare(socket, pending, token: UInt64(client)) { writeDirectly(client, socket: socket) }
        }
        submitSends(ring)
    }

    private func submitSends(_ ring: SendRing) {
        guard ring.pendingCount > 0 else { return }
        ring.submit { token, completion in
            let client = Int(token)
            guard let socket = clients[client].socket else { return }
            switch completion {
            case .sent(let count):
                finishFlush(client, socket: socket, result: clients[client].outbound.markWritten(count))
            case .wouldBlock:
                finishFlush(client, socket: socket, result: .pending)
            case .failed(let code):
                connectionLost(client, reason: .socketError(errno: code))
            case .notSubmitted:
                writeDirectly(client, socket: socket)
            }
        }
    }

    private func writeDirectly(_ client: Int, socket: TCPSocket) {
        do {
            finishFlush(client, socket: socket, result: try clients[client].outbound.flush(to: socket))
        } catch {
            connectionLost(client, reason: .socketError(errno: error.errno))
        }
    }
}
