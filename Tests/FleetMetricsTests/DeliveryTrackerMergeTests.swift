import Testing
@testable import FleetMetrics

/// Merging per-stream state across trackers (shared-subscription groups whose members sit on different lanes).
@Suite("Delivery tracker merge")
struct DeliveryTrackerMergeTests {
    @Test("disjoint halves merge to the whole stream with no duplicates")
    func disjointHalves() {
        var even = DeliveryTracker()
        var odd = DeliveryTracker()
        for sequence in UInt64(0)..<100 {
            if sequence % 2 == 0 { even.record(stream: 0, sequence: sequence) } else { odd.record(stream: 2, sequence: sequence) }
        }
        var group = DeliveryTracker()
        group.merge(stream: 0, from: even, stream: 0)
        group.merge(stream: 0, from: odd, stream: 2)
        #expect(group.counts(stream: 0, expected: 100)
                    == DeliveryCounts(expected: 100, received: 100, unique: 100, duplicated: 0, reordered: 0))
        #expect(group.counts(stream: 0, expected: 100).lost == 0)
    }

    @Test("sequences present on both sides count as duplicates, exactly")
    func overlappingSequences() {
        var first = DeliveryTracker()
        var second = DeliveryTracker()
        // First: 0...9 with 3 twice (one duplicate of its own). Second: 5...14 (overlaps 5...9) then 2 late.
        for sequence: UInt64 in [0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9] { first.record(stream: 0, sequence: sequence) }
        for sequence: UInt64 in [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 2] { second.record(stream: 0, sequence: sequence) }
        #expect(second.counts(stream: 0, expected: 0).reordered == 1)
        var group = DeliveryTracker()
        group.merge(stream: 0, from: first, stream: 0)
        group.merge(stream: 0, from: second, stream: 0)
        // 22 arrivals, 15 distinct (0...14), duplicates: 1 own + 5 (5...9) + 1 (2) = 7; 15 and 16 never arrived.
        let counts = group.counts(stream: 0, expected: 17)
        #expect(counts == DeliveryCounts(expected: 17, received: 22, unique: 15, duplicated: 7, reordered: 1))
        #expect(counts.lost == 2)
        #expect(counts.received == counts.unique + counts.duplicated)
        // Recording after the merge continues from the merged bitset: 14 is a duplicate, 15 is new.
        #expect(group.record(stream: 0, sequence: 14) == .duplicate)
        #expect(group.record(stream: 0, sequence: 15) == .inOrder)
    }

    @Test("range lists of different lengths merge in both directions")
    func differentLengths() {
        var short = DeliveryTracker()
        var long = DeliveryTracker()
        short.record(stream: 0, sequence: 1)
        short.record(stream: 0, sequence: 63)
        long.reserve(streams: 1, rangesPerStream: 8)
        for sequence: UInt64 in [1, 64, 5_000, 99_999] { long.record(stream: 0, sequence: sequence) }

        var shortFirst = DeliveryTracker()
        shortFirst.merge(stream: 0, from: short, stream: 0)
        shortFirst.merge(stream: 0, from: long, stream: 0)
        var longFirst = DeliveryTracker()
        longFirst.merge(stream: 0, from: long, stream: 0)
        longFirst.merge(stream: 0, from: short, stream: 0)
        let expected = DeliveryCounts(expected: 100_000, received: 6, unique: 5, duplicated: 1, reordered: 0)
        #expect(shortFirst.counts(stream: 0, expected: 100_000) == expected)
        #expect(longFirst.counts(stream: 0, expected: 100_000) == expected)
        #expect(longFirst.record(stream: 0, sequence: 99_999) == .duplicate)
        #expect(shortFirst.record(stream: 0, sequence: 63) == .duplicate)
        #expect(shortFirst.record(stream: 0, sequence: 99_998) == .reordered)
    }

    @Test("untracked arrivals are summed; unknown streams add nothing")
    func untrackedAndUnknownStreams() {
        var limited = DeliveryTracker(rangeLimit: 1)
        limited.record(stream: 1, sequence: 3)
        limited.record(stream: 1, sequence: 10)  // would open a second range: untracked
        limited.record(stream: 1, sequence: 1_000)  // likewise
        var other = DeliveryTracker()
        other.record(stream: 0, sequence: 3)
        other.record(stream: 0, sequence: 4)
        var group = DeliveryTracker()
        group.merge(stream: 3, from: limited, stream: 1)
        group.merge(stream: 3, from: other, stream: 0)
        group.merge(stream: 3, from: other, stream: 7)  // never recorded there
        group.merge(stream: -1, from: other, stream: 0)
        #expect(group.streamCount == 4)
        #expect(group.counts(stream: 3, expected: 5)
                    == DeliveryCounts(expected: 5, received: 5, unique: 2, duplicated: 1, reordered: 0, untracked: 2))
        #expect(group.counts(stream: 3, expected: 5).lost == 1)
        #expect(group.ranges(stream: 3) == [3..<5])
        #expect(group.totals { _ in 0 }.received == 5)
    }

    @Test("merging interleaved ranges unites them and counts each overlapping sequence once as a duplicate")
    func interleavedRanges() {
        var left = DeliveryTracker()
        var right = DeliveryTracker()
        for sequence: UInt64 in [0, 1, 2, 10, 11, 20] { left.record(stream: 0, sequence: sequence) }
        for sequence: UInt64 in [2, 3, 4, 9, 10, 11, 12, 21, 30] { right.record(stream: 0, sequence: sequence) }
        var merged = DeliveryTracker()
        merged.merge(stream: 0, from: left, stream: 0)
        merged.merge(stream: 0, from: right, stream: 0)
        #expect(merged.ranges(stream: 0) == [0..<5, 9..<13, 20..<22, 30..<31])
        // 2, 10 and 11 were on both sides.
        #expect(merged.counts(stream: 0, expected: 32)
                    == DeliveryCounts(expected: 32, received: 15, unique: 12, duplicated: 3, reordered: 0))
    }
}
