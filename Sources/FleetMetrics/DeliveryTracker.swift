/// Exact delivery accounting for one subscriber (or one lane's subscribers) from the sequence numbers publishers
/// write into each message: per stream, the sequence numbers seen are kept as sorted, disjoint ranges, so
/// duplicates and losses are exact, not estimated, and memory grows with the gaps (one range per run of
/// consecutive arrivals), not with the sequence numbers: a stream delivered in order is one range however long it
/// runs, and a sequence number of 2^63 costs what 5 costs.
///
/// Streams are addressed by a dense index the caller assigns (for example the position of the stream in the
/// scenario). An arrival that extends the last range (the in-order case) or repeats one already seen does not
/// allocate; a new gap adds a range (amortised growth of one array).
public struct DeliveryTracker: Sendable {
    /// Ranges one stream may hold. Past it, an arrival that would open a new range is counted as `untracked`
    /// (received, but neither unique nor duplicate): never as lost. The default, 2^20 ranges (16 MiB for one
    /// stream), takes a million separate gaps in one stream, far beyond any loss a run would still report as
    /// meaningful, and keeps a hostile or broken publisher from growing the tracker without bound.
    public let rangeLimit: Int

    private var streams: [StreamState] = []
    /// Messages whose stream index was negative.
    public private(set) var rejected: UInt64 = 0

    public init(rangeLimit: Int = 1 << 20) {
        self.rangeLimit = Swift.max(rangeLimit, 1)
    }

    /// Number of streams that have state (the highest stream index recorded or reserved, plus one).
    public var streamCount: Int { streams.count }

    /// Creates the state of `streams` streams with room for `rangesPerStream` ranges each, so recording that
    /// stays within it does not allocate.
    public mutating func reserve(streams streamCount: Int, rangesPerStream ranges: Int = 1) {
        growStreams(to: Swift.max(streamCount, 0))
        for index in 0..<Swift.max(streamCount, 0) {
            streams[index].reserve(Swift.min(Swift.max(ranges, 1), rangeLimit))
        }
    }

    /// Records the arrival of `sequence` on stream `stream` and says how it arrived.
    @discardableResult
    public mutating func record(stream: Int, sequence: UInt64) -> DeliveryOutcome {
        guard stream >= 0 else {
            rejected &+= 1
            return .rejected
        }
        if stream >= streams.count { growStreams(to: stream + 1) }
        return streams[stream].record(sequence, rangeLimit: rangeLimit)
    }

    /// The accounting of one stream, given how many messages the publishers sent on it while this subscriber was
    /// entitled to them (the caller knows that from publisher-side counts).
    public func counts(stream: Int, expected: UInt64) -> DeliveryCounts {
        guard stream >= 0, stream < streams.count else { return DeliveryCounts(expected: expected) }
        return streams[stream].counts(expected: expected)
    }

    /// Distinct sequence numbers of `stream` seen within `sequences` (lower bound included, upper excluded).
    public func uniqueCount(stream: Int, in sequences: Range<UInt64>) -> UInt64 {
        guard stream >= 0, stream < streams.count else { return 0 }
        return streams[stream].uniqueCount(in: sequences)
    }

    /// The ranges of distinct sequence numbers seen on `stream`, in order (for tests and inspection).
    public func ranges(stream: Int) -> [Range<UInt64>] {
        guard stream >= 0, stream < streams.count else { return [] }
        return streams[stream].ranges.map { $0.low..<$0.high }
    }

    /// The accounting summed over every stream; `expected(stream)` gives each stream's expected count.
    public func totals(expected: (Int) -> UInt64) -> DeliveryCounts {
        var total = DeliveryCounts()
        for index in streams.indices { total.add(streams[index].counts(expected: expected(index))) }
        total.rejected &+= rejected
        return total
    }

    /// Adds stream `otherStream` of `other` into stream `stream` of this tracker, exactly: the ranges are
    /// united, a sequence number present on both sides counts as one more duplicate (it arrived at least twice
    /// over the two), and received, duplicated, reordered and untracked arrivals are summed. So the members of an
    /// MQTT shared-subscription group, recorded on different lanes or processes, are accounted as one subscriber:
    /// the merge of their states equals the state of one tracker that saw every member's arrivals, except
    /// `reordered`, which stays the sum of each side's own reorderings (arrival order across trackers is not
    /// known). Allocates; meant for the end of a run, not the per-message path. A negative stream is ignored; an
    /// `otherStream` `other` never recorded adds nothing.
    public mutating func merge(stream: Int, from other: DeliveryTracker, stream otherStream: Int) {
        guard stream >= 0, otherStream >= 0, otherStream < other.streams.count else { return }
        if stream >= streams.count { growStreams(to: stream + 1) }
        streams[stream].merge(other.streams[otherStream])
    }

    /// Forgets everything seen, keeping the allocated storage.
    public mutating func reset() {
        for index in streams.indices { streams[index].reset() }
        rejected = 0
    }

    private mutating func growStreams(to count: Int) {
        if streams.count < count {
            streams.append(contentsOf: repeatElement(StreamState(), count: count - streams.count))
        }
    }
}

/// How one message arrived.
public enum DeliveryOutcome: Equatable, Sendable {
    /// Above every sequence number seen so far on its stream.
    case inOrder
    /// Below the highest seen and not seen before.
    case reordered
    /// Seen before.
    case duplicate
    /// Would have opened a range beyond the tracker's `rangeLimit`: counted as received, not tracked.
    case untracked
    /// Negative stream index: not counted on any stream.
    case rejected
}

/// Delivery figures of one stream or a sum of streams, subscribers and lanes.
public struct DeliveryCounts: Equatable, Sendable {
    /// Messages the subscriber should have received: what was published while it was entitled to it (from
    /// publisher-side counts).
    public var expected: UInt64 = 0
    /// Every arrival, including duplicates.
    public var received: UInt64 = 0
    /// Distinct sequence numbers received.
    public var unique: UInt64 = 0
    public var duplicated: UInt64 = 0
    public var reordered: UInt64 = 0
    /// `expected - unique - untracked` where positive: messages that never arrived.
    public var lost: UInt64 = 0
    /// `unique + untracked - expected` where positive: more distinct messages than the publishers counted (a
    /// bookkeeping error or a stray publisher); kept apart so it never hides a loss elsewhere.
    public var unexpected: UInt64 = 0
    /// Arrivals the tracker could not place (range limit reached): received, never counted lost.
    public var untracked: UInt64 = 0
    /// Arrivals whose stream index was refused.
    public var rejected: UInt64 = 0
    /// Messages published while the subscriber was not entitled to them (not subscribed yet, offline with a
    /// clean session or at QoS 0, session gone): neither expected nor lost.
    public var missedWhileOffline: UInt64 = 0

    public init(expected: UInt64 = 0) {
        self.expected = expected
        lost = expected
    }

    public init(
        expected: UInt64, received: UInt64, unique: UInt64, duplicated: UInt64, reordered: UInt64,
        untracked: UInt64 = 0, rejected: UInt64 = 0, missedWhileOffline: UInt64 = 0
    ) {
        self.expected = expected
        self.received = received
        self.unique = unique
        self.duplicated = duplicated
        self.reordered = reordered
        self.untracked = untracked
        self.rejected = rejected
        self.missedWhileOffline = missedWhileOffline
        let accounted = unique &+ untracked
        lost = expected > accounted ? expected - accounted : 0
        unexpected = accounted > expected ? accounted - expected : 0
    }

    /// Sums another stream's, subscriber's or lane's figures into these (losses are summed per stream, never
    /// netted against another stream's surplus).
    public mutating func add(_ other: DeliveryCounts) {
        expected &+= other.expected
        received &+= other.received
        unique &+= other.unique
        duplicated &+= other.duplicated
        reordered &+= other.reordered
        lost &+= other.lost
        unexpected &+= other.unexpected
        untracked &+= other.untracked
        rejected &+= other.rejected
        missedWhileOffline &+= other.missedWhileOffline
    }
}

/// Sequence numbers `low..<high`, all seen.
private struct SeenRange: Sendable, Equatable {
    var low: UInt64
    var high: UInt64
}

/// The state of one stream as seen by one tracker.
private struct StreamState: Sendable {
    /// Sorted, disjoint and never adjacent (touching ranges are joined).
    var ranges: [SeenRange] = []
    /// Highest sequence number seen plus one; 0 before the first arrival.
    var highestPlusOne: UInt64 = 0
    var received: UInt64 = 0
    var unique: UInt64 = 0
    var duplicated: UInt64 = 0
    var reordered: UInt64 = 0
    var untracked: UInt64 = 0

    mutating func reserve(_ count: Int) { ranges.reserveCapacity(count) }

    mutating func record(_ sequence: UInt64, rangeLimit: Int) -> DeliveryOutcome {
        received &+= 1
        let last = ranges.count - 1
        // In order, the common case: extend the last range, or open one after a gap.
        if last < 0 || sequence >= ranges[last].high {
            if last >= 0, sequence == ranges[last].high, sequence != .max {
                ranges[last].high = sequence + 1
            } else {
                guard ranges.count < rangeLimit, sequence != .max else { return untrack() }
                ranges.append(SeenRange(low: sequence, high: sequence + 1))
            }
            unique &+= 1
            highestPlusOne = sequence + 1
            return .inOrder
        }
        // Below the last range's end: the last range with `low <= sequence`, if any.
        let index = lastRange(atOrBelow: sequence)
        if index >= 0, sequence < ranges[index].high {
            duplicated &+= 1
            return .duplicate
        }
        let next = index + 1  // exists: sequence < ranges[last].high and it is not in ranges[index]
        let joinsPrevious = index >= 0 && ranges[index].high == sequence
        let joinsNext = ranges[next].low == sequence + 1
        switch (joinsPrevious, joinsNext) {
        case (true, true):
            ranges[index].high = ranges[next].high
            ranges.remove(at: next)
        case (true, false):
            ranges[index].high = sequence + 1
        case (false, true):
            ranges[next].low = sequence
        case (false, false):
            guard ranges.count < rangeLimit else { return untrack() }
            ranges.insert(SeenRange(low: sequence, high: sequence + 1), at: next)
        }
        unique &+= 1
        reordered &+= 1
        return .reordered
    }

    private mutating func untrack() -> DeliveryOutcome {
        untracked &+= 1
        return .untracked
    }

    /// Index of the last range whose `low` is at or below `sequence`; -1 when none.
    func lastRange(atOrBelow sequence: UInt64) -> Int {
        var lower = 0
        var upper = ranges.count
        while lower < upper {
            let middle = (lower + upper) / 2
            if ranges[middle].low <= sequence { lower = middle + 1 } else { upper = middle }
        }
        return lower - 1
    }

    func uniqueCount(in sequences: Range<UInt64>) -> UInt64 {
        guard !sequences.isEmpty else { return 0 }
        var index = Swift.max(lastRange(atOrBelow: sequences.lowerBound), 0)
        var total: UInt64 = 0
        while index < ranges.count, ranges[index].low < sequences.upperBound {
            let low = Swift.max(ranges[index].low, sequences.lowerBound)
            let high = Swift.min(ranges[index].high, sequences.upperBound)
            if high > low { total &+= high - low }
            index += 1
        }
        return total
    }

    func counts(expected: UInt64) -> DeliveryCounts {
        DeliveryCounts(
            expected: expected, received: received, unique: unique, duplicated: duplicated, reordered: reordered,
            untracked: untracked)
    }

    mutating func merge(_ other: StreamState) {
        var united: [SeenRange] = []
        united.reserveCapacity(ranges.count + other.ranges.count)
        var mine = 0
        var theirs = 0
        // Walk both sorted lists; the overlap of each pair of ranges that intersect is counted once.
        while mine < ranges.count || theirs < other.ranges.count {
            let next: SeenRange
            if theirs >= other.ranges.count || (mine < ranges.count && ranges[mine].low <= other.ranges[theirs].low) {
                next = ranges[mine]
                mine += 1
            } else {
                next = other.ranges[theirs]
                theirs += 1
            }
            if let lastIndex = united.indices.last, next.low <= united[lastIndex].high {
                united[lastIndex].high = Swift.max(united[lastIndex].high, next.high)
            } else {
                united.append(next)
            }
        }
        let overlap = Self.intersectionCount(ranges, other.ranges)
        let otherUnique = other.ranges.reduce(UInt64(0)) { $0 &+ ($1.high &- $1.low) }
        ranges = united
        highestPlusOne = Swift.max(highestPlusOne, other.highestPlusOne)
        received &+= other.received
        unique &+= otherUnique &- overlap
        // Every arrival of the other side is either new here, a duplicate there already, or a sequence this
        // side had too (`overlap`): received = unique + duplicated + untracked still holds.
        duplicated &+= other.duplicated &+ overlap
        reordered &+= other.reordered
        untracked &+= other.untracked
    }

    /// Sequence numbers present in both sorted, disjoint lists.
    static func intersectionCount(_ left: [SeenRange], _ right: [SeenRange]) -> UInt64 {
        var total: UInt64 = 0
        var i = 0
        var j = 0
        while i < left.count && j < right.count {
            let low = Swift.max(left[i].low, right[j].low)
            let high = Swift.min(left[i].high, right[j].high)
            if high > low { total &+= high - low }
            if left[i].high < right[j].high { i += 1 } else { j += 1 }
        }
        return total
    }

    mutating func reset() {
        ranges.removeAll(keepingCapacity: true)
        highestPlusOne = 0
        received = 0
        unique = 0
        duplicated = 0
        reordered = 0
        untracked = 0
    }
}

extension DeliveryTracker {
    /// Adds a state written out elsewhere (another process's tracker: its ranges and counts) into `stream`, exactly
    /// as `merge(stream:from:stream:)` adds another tracker's stream. Allocates; for merging results, not the
    /// per-message path.
    public mutating func merge(stream: Int, ranges: [Range<UInt64>], received: UInt64, duplicated: UInt64,
                               reordered: UInt64, untracked: UInt64) {
        var other = DeliveryTracker(rangeLimit: Swift.max(ranges.count, 1))
        other.restore(ranges: ranges, received: received, duplicated: duplicated, reordered: reordered,
                      untracked: untracked)
        merge(stream: stream, from: other, stream: 0)
    }

    private mutating func restore(ranges: [Range<UInt64>], received: UInt64, duplicated: UInt64, reordered: UInt64,
                                  untracked: UInt64) {
        growStreams(to: 1)
        var state = StreamState()
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = state.ranges.indices.last, range.lowerBound <= state.ranges[last].high {
                state.ranges[last].high = Swift.max(state.ranges[last].high, range.upperBound)
            } else {
                state.ranges.append(SeenRange(low: range.lowerBound, high: range.upperBound))
            }
        }
        state.unique = state.ranges.reduce(0) { $0 &+ ($1.high &- $1.low) }
        state.highestPlusOne = state.ranges.last?.high ?? 0
        state.received = received
        state.duplicated = duplicated
        state.reordered = reordered
        state.untracked = untracked
        streams[0] = state
    }
}
