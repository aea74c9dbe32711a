/// When a publishing stream's messages *should* be sent: an open-model arrival plan.
///
/// Intended times come from the plan alone, never from when the previous message actually went out, so a slow
/// client or broker cannot quietly stretch the schedule (coordinated omission). Latency is measured from the
/// intended time; lateness at the moment of sending (schedule lag) is reported with every message.
public enum PublishPlan: Sendable, Equatable {
    /// One message every `period` ns, each delayed by a uniform 0...jitter ns from its grid point
    /// (jitter <= period keeps the order; the grid itself never drifts).
    case interval(period: UInt64, jitter: UInt64 = 0)
    /// `perSecond` messages a second on an exact grid (message k at start + k * 1e9 / perSecond ns).
    case rate(perSecond: Double)
    /// Poisson arrivals: exponential gaps with mean 1e9 / perSecond ns, the first one after start.
    case poisson(perSecond: Double)
    /// `count` messages sharing an intended time, every `every` ns.
    case bursts(count: Int, every: UInt64)
    /// One message when the connection is established.
    case onConnect
    /// Closed model: no arrival plan. The next message is due as soon as the client can send it (its in-flight
    /// window for QoS 1/2, its socket for QoS 0), like mqtt-benchmark and emqtt-bench. There is no intended time:
    /// each message's intended time is its actual send, so it has no schedule lag and is never "behind".
    case closed

    /// Messages a second one client sends by this plan, on average (an on-connect message counts as none).
    public var messagesPerSecond: Double {
        switch self {
        case .interval(let period, _): return period == 0 ? 0 : 1e9 / Double(period)
        case .rate(let perSecond), .poisson(let perSecond): return perSecond
        case .bursts(let count, let every): return every == 0 ? 0 : Double(count) * 1e9 / Double(every)
        case .onConnect, .closed: return 0
        }
    }

    /// Whether the plan is closed-model (`.closed`).
    public var isClosed: Bool {
        if case .closed = self { return true }
        return false
    }

    /// A description of what is wrong with the parameters, or nil.
    public var validationError: String? {
        switch self {
        case let .interval(period, jitter):
            if period == 0 { return "publish interval must be greater than 0" }
            if jitter > period { return "publish jitter (\(jitter) ns) must not exceed the interval (\(period) ns)" }
        case let .rate(perSecond), let .poisson(perSecond):
            if !(perSecond > 0 && perSecond <= 1e9) { return "publish rate must be in (0, 1e9] per second, got \(perSecond)" }
        case let .bursts(count, every):
            if count < 1 { return "burst size must be at least 1, got \(count)" }
            if every == 0 { return "burst period must be greater than 0" }
        case .onConnect, .closed:
            break
        }
        return nil
    }
}

public struct PublishPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// What to do with slots that are already due when a client gets to send.
public enum BehindPolicy: Sendable, Equatable {
    /// Send the backlog as fast as allowed (at most `maxPerTurn` per turn); each keeps its intended time.
    case catchUp
    /// Skip every due slot that a later due slot supersedes; count them as dropped. Sequence numbers go only
    /// to messages actually sent, so subscribers do not see dropped slots as lost messages.
    case drop
}

/// One message to send now.
public struct ScheduledSend: Sendable, Equatable {
    /// 0-based sequence number of the messages actually sent by this stream.
    public var sequence: UInt64
    /// When it should have been sent (monotonic ns).
    public var intendedTime: UInt64
    /// now - intendedTime at the moment it is handed out: the schedule lag to record.
    public var lag: UInt64

    public init(sequence: UInt64, intendedTime: UInt64, lag: UInt64) {
        self.sequence = sequence
        self.intendedTime = intendedTime
        self.lag = lag
    }
}

/// One send opportunity of a stream (one lane turn): the time, the remaining budget and what was dropped.
public struct PublishTurn: Sendable, Equatable {
    public let now: UInt64
    public var remaining: Int
    /// Slots dropped during this turn (policy `drop`), to add to the stream's counters.
    public var dropped: UInt64 = 0

    public init(now: UInt64, budget: Int) {
        self.now = now
        self.remaining = budget
    }
}

/// The part of a publishing stream's schedule its fleet's clients share (`PublishSchedule.shape`).
public final class PublishShape: Sendable {
    public let plan: PublishPlan
    public let behind: BehindPolicy
    public let maxPerTurn: Int
    public let slotLimit: UInt64?

    public init(plan: PublishPlan, behind: BehindPolicy = .catchUp, maxPerTurn: Int = 64, slotLimit: UInt64? = nil) {
        self.plan = plan
        self.behind = behind
        self.maxPerTurn = max(maxPerTurn, 1)
        self.slotLimit = slotLimit
    }
}

/// The schedule state of one publishing stream: allocation-free, driven by the lane with the time of its turn.
///
///     var turn = schedule.beginTurn(now: now)
///     while let send = schedule.next(in: &turn) { encode and queue the message; record send.lag }
///     dropped += turn.dropped
///     if let wake = schedule.nextIntendedTime { wheel.schedule(client: c, kind: publishKind, deadline: wake) }
public struct PublishSchedule: Sendable {
    /// What every client of a fleet's stream shares: its plan, the per-turn budget and the slot limit (one object
    /// per stream of a fleet, not their ~50 bytes in each client's schedule).
    public let shape: PublishShape
    public var plan: PublishPlan { shape.plan }
    /// Most messages handed out in one turn, so a client far behind cannot starve the rest of its lane.
    public var maxPerTurn: Int { shape.maxPerTurn }
    /// Total slots in the plan (sent + dropped), nil = unlimited.
    public var slotLimit: UInt64? { shape.slotLimit }
    public let start: UInt64

    /// `nextIntendedTime` when `hasNext`.
    private var nextTime: UInt64 = 0
    /// The following slot's time when a drop decision needed it early (random plans draw it only once):
    /// `lookaheadTime` when `lookaheadIsSome`, valid while `hasLookahead`.
    private var lookaheadTime: UInt64 = 0
    public private(set) var sentCount: UInt64 = 0
    /// Index of the slot at `nextIntendedTime` (= sent + dropped so far).
    private var slotIndex: UInt64 = 0
    private var random: SeededRandom
    private var hasNext = false
    private var hasLookahead = false
    private var lookaheadIsSome = false
    /// `plan.isClosed` and `behind == .drop`, kept inline so the per-message path tests a flag.
    public let isClosed: Bool
    private let drops: Bool

    public var behind: BehindPolicy { drops ? .drop : .catchUp }
    /// The intended time of the next slot, nil when the plan is finished.
    public private(set) var nextIntendedTime: UInt64? {
        get { hasNext ? nextTime : nil }
        set {
            hasNext = newValue != nil
            nextTime = newValue ?? 0
        }
    }
    /// Slots skipped under `drop` (every slot passed is either sent or dropped).
    public var droppedCount: UInt64 { slotIndex &- sentCount }
    private var lookahead: UInt64? {
        get { lookaheadIsSome ? lookaheadTime : nil }
        set {
            lookaheadIsSome = newValue != nil
            lookaheadTime = newValue ?? 0
        }
    }

    /// - Parameters:
    ///   - start: when the plan begins (typically connection time plus a per-client phase offset).
    ///   - random: the stream's own generator (jitter, Poisson gaps).
    /// Throws the plan's `validationError` (a plan from a scenario file must never trap the process).
    public init(plan: PublishPlan, start: UInt64, behind: BehindPolicy = .catchUp, maxPerTurn: Int = 64,
                slotLimit: UInt64? = nil, random: SeededRandom) throws(PublishPlanError) {
        try self.init(shape: PublishShape(plan: plan, behind: behind, maxPerTurn: maxPerTurn, slotLimit: slotLimit),
                      start: start, random: random)
    }

    /// A schedule of `shape` (shared by every client of a fleet's stream) from `start`.
    public init(shape: PublishShape, start: UInt64, random: SeededRandom) throws(PublishPlanError) {
        if let message = shape.plan.validationError { throw PublishPlanError(message: message) }
        self.shape = shape
        self.start = start
        self.isClosed = shape.plan.isClosed
        self.drops = shape.behind == .drop
        self.random = random
        nextIntendedTime = shape.slotLimit == 0 ? nil : slotTime(index: 0, previous: start)
    }

    public func beginTurn(now: UInt64) -> PublishTurn {
        PublishTurn(now: now, budget: maxPerTurn)
    }

    /// The next message to send in this turn, or nil when none is due or the turn's budget is spent.
    public mutating func next(in turn: inout PublishTurn) -> ScheduledSend? {
        while turn.remaining > 0, let intended = nextIntendedTime, intended <= turn.now {
            if drops, isSuperseded(intended: intended, now: turn.now) {
                turn.dropped += 1
                advance()
                continue
            }
            // A closed plan's slot is always due (its "time" stays at start); it is handed out now, with no lag.
            let send = isClosed
                ? ScheduledSend(sequence: sentCount, intendedTime: turn.now, lag: 0)
                : ScheduledSend(sequence: sentCount, intendedTime: intended, lag: turn.now - intended)
            sentCount += 1
            turn.remaining -= 1
            advance()
            return send
        }
        return nil
    }

    public var isFinished: Bool { nextIntendedTime == nil }

    /// How many slots not handed out yet are due by `time` (intended time at or before it): what a stream
    /// still owed when publishing stopped. Grid plans count in closed form, so a client offline for hours
    /// costs nothing; jittered and Poisson plans step a copy of the schedule (its own random draws), at most
    /// `stepLimit` slots, beyond which the rest of the grid is estimated from the plan's rate.
    /// A closed plan owes nothing: it has no slots in time, only as many messages as its client could send.
    public func slotsDue(by time: UInt64, stepLimit: UInt64 = 10_000_000) -> UInt64 {
        if isClosed { return 0 }
        guard let next = nextIntendedTime, next <= time else { return 0 }
        let remainingSlots = slotLimit.map { $0 > slotIndex ? $0 - slotIndex : 0 } ?? .max
        let due: UInt64
        switch plan {
        case .rate(let perSecond):
            // Slot k is at start + floor(k * 1e9 / perSecond): slots 0...K are due with K the largest such k.
            let last = (Double(time - start) * perSecond / 1e9).rounded(.down)
            var lastIndex = last >= 0x1p63 ? UInt64(Int64.max) : UInt64(last)
            // Rounding of the division: step to the exact boundary of the slot formula.
            while lastIndex > 0, slotTimeOnRateGrid(lastIndex, perSecond) > time { lastIndex -= 1 }
            while slotTimeOnRateGrid(lastIndex + 1, perSecond) <= time { lastIndex += 1 }
            due = lastIndex >= slotIndex ? lastIndex - slotIndex + 1 : 0
        case .interval(let period, 0):
            let lastIndex = (time - start) / period
            due = lastIndex >= slotIndex ? lastIndex - slotIndex + 1 : 0
        case .bursts(let count, let every):
            let lastIndex = ((time - start) / every) &* UInt64(max(count, 1)) &+ UInt64(max(count, 1)) &- 1
            due = lastIndex >= slotIndex ? lastIndex - slotIndex + 1 : 0
        case .onConnect:
            due = 1
        case .closed:
            due = 0
        case .interval, .poisson:
            var copy = self
            var counted: UInt64 = 0
            while counted < stepLimit, let intended = copy.nextIntendedTime, intended <= time {
                counted += 1
                copy.advance()
            }
            if counted == stepLimit, let intended = copy.nextIntendedTime, intended <= time {
                counted &+= UInt64(Double(time - intended) * plan.messagesPerSecond / 1e9)
            }
            due = counted
        }
        return min(due, remainingSlots)
    }

    private func slotTimeOnRateGrid(_ index: UInt64, _ perSecond: Double) -> UInt64 {
        let offset = (Double(index) * 1e9 / perSecond).rounded(.down)
        return start.addingSaturating(offset >= 0x1p64 ? UInt64.max : UInt64(offset))
    }

    // MARK: Slot arithmetic

    mutating func advance() {
        guard let current = nextIntendedTime else { return }
        if hasLookahead {
            nextIntendedTime = lookahead
            hasLookahead = false
        } else {
            nextIntendedTime = followingTime(after: current)
        }
        slotIndex += 1
    }

    /// Whether a later slot is also due, so the current one is skipped under `drop`.
    private mutating func isSuperseded(intended: UInt64, now: UInt64) -> Bool {
        if case let .bursts(count, every) = plan {
            // A burst's messages share one time: the whole rest of a burst is superseded by the next burst.
            let burst = slotIndex / UInt64(count)
            let nextBurstFirstSlot = (burst + 1) * UInt64(count)
            if let slotLimit, nextBurstFirstSlot >= slotLimit { return false }
            return start.addingSaturating((burst + 1).multipliedSaturating(by: every)) <= now
        }
        if !hasLookahead {
            lookahead = followingTime(after: intended)
            hasLookahead = true
        }
        guard let following = lookahead else { return false }
        return following <= now && following > intended
    }

    /// The time of the slot after the current one (index slotIndex + 1), nil past the slot limit.
    private mutating func followingTime(after current: UInt64) -> UInt64? {
        let nextIndex = slotIndex + 1
        if let slotLimit, nextIndex >= slotLimit { return nil }
        return slotTime(index: nextIndex, previous: current)
    }

    /// The intended time of slot `index`; `previous` is the slot before it (or start for slot 0).
    private mutating func slotTime(index: UInt64, previous: UInt64) -> UInt64? {
        switch plan {
        case let .interval(period, jitter):
            let grid = start.addingSaturating(index.multipliedSaturating(by: period))
            return jitter == 0 ? grid : grid.addingSaturating(random.nextUInt64(in: 0...jitter))
        case let .rate(perSecond):
            let offset = (Double(index) * 1e9 / perSecond).rounded(.down)
            return start.addingSaturating(offset >= 0x1p64 ? UInt64.max : UInt64(offset))
        case let .poisson(perSecond):
            return previous.addingSaturating(random.nextExponentialNanoseconds(mean: 1e9 / perSecond))
        case let .bursts(count, every):
            let burst = index / UInt64(max(count, 1))
            return start.addingSaturating(burst.multipliedSaturating(by: every))
        case .onConnect:
            return index == 0 ? start : nil
        case .closed:
            // Every slot is due from the start on; `next` hands each out at the time of the turn.
            return start
        }
    }
}

extension UInt64 {
    @inline(__always)
    func multipliedSaturating(by other: UInt64) -> UInt64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? UInt64.max : product
    }
}
