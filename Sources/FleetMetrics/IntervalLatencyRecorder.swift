/// A lane's latency recorder that hands over "the interval since the last snapshot" once a second without
/// stopping the lane and without locks.
///
/// Protocol (everything below runs on the lane that owns the recorder, so nothing is shared while written):
/// 1. The lane records into `current` on its hot path.
/// 2. Once a second the lane itself calls `takeInterval(endingAt:)`. That empties the spare recorder (the one
///    handed over a second ago), swaps it with `current`, and returns the just-finished recorder as an immutable
///    value. Recording continues at once into the emptied spare.
/// 3. The lane sends the returned `LatencyInterval` to the merger (another queue), which adds it into the run's
///    totals and the timeline and then drops it.
/// 4. A second later, step 2 empties that spare again. If the merger has dropped it by then (the usual case), its
///    storage is the recorder's alone and is zeroed in place: no allocation in steady state. If the merger still
///    holds it, copy-on-write lets the merger keep reading the old counts while the lane starts a fresh set, so
///    the merger never sees counts change under it.
public struct IntervalLatencyRecorder: Sendable {
    public private(set) var current = LatencyRecorder()
    private var spare = LatencyRecorder()
    /// When the interval being recorded began (monotonic nanoseconds).
    public private(set) var intervalStart: UInt64

    public init(startingAt start: UInt64) { intervalStart = start }

    public mutating func record(_ kind: LatencyKind, from origin: LatencyOrigin, microseconds: UInt64) {
        current.record(kind, from: origin, microseconds: microseconds)
    }

    public mutating func record(
        _ kind: LatencyKind, intendedAt intended: UInt64, sentAt sent: UInt64, completedAt completed: UInt64
    ) {
        current.record(kind, intendedAt: intended, sentAt: sent, completedAt: completed)
    }

    public mutating func record(_ kind: LatencyKind, startedAt start: UInt64, completedAt completed: UInt64) {
        current.record(kind, startedAt: start, completedAt: completed)
    }

    /// Ends the current interval at `end` and returns it; recording continues into a new interval from `end`.
    /// Call only from the owning lane.
    public mutating func takeInterval(endingAt end: UInt64) -> LatencyInterval {
        spare.reset()
        swap(&current, &spare)
        let interval = LatencyInterval(start: intervalStart, end: end, latencies: spare)
        intervalStart = end
        return interval
    }
}

/// The latencies recorded by one lane between `start` and `end` (monotonic nanoseconds).
public struct LatencyInterval: Sendable {
    public let start: UInt64
    public let end: UInt64
    public let latencies: LatencyRecorder

    public init(start: UInt64, end: UInt64, latencies: LatencyRecorder) {
        self.start = start
        self.end = end
        self.latencies = latencies
    }
}
