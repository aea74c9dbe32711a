import FleetTransport
import Glibc

/// How a run's reads went (`EngineResult.receivePath`, `generator.receive_path`).
public enum ReceivePath: String, Sendable, Equatable {
    /// Plain TCP connections read by multishot io_uring receives (TLS and WebSocket ones still by recv(2)).
    case ioUring = "io_uring"
    /// epoll_wait, then one recv(2) per ready socket.
    case epoll = "epoll+recv"
    /// Some lanes (or part of the run) each way.
    case mixed = "io_uring+epoll"

    static func combined(_ paths: [ReceivePath]) -> ReceivePath {
        if !paths.isEmpty && paths.allSatisfy({ $0 == .ioUring }) { return .ioUring }
        if paths.allSatisfy({ $0 == .epoll }) { return .epoll }
        return .mixed
    }

    /// FLEETBENCH_RECEIVE_PATH=io_uring or epoll: the default of `EngineConfiguration.ringReceives`, so a whole test
    /// suite or a run can be taken either way without changing its configuration.
    static var deferredEnvironmentDefault: Bool? {
        guard let value = getenv("FLEETBENCH_RING_DEFER") else { return nil }
        switch String(cString: value) {
        case "1": return true
        case "0": return false
        default: return nil
        }
    }

    static var environmentDefault: Bool? {
        guard let value = getenv("FLEETBENCH_RECEIVE_PATH") else { return nil }
        switch String(cString: value) {
        case "io_uring": return true
        case "epoll", "epoll+recv": return false
        default: return nil
        }
    }
}

/// A lane's receive ring and what it knows per client. Touched only on the lane's queue, except `ring.block()`
/// (the driver thread's wait, which only looks at the completion queue).
final class LaneReceiveRing {
    let ring: ReceiveRing
    /// Per lane client: bumped whenever its receive is armed anew or cancelled, and carried in the request's token,
    /// so completions of a closed connection (already in the queue) are told from those of the slot's next one.
    var generation: [UInt32]
    /// Per lane client: its socket is read by a multishot receive (armed, or ended and waiting in `rearm`).
    var armed: [Bool]
    /// Clients whose receive ended without the connection ending (no free buffer, cancelled by a thread's exit):
    /// armed again once the turn's buffers are back.
    var rearm: [Int32] = []
    /// A poll completion for the epoll descriptor came this turn, or the last look at epoll found events (level-
    /// triggered ones stay ready without a new wakeup of the poll).
    var epollPending = true
    var pollArmed = false
    /// Completions handled (for the driver: a turn that found none and no epoll work went back to waiting).
    var receivedThisTurn = 0
    /// Receive completions with bytes in the last drain.
    var receivesLastTurn = 0
    /// Receive completions that carried bytes, and those bytes (tests compare them with what the clients read).
    var receiveCompletions = 0
    var receivedBytes: UInt64 = 0
    /// The client whose socket the lane reads itself while it looks for held acks (`Lane.lookForHeldAcksBesideRing`):
    /// its mark stays one no ack reaches until the look ends (-1: none).
    var quietClient = -1

    init(ring: ReceiveRing, clients: Int) {
        self.ring = ring
        generation = Array(repeating: 0, count: clients)
        armed = Array(repeating: false, count: clients)
    }

    static let pollToken: UInt64 = 1 << 55
    static let generationBits: UInt64 = 23

    @inline(__always)
    func token(_ client: Int) -> UInt64 {
        UInt64(client) | (UInt64(generation[client]) & ((1 << Self.generationBits) - 1)) << 32
    }
}

extension EngineConfiguration {
    /// Why ring receives, asked for, are not used whatever the kernel allows: a fleet's network profile limits
    /// the downlink. Its backpressure (`Lane+Network`, `read_pauses`) stops reading a socket while the client's
    /// inbound queue is full, which epoll does by dropping the socket's read interest; a multishot receive keeps
    /// filling buffers with whatever arrives. So such a run reads every socket with epoll + recv(2), and says why
    /// (`EngineResult.receiveRingUnavailable`, report.json `generator.receive_ring_unavailable`). Nil otherwise.
    public var ringReceivesDeclined: String? {
        guard ringReceives else { return nil }
        let limited = fleets.filter { $0.networks.contains { $0.bandwidthDown > 0 } }.map(\.name)
        guard !limited.isEmpty else { return nil }
        return "downlink backpressure needs epoll: a network profile of "
            + (limited.count == 1 ? "fleet \(limited[0])" : "fleets " + limited.joined(separator: ", "))
            + " limits the downlink (bandwidth_down)"
    }
}

extension Lane {
    /// Opens the lane's receive ring when asked for (`EngineConfiguration.ringReceives`, thread driver only).
    static func makeReceiveRing(_ configuration: EngineConfiguration, clients: Int)
        -> (LaneReceiveRing?, SystemError?)
    {
        guard configuration.ringReceives, configuration.laneDriver == .thread,
              configuration.ringReceivesDeclined == nil else { return (nil, nil) }
        // 256 buffers of 4 KiB (1 MiB a lane): a turn's completions rarely hold more; a receive that finds
        // none free ends with ENOBUFS and is armed again at the end of the turn, its bytes still queued.
        // Deferred task work first (6.1 and later): only the driver thread submits then, and what other threads
        // prepare meanwhile (the engine's stop, faults) waits in the submission queue, so it holds a receive and a
        // cancel for every client of the lane (32,768 at most: the kernel's limit).
        let entries = min(32_768, max(1024, Self.powerOfTwo(atLeast: 2 * clients + 64)))
        do {
            guard configuration.ringDeferredTaskRun else { throw SystemError(call: "io_uring_setup", errno: EINVAL) }
            let ring = try ReceiveRing(entries: entries, buffers: 256, bufferSize: 4096, deferred: true)
            return (LaneReceiveRing(ring: ring, clients: clients), nil)
        } catch {
            // A kernel without DEFER_TASKRUN: every thread submits, each receive wakes the waiting driver.
            do {
                let ring = try ReceiveRing(entries: 1024, buffers: 256, bufferSize: 4096)
                return (LaneReceiveRing(ring: ring, clients: clients), nil)
            } catch {
                return (nil, error)
            }
        }
    }

    static func powerOfTwo(atLeast value: Int) -> Int {
        var power = 1
        while power < value { power <<= 1 }
        return power
    }

    var receivePath: ReceivePath { receiveRing == nil ? .epoll : .ioUring }

    /// Whether `client`'s socket is read by the ring (then epoll watches it for writability only).
    @inline(__always)
    func readsThroughRing(_ client: Int) -> Bool {
        receiveRing?.armed[client] ?? false
    }

    /// The epoll interest of a connected socket: readability unless the ring reads it.
    @inline(__always)
    func readInterest(_ client: Int, writable: Bool) -> EpollEvents {
        // Not while the emulated downlink's queue is full (`Lane+Network` backpressure).
        let read: EpollEvents = readsThroughRing(client) || clients[client].network?.readPaused == true ? [] : .readable
        return writable ? read.union(.writable) : read
    }

    /// TCP is up on a plain connection: its bytes come through the ring from now on.
    func armRingReceive(_ client: Int) {
        guard let receiving = receiveRing, let socket = clients[client].socket, clients[client].endpoint == nil,
              !receiving.armed[client] else { return }
        receiving.generation[client] &+= 1
        guard receiving.ring.armReceive(socket.fileDescriptor, token: receiving.token(client)) else { return }
        receiving.armed[client] = true
        do {
            try epoll.modify(socket.fileDescriptor, events: readInterest(client, writable: clients[client].wantsWritable),
                             token: UInt64(client))
        } catch {
            connectionLost(client, reason: .socketError(errno: error.errno))
        }
    }

    /// Before the socket closes: the kernel holds a socket with a receive in flight open, so cancel it first.
    func cancelRingReceive(_ client: Int, _ socket: TCPSocket) {
        guard let receiving = receiveRing, receiving.armed[client] else { return }
        receiving.armed[client] = false
        let token = receiving.token(client)
        receiving.generation[client] &+= 1
        // Off the driver thread a deferred ring leaves the cancel to the driver: woken, it submits it (the socket
        // closes then).
        if receiving.ring.cancel(socket.fileDescriptor, token: token) { try? threadDriver?.wake.signal() }
    }

    /// The ring's completions: bytes to the clients' sessions (partial packets kept per client, as after recv),
    /// ends of stream and errors to `connectionLost`, the epoll poll noted. Returns how many were handled.
    @discardableResult
    func handleRingCompletions() -> Int {
        guard let receiving = receiveRing else { return 0 }
        if !receiving.pollArmed {
            receiving.pollArmed = receiving.ring.armPoll(epoll.fileDescriptor, token: LaneReceiveRing.pollToken)
            receiving.epollPending = true
        }
        let completionsBefore = receiving.receiveCompletions
        let handled = receiving.ring.drain { completion in
            switch completion.kind {
            case .poll:
                receiving.epollPending = true
                if !completion.more { receiving.pollArmed = false }
            case .cancel:
                break
            case .receive:
                ringReceived(completion, receiving)
            }
        }
        receiving.receivedThisTurn = handled
        receiving.receivesLastTurn = receiving.receiveCompletions - completionsBefore
        if !receiving.rearm.isEmpty {
            for client in receiving.rearm {
                let client = Int(client)
                guard receiving.armed[client], let socket = clients[client].socket else { continue }
                if !receiving.ring.armReceive(socket.fileDescriptor, token: receiving.token(client)) {
                    connectionLost(client, reason: .socketError(errno: EBUSY))
                }
            }
            receiving.rearm.removeAll(keepingCapacity: true)
        }
        if !receiving.pollArmed {
            receiving.pollArmed = receiving.ring.armPoll(epoll.fileDescriptor, token: LaneReceiveRing.pollToken)
            receiving.epollPending = true
        }
        return handled
    }

    @inline(__always)
    private func ringReceived(_ completion: ReceiveRing.Completion, _ receiving: LaneReceiveRing) {
        let client = Int(truncatingIfNeeded: completion.token & 0xFFFF_FFFF)
        guard client < clients.count, receiving.armed[client], completion.token == receiving.token(client),
              clients[client].socket != nil else { return }  // a closed connection's, or its slot's previous one
        if completion.result > 0 {
            // Receive time per completion, as per read on the epoll path.
            now = MonotonicClock.now()
            metrics.fleets[clients[client].fleet].counters.bytesIn += UInt64(completion.result)
            receiving.receiveCompletions &+= 1
            receiving.receivedBytes &+= UInt64(completion.result)
            guard receive(client, bytes: completion.bytes), clients[client].socket != nil else { return }
            afterRead(client)
            if completion.more { return }
            receiving.rearm.append(Int32(client))
            return
        }
        if completion.more { return }
        if completion.result == 0 {
            connectionLost(client, reason: .closedByPeer)
            return
        }
        let code = -completion.result
        if code == ENOBUFS || code == ECANCELED || code == EINTR {
            receiving.rearm.append(Int32(client))
        } else {
            connectionLost(client, reason: .socketError(errno: code))
        }
    }

    /// The driver's loop with a receive ring: wait in io_uring_enter (which also copies the sockets' bytes), run a
    /// turn, again. epoll is looked at only when the ring's poll of it fired or the last look found events.
    func driveWithReceiveRing(_ driver: LaneThread, _ receiving: LaneReceiveRing) {
        // A deferred ring: this thread is the one that enters the kernel for it from now on.
        receiving.ring.enable()
        defer {
            // Cancels the engine's stop prepared go in before the thread (and its requests) ends.
            _ = queue.sync { receiving.ring.submitOrLeave() }
            if receiving.ring.isDeferred && driver.shutdown.load(ordering: .acquiring) { finishDeferredRing(receiving) }
        }
        let batchWait = Int(configuration.receiveBatchWait / 1000)
        var pauseUntil: UInt64 = 0
        var busy = true  // the first turn arms the poll and looks at epoll
        while !driver.shutdown.load(ordering: .acquiring) {
            var waited = false
            if pauseUntil != 0 {
                // The pause in the ring's own wait, ended early only by a full batch: a deferred ring copies the
                // receives that come meanwhile when the wait ends, without waking this thread for each (a sleep
                // elsewhere was cut short by every completion's task work under COOP_TASKRUN).
                receiving.ring.wait(batch: Self.pauseBatch, until: pauseUntil)
                pauseUntil = 0
                busy = true
                waited = true
            }
            if !busy {
                // While bytes are coming in, the wait gathers the receives of `receiveBatchWait` into one turn.
                let error: SystemError?
                if receiving.receivesLastTurn > 0 && batchWait > 0 {
                    // A deferred ring wakes a waiter for a batch only once the batch is complete, and the kernel's
                    // min_wait does not cut that short: the wait for a batch has a deadline instead.
                    error = receiving.ring.isDeferred
                        ? receiving.ring.wait(batch: Self.pauseBatch,
                                              until: MonotonicClock.now() &+ configuration.receiveBatchWait)
                        : receiving.ring.block(batch: 64, minimumWait: batchWait)
                } else {
                    error = receiving.ring.block()
                }
                if let error, error.errno != EINTR { break }
            } else if !waited && receiving.ring.isDeferred {
                // Turn after turn without a wait (epoll keeps reporting events: a reset socket the ring reads shows
                // EPOLLERR | EPOLLHUP until its receive's completion ends it): a deferred ring posts completions
                // only when this thread enters the kernel for it, so it does so now, without waiting. Without this
                // the lane spun on the reset sockets' events while their completions never came.
                receiving.ring.flush()
            }
            if driver.shutdown.load(ordering: .acquiring) { break }
            let outcome: (busy: Bool, pauseUntil: UInt64) = queue.sync {
                self.turn(ringDriven: true)
                let again = receiving.epollPending || receiving.ring.readyCount > 0
                return (again, self.pauseUntilAfterTurn())
            }
            busy = outcome.busy
            pauseUntil = outcome.pauseUntil
        }
    }

    /// The driver's last work on a deferred ring: the receives the engine's stop cancelled end (their completions
    /// posted, the kernel's hold on their sockets released, so the connections really close) only in task work this
    /// thread runs, which it does until a pass brings nothing more. Without this the sockets stayed open until the
    /// ring itself was closed, after the lane was released: a peer waiting for their end waited in vain.
    func finishDeferredRing(_ receiving: LaneReceiveRing) {
        var quietPasses = 0
        while quietPasses < 2 {
            receiving.ring.flush()
            // Every client is closed by now: each completion is a closed connection's (tokens no longer match).
            let handled = queue.sync { receiving.ring.drain { _ in } }
            quietPasses = handled == 0 ? quietPasses + 1 : 0
        }
    }

    /// Completions that end a pause early (a quarter of the ring's provided buffers are then in use).
    static let pauseBatch = 64

    /// A ring-driven turn's reads: the ring's completions, then epoll if its poll fired (or it had events last time).
    func ringTurnReads() {
        guard let receiving = receiveRing else { return }
        handleRingCompletions()
        if receiving.epollPending {
            receiving.epollPending = drainEventsCounting() > 0
        }
    }

    /// End of a turn: hand the kernel what the turn prepared (new receives, a re-armed poll).
    func submitRingRequests() {
        // Off the driver thread, a deferred ring's requests wait for the driver: wake it.
        if receiveRing?.ring.submitOrLeave() == true { try? threadDriver?.wake.signal() }
    }
}
