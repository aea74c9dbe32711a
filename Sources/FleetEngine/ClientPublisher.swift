import FleetMetrics

/// The publish side of one simulated client as a value: its streams with their schedules, the message of each
/// that a full in-flight window refused, the offline backlog a reconnect found (store and forward), and when the
/// client last became able to send.
///
/// Pure: no sockets, no clock reads, no metrics, no session. Each event comes with the time it happened (`now`)
/// and what else the decision needs (the fleet's schedule shapes and offline buffers); it answers with what the
/// lane must do or count. The lane (`Lane+Session`) keeps the rest: the MQTT session that encodes a message and
/// owns the in-flight window, the sequence numbers, the timing wheel and the counters.
///
/// A publishing turn is driven message by message, so nothing is collected and nothing allocated:
///
///     var turn = publisher.beginTurn(now: now)
///     while let slot = publisher.next(in: &turn) {
///         let outcome = encode and stage slot.send of stream slot.stream   // .sent, .windowFull or .dropped
///         publisher.record(outcome, of: slot, in: &turn)
///     }
///     count turn.dropped and turn.flushed; arm the publish timer at turn.wake (or cancel it)
///
/// Per stream, a message the window refused goes first; while the window refuses it the stream's schedule is
/// not asked. Then the schedule hands out what is due (at most its `maxPerTurn`); one the window refuses is kept
/// for the next turn and ends the stream's part of the turn. A stream that handed out everything due sets the
/// wake-up: its next intended time. Store and forward: nothing runs while a client is offline; its schedule keeps
/// counting slots, and the reconnect (`resumeFromOffline`) turns the slots that came due meanwhile into the
/// buffer's content, applying the capacity there. The buffered messages then go out through the ordinary turns
/// (catch-up), keeping their intended times; only overflowed slots are skipped, so they take no sequence number
/// and no subscriber is owed them.
struct ClientPublisher {
    /// The client's publishing streams: what each sends, its schedule (nil until it starts) and the message the
    /// window refused.
    var streams: [StreamState]
    /// Per stream, for fleets with an offline buffer: the backlog a reconnect found. Empty until then.
    private(set) var offline: [OfflineBacklog] = []
    /// When the client last became able to send again: connected, its window reopened or its socket drained.
    /// A message's delay beyond this (and beyond its slot) is the lane's own (`FleetLaneMetrics.generatorLag`).
    private(set) var sendableSince: UInt64 = 0

    init(streams: [StreamState]) {
        self.streams = streams
    }

    var isEmpty: Bool { streams.isEmpty }

    // MARK: The connection

    /// The client can send again from `now`: it connected, its window reopened or its socket took what waited.
    @inline(__always)
    mutating func becameSendable(at now: UInt64) {
        sendableSince = now
    }

    /// A reconnect: an on-connect stream whose message went out starts a new schedule at the next start (its
    /// numbering continues), so every connection sends its message. One still waiting for the window keeps it.
    mutating func restartOnConnectStreams() {
        for stream in streams.indices where streams[stream].pending == nil {
            guard let plan = streams[stream].schedule?.plan, plan == .onConnect else { continue }
            streams[stream].schedule = nil
        }
    }

    /// Starts the schedules, from `now` plus a random phase, of the streams whose plan `plans` accepts and that
    /// have none yet. `shapes`: the fleet's schedule shapes per stream (`FleetRuntime.scheduleShapes`); `seed`:
    /// the run's, each stream drawing from its own generator (by stream id).
    mutating func startSchedules(now: UInt64, seed: UInt64, shapes: [PublishShape], plans: (PublishPlan) -> Bool) {
        for stream in streams.indices where streams[stream].schedule == nil {
            let shape = shapes[stream]
            guard plans(shape.plan) else { continue }
            // Plans were validated when the engine was built, so this cannot fail here. Each client starts at
            // a random phase within its first period so a fleet does not publish in lockstep bursts.
            var random = SeededRandom(seed: seed, stream: UInt64(streams[stream].streamID))
            let start = now &+ Self.phaseOffset(shape.plan, random: &random)
            streams[stream].schedule = try? PublishSchedule(shape: shape, start: start, random: random)
        }
    }

    /// Where in its first period a stream's schedule starts.
    static func phaseOffset(_ plan: PublishPlan, random: inout SeededRandom) -> UInt64 {
        switch plan {
        case .interval(let period, _): return random.next(below: period)
        case .rate(let perSecond): return random.next(below: max(1, UInt64(1e9 / perSecond)))
        case .bursts(_, let every): return random.next(below: every)
        case .poisson, .onConnect, .closed: return 0
        }
    }

    // MARK: A publishing turn

    /// One publishing turn of the client, kept by the lane while it drives `next` and `record`.
    struct Turn {
        let now: UInt64
        /// The stream being worked on, and where in it.
        fileprivate var stream = 0
        fileprivate var step = Step.pending
        /// The current stream's schedule turn (budget, slots dropped).
        fileprivate var slots: PublishTurn
        fileprivate var earliest = UInt64.max
        /// Slots passed over under `behind: drop` in this turn: count them as dropped.
        fileprivate(set) var dropped: UInt64 = 0
        /// Buffered offline messages that went out in this turn: count them as flushed.
        fileprivate(set) var flushed: UInt64 = 0

        fileprivate enum Step {
            /// The stream's refused message, if any, goes first.
            case pending
            /// The stream's schedule starts its turn.
            case beginSchedule
            /// The schedule hands out what is due.
            case schedule
        }

        init(now: UInt64) {
            self.now = now
            slots = PublishTurn(now: now, budget: 0)
        }

        /// When to publish again, once `next` returned nil: the earliest next slot of the streams that handed out
        /// everything due. Nil: none (every stream finished, waits for the window or has no schedule).
        var wake: UInt64? { earliest == .max ? nil : earliest }

        fileprivate mutating func nextStream() {
            stream += 1
            step = .pending
        }
    }

    /// One message to encode and send now.
    struct Slot {
        let stream: Int
        /// As handed out; for a closed-model stream, intended at the send (`now`).
        let send: ScheduledSend
        /// Closed model: no intended time of its own, so no schedule lag, no generator lag, nothing owed at the end.
        let closed: Bool
        fileprivate let fromPending: Bool
    }

    /// What became of a message the lane was given.
    enum Outcome: Equatable {
        /// Encoded and staged.
        case sent
        /// The in-flight window is full: the message waits for an ack.
        case windowFull
        /// The session could not send it (not connected, too large, QoS not granted): counted as a dropped slot;
        /// the stream goes on as if it was sent.
        case dropped
    }

    func beginTurn(now: UInt64) -> Turn {
        Turn(now: now)
    }

    /// The next message to send in this turn, or nil when the turn is over (read `turn.wake`).
    @inline(__always)
    mutating func next(in turn: inout Turn) -> Slot? {
        while turn.stream < streams.count {
            let stream = turn.stream
            switch turn.step {
            case .pending:
                turn.step = .beginSchedule
                if let pending = streams[stream].pending {
                    return slot(stream, pending, now: turn.now, fromPending: true)
                }
            case .beginSchedule:
                guard let slots = streams[stream].schedule?.beginTurn(now: turn.now) else {
                    turn.nextStream()
                    continue
                }
                turn.slots = slots
                turn.step = .schedule
            case .schedule:
                if let due = streams[stream].schedule!.next(in: &turn.slots) {
                    return slot(stream, due, now: turn.now, fromPending: false)
                }
                finishStream(in: &turn)
            }
        }
        return nil
    }

    @inline(__always)
    private func slot(_ stream: Int, _ send: ScheduledSend, now: UInt64, fromPending: Bool) -> Slot {
        let closed = streams[stream].closed
        var send = send
        // Closed model: the message is intended when it actually goes out (one the window refused goes later than
        // the turn that handed it out), so its latency counts from the send.
        if closed { send.intendedTime = now }
        return Slot(stream: stream, send: send, closed: closed, fromPending: fromPending)
    }

    /// What became of `slot`, the message `next` handed out last.
    @inline(__always)
    mutating func record(_ outcome: Outcome, of slot: Slot, in turn: inout Turn) {
        let stream = slot.stream
        if outcome == .windowFull {
            if slot.fromPending {
                // Still refused: the stream waits for the window; its schedule is not asked this turn.
                turn.nextStream()
            } else {
                streams[stream].pending = slot.send
                finishStream(in: &turn)
            }
            return
        }
        if slot.fromPending {
            streams[stream].pending = nil
            guard streams[stream].schedule != nil else { return }
        }
        if !offline.isEmpty { sentFromBacklog(stream, turn: &turn) }
    }

    /// The current stream's schedule has handed out what it will this turn.
    private mutating func finishStream(in turn: inout Turn) {
        let stream = turn.stream
        turn.dropped &+= turn.slots.dropped
        if streams[stream].pending == nil, let next = streams[stream].schedule?.nextIntendedTime {
            turn.earliest = min(turn.earliest, next)
        }
        turn.nextStream()
    }

    /// The delays to record for a message sent at `now`: schedule lag (from its intended time) and generator
    /// lag (from when it was both due and sendable), in ns. Nil for a closed-model message (no intended time).
    @inline(__always)
    func lags(of slot: Slot, now: UInt64) -> (schedule: UInt64, generator: UInt64)? {
        if slot.closed { return nil }
        // At the actual send: a message first refused by a full window goes out later than the turn that handed
        // it out.
        let intended = slot.send.intendedTime
        let sendableFrom = max(intended, sendableSince)
        return (now > intended ? now - intended : 0, now > sendableFrom ? now - sendableFrom : 0)
    }

    // MARK: Store and forward

    /// A message of `stream` went out: if it came from the buffer, count it flushed; once the flush is out,
    /// skip the slots a `drop_newest` buffer refused.
    @inline(__always)
    private mutating func sentFromBacklog(_ stream: Int, turn: inout Turn) {
        guard offline[stream].toFlush > 0 else { return }
        offline[stream].toFlush -= 1
        turn.flushed &+= 1
        if offline[stream].toFlush == 0, offline[stream].skipAfter > 0 {
            streams[stream].schedule?.skip(offline[stream].skipAfter)
            offline[stream].skipAfter = 0
        }
    }

    /// The client is connected again at `now`: per stream with an offline buffer (`buffers`, per stream, empty
    /// when no stream of the fleet has one: `FleetRuntime.offlineBuffers`), the slots that came due while it was
    /// offline are the buffer's content, what did not fit is skipped. Returns what to count (buffered, overflowed).
    mutating func resumeFromOffline(now: UInt64, buffers: [OfflineBuffer?]) -> OfflineCounts {
        var counts = OfflineCounts()
        guard !buffers.isEmpty else { return counts }
        if offline.isEmpty {
            offline = Array(repeating: OfflineBacklog(), count: streams.count)
        }
        for stream in streams.indices {
            guard let buffer = buffers[stream], let due = streams[stream].schedule?.slotsDue(by: now) else { continue }
            let backlog = offline[stream]
            // Slots already counted at an earlier reconnect (a flush cut short) are still in the schedule.
            let counted = backlog.toFlush &+ backlog.skipAfter
            guard due > counted else { continue }
            let new = due - counted
            let capacity = UInt64(buffer.capacity)
            counts.buffered &+= new
            switch buffer.overflow {
            case .dropOldest:
                // The buffer holds the rest of the earlier backlog and the new messages; the oldest go.
                let held = backlog.toFlush &+ new
                let overflowed = held > capacity ? held - capacity : 0
                streams[stream].schedule?.skip(overflowed)
                counts.overflowed &+= overflowed
                offline[stream].toFlush = held - overflowed
            case .dropNewest:
                if backlog.skipAfter > 0 {
                    // A flush cut short with slots still to skip behind it: the new slots come after those, so
                    // they join the skipped ones (the buffer is treated as full until the flush is out).
                    offline[stream].skipAfter &+= new
                    counts.overflowed &+= new
                } else {
                    let room = capacity > backlog.toFlush ? capacity - backlog.toFlush : 0
                    let kept = min(new, room)
                    offline[stream].toFlush = backlog.toFlush &+ kept
                    offline[stream].skipAfter = new - kept
                    counts.overflowed &+= new - kept
                    if offline[stream].toFlush == 0 {
                        streams[stream].schedule?.skip(new - kept)
                        offline[stream].skipAfter = 0
                    }
                }
            }
        }
        return counts
    }

    // MARK: The end of publishing

    /// What the client owes when publishing stops at `now`: `unsent`, the messages due by then and not sent (a
    /// message the window refused, the slots due and not handed out); and for streams with an offline buffer
    /// (`buffers`, as for `resumeFromOffline`) of a client that is not `connected`, what came due since its last
    /// reconnect counts as buffered, what does not fit as overflowed, and only what the buffer holds (plus a
    /// flush cut short) as unsent. A connected client's unsent slots were held back by its window or socket, not
    /// by being offline (a flush still under way was counted as buffered at the reconnect).
    func owedAtEnd(now: UInt64, connected: Bool, buffers: [OfflineBuffer?]) -> (unsent: UInt64, offline: OfflineCounts) {
        var unsent: UInt64 = 0
        var counts = OfflineCounts()
        for stream in streams.indices {
            // A closed-model stream owes nothing: a message held back by its full window was never due.
            if streams[stream].pending != nil && !streams[stream].closed { unsent &+= 1 }
            guard let due = streams[stream].schedule?.slotsDue(by: now) else { continue }
            guard !connected, !buffers.isEmpty, let buffer = buffers[stream] else {
                unsent &+= due
                continue
            }
            let backlog = offline.isEmpty ? OfflineBacklog() : offline[stream]
            let counted = backlog.toFlush &+ backlog.skipAfter
            let new = due > counted ? due - counted : 0
            counts.buffered &+= new
            let capacity = UInt64(buffer.capacity)
            let held = backlog.toFlush &+ new
            let kept = backlog.skipAfter > 0 ? backlog.toFlush : min(held, max(capacity, backlog.toFlush))
            counts.overflowed &+= held - kept
            unsent &+= kept
        }
        return (unsent, counts)
    }
}

/// Per client and stream: the backlog a reconnect found and the stream is still sending.
struct OfflineBacklog {
    /// Buffered messages still to send (the next ones the schedule hands out).
    var toFlush: UInt64 = 0
    /// `drop_newest`: slots after those that overflowed, skipped once the flush is out.
    var skipAfter: UInt64 = 0
}

extension PublishSchedule {
    /// Passes over the next `count` slots without handing them out (a full offline buffer's losses): they take
    /// no sequence number, so no subscriber expects them.
    mutating func skip(_ count: UInt64) {
        var left = count
        while left > 0, nextIntendedTime != nil {
            advance()
            left -= 1
        }
    }
}
