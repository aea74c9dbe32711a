/// Exact delivery accounting for one subscriber (or one lane's subscribers) from the sequence numbers publishers
/// write into each message: per stream, every sequence number seen is a bit in a growable bitset, so duplicates and
/// losses are exact, not estimated.
///
/// Streams are addressed by a dense index the caller assigns (for example the position of the stream in the
/// scenario). The bitset of a stream grows by doubling; once sized (see `reserve`), `record` does not allocate.
public struct DeliveryTracker: Sendable {
    /// Sequence numbers at or above this are not tracked (counted in `outOfRange`): a malformed or hostile header
    /// must not make the tracker allocate without bound. The default, 2^27 (134 million messages per stream, a day at
    /// 1,500 msg/s), caps one stream's bitset at 16 MiB.
    public let sequenceLimit: UInt64
    /// Stream indices at or above this are refused (counted in `rejected`).
    public let streamLimit: Int

    private var streams: [StreamState] = []
    /// Messages whose stream index was negative or beyond `streamLimit`.
    public private(set) var rejected: UInt64 = 0

    public init(sequenceLimit: UInt64 = 1 << 27, streamLimit: Int = 1 << 20) {
        self.sequenceLimit = sequenceLimit
        self.streamLimit = streamLimit
    }

    /// Number of streams that have state (the highest stream index recorded or reserved, plus one).
    public var streamCount: Int { streams.count }

    /// Sizes the state for `streams` streams of `sequences` messages each, so recording stays allocation-free.
    public mutating func reserve(streams streamCount: Int, sequencesPerStream sequences: UInt64) {
        let streamCount = Swift.min(Swift.max(streamCount, 0), streamLimit)
        growStreams(to: streamCount)
        let words = Int(Swift.min(sequences, sequenceLimit) / 64) + 1
        for index in 0..<streamCount where streams[index].seen.count < words {
            streams[index].seen.append(contentsOf: repeatElement(0, count: words - streams[index].seen.count))
        }
    }

    /// Records the arrival of `sequence` on stream `stream` and says how it arrived.
    @discardableResult
    public mutating func record(stream: Int, sequence: UInt64) -> DeliveryOutcome {
        guard stream >= 0, stream < streamLimit else {
            rejected &+= 1
            return .rejected
        }
        if stream >= streams.count { growStreams(to: stream + 1) }
        return streams[stream].record(sequence, limit: sequenceLimit)
    }

    /// The accounting of one stream, given how many messages the publishers sent on it while this subscriber was
    /// subscribed (the caller knows that from publisher-side counts).
    public func counts(stream: Int, expected: UInt64) -> DeliveryCounts {
        guard stream >= 0, stream < streams.count else { return DeliveryCounts(expected: expected) }
        return streams[stream].counts(expected: expected)
    }

    /// The accounting summed over every stream; `expected(stream)` gives each stream's expected count.
    public func totals(expected: (Int) -> UInt64) -> DeliveryCounts {
        var total = DeliveryCounts()
        for index in streams.indices { total.add(streams[index].counts(expected: expected(index))) }
        total.rejected &+= rejected
        return total
    }

    /// Adds stream `otherStream` of `other` into stream `stream` of this tracker, exactly: the sequence bitsets are
    /// OR-ed, a sequence number present in both counts as one more duplicate (it arrived at least twice over the
    /// two), and received, duplicated, reordered and out-of-range arrivals are summed. So the members of an MQTT
    /// shared-subscription group, recorded on different lanes or processes, are accounted as one subscriber: the
    /// merge of their states equals the state of one tracker that saw every member's arrivals, except `reordered`,
    /// which stays the sum of each side's own reorderings (arrival order across trackers is not known).
    /// Allocates (the bitset may grow); meant for the end of a run, not the per-message path. A negative stream, or
    /// `stream` beyond `streamLimit`, is ignored; an `otherStream` `other` never recorded adds nothing.
    public mutating func merge(stream: Int, from other: DeliveryTracker, stream otherStream: Int) {
        guard stream >= 0, stream < streamLimit, otherStream >= 0, otherStream < other.streams.count else { return }
        if stream >= streams.count { growStreams(to: stream + 1) }
        streams[stream].merge(other.streams[otherStream])
    }

    /// Forgets everything seen, keeping the allocated bitsets.
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
    /// Sequence number at or above the tracker's limit: counted as received, not tracked.
    case outOfRange
    /// Stream index out of range: not counted on any stream.
    case rejected
}

/// Delivery figures of one stream or a sum of streams, subscribers and lanes.
public struct DeliveryCounts: Equatable, Sendable {
    /// Messages the subscriber should have received (from publisher-side counts).
    public var expected: UInt64 = 0
    /// Every arrival, including duplicates.
    public var received: UInt64 = 0
    /// Distinct sequence numbers received.
    public var unique: UInt64 = 0
    public var duplicated: UInt64 = 0
    public var reordered: UInt64 = 0
    /// `expected - unique` where positive: messages that never arrived.
    public var lost: UInt64 = 0
    /// `unique - expected` where positive: more distinct messages than the publishers counted (a bookkeeping error
    /// or a stray publisher); kept apart so it never hides a loss elsewhere.
    public var unexpected: UInt64 = 0
    /// Arrivals whose sequence number was beyond the tracker's limit.
    public var outOfRange: UInt64 = 0
    /// Arrivals whose stream index was refused.
    public var rejected: UInt64 = 0

    public init(expected: UInt64 = 0) {
        self.expected = expected
        lost = expected
    }

    public init(
        expected: UInt64, received: UInt64, unique: UInt64, duplicated: UInt64, reordered: UInt64,
        outOfRange: UInt64 = 0, rejected: UInt64 = 0
    ) {
        self.expected = expected
        self.received = received
        self.unique = unique
        self.duplicated = duplicated
        self.reordered = reordered
        self.outOfRange = outOfRange
        self.rejected = rejected
        lost = expected > unique ? expected - unique : 0
        unexpected = unique > expected ? unique - expected : 0
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
        outOfRange &+= other.outOfRange
        rejected &+= other.rejected
    }
}

/// The state of one stream as seen by one tracker.
private struct StreamState: Sendable {
    /// Bit `n` set when sequence number `n` has arrived.
    var seen: [UInt64] = []
    /// Highest sequence number seen plus one; 0 before the first arrival.
    var highestPlusOne: UInt64 = 0
    var received: UInt64 = 0
    var unique: UInt64 = 0
    var duplicated: UInt64 = 0
    var reordered: UInt64 = 0
    var outOfRange: UInt64 = 0

    mutating func record(_ sequence: UInt64, limit: UInt64) -> DeliveryOutcome {
        received &+= 1
        guard sequence < limit else {
            outOfRange &+= 1
            return .outOfRange
        }
        let word = Int(sequence >> 6)
        let bit = UInt64(1) << (sequence & 63)
        if word >= seen.count {
            // Double, so a stream that keeps growing reallocates O(log n) times.
            let newCount = Swift.max(word + 1, seen.count * 2, 16)
            seen.append(contentsOf: repeatElement(0, count: newCount - seen.count))
        }
        if seen[word] & bit != 0 {
            duplicated &+= 1
            return .duplicate
        }
        seen[word] |= bit
        unique &+= 1
        if sequence < highestPlusOne {
            reordered &+= 1
            return .reordered
        }
        highestPlusOne = sequence + 1
        return .inOrder
    }

    func counts(expected: UInt64) -> DeliveryCounts {
        DeliveryCounts(
            expected: expected, received: received, unique: unique, duplicated: duplicated, reordered: reordered,
            outOfRange: outOfRange)
    }

    mutating func merge(_ other: StreamState) {
        if seen.count < other.seen.count {
            seen.append(contentsOf: repeatElement(0, count: other.seen.count - seen.count))
        }
        var overlap: UInt64 = 0
        var added: UInt64 = 0
        for index in other.seen.indices where other.seen[index] != 0 {
            let both = seen[index] & other.seen[index]
            overlap &+= UInt64(both.nonzeroBitCount)
            added &+= UInt64((other.seen[index] & ~both).nonzeroBitCount)
            seen[index] |= other.seen[index]
        }
        highestPlusOne = Swift.max(highestPlusOne, other.highestPlusOne)
        received &+= other.received
        unique &+= added
        // Every arrival of the other side is either new here (`added`), a duplicate there already, or a
        // sequence this side had too (`overlap`): received = unique + duplicated + outOfRange still holds.
        duplicated &+= other.duplicated &+ overlap
        reordered &+= other.reordered
        outOfRange &+= other.outOfRange
    }

    mutating func reset() {
        for index in seen.indices { seen[index] = 0 }
        highestPlusOne = 0
        received = 0
        unique = 0
        duplicated = 0
        reordered = 0
        outOfRange = 0
    }
}
