import Testing
@testable import FleetMetrics

@Suite("Delivery tracker")
struct DeliveryTrackerTests {
    @Test("dropping known messages gives the exact loss")
    func exactLoss() {
        var tracker = DeliveryTracker()
        let dropped: Set<UInt64> = [0, 17, 18, 19, 500, 999]
        for sequence in UInt64(0)..<1000 where !dropped.contains(sequence) {
            #expect(tracker.record(stream: 0, sequence: sequence) == .inOrder)
        }
        let counts = tracker.counts(stream: 0, expected: 1000)
        #expect(
            counts
                == DeliveryCounts(expected: 1000, received: 994, unique: 994, duplicated: 0, reordered: 0))
        #expect(counts.lost == 6)
        #expect(counts.unexpected == 0)
    }

    @Test("duplicates, reordering and losses on several streams are counted exactly")
    func duplicatesAndReordering() {
        var tracker = DeliveryTracker()
        // Stream 0: 0 1 3 2 2 5 1 -> 2 arrives late (reordered), 2 and 1 again (duplicates), 4 lost.
        let outcomes = [UInt64(0), 1, 3, 2, 2, 5, 1].map { tracker.record(stream: 0, sequence: $0) }
        #expect(outcomes == [.inOrder, .inOrder, .inOrder, .reordered, .duplicate, .inOrder, .duplicate])
        // Stream 3 (streams 1 and 2 never seen): 10 9 8, and 9 again.
        for sequence: UInt64 in [10, 9, 8, 9] { tracker.record(stream: 3, sequence: sequence) }
        #expect(tracker.streamCount == 4)

        let stream0 = tracker.counts(stream: 0, expected: 6)
        #expect(stream0 == DeliveryCounts(expected: 6, received: 7, unique: 5, duplicated: 2, reordered: 1))
        #expect(stream0.lost == 1)
        let stream3 = tracker.counts(stream: 3, expected: 11)  // sequences 0...10 were published
        #expect(stream3 == DeliveryCounts(expected: 11, received: 4, unique: 3, duplicated: 1, reordered: 2))
        #expect(stream3.lost == 8)

        let totals = tracker.totals { [6, 0, 2, 11][$0] }
        #expect(totals.expected == 19)
        #expect(totals.received == 11)
        #expect(totals.unique == 8)
        #expect(totals.duplicated == 3)
        #expect(totals.reordered == 3)
        #expect(totals.lost == 1 + 2 + 8)
    }

    @Test("huge sequence numbers cost one range; past the range limit arrivals are untracked, never lost")
    func hostileInput() {
        var tracker = DeliveryTracker(rangeLimit: 2)
        #expect(tracker.record(stream: 0, sequence: 1 << 40) == .inOrder)
        #expect(tracker.record(stream: 0, sequence: UInt64.max - 1) == .inOrder)
        #expect(tracker.record(stream: 0, sequence: 5) == .untracked)  // a third range
        #expect(tracker.record(stream: 0, sequence: UInt64.max) == .untracked)  // no range can end past it
        #expect(tracker.record(stream: 0, sequence: (1 << 40) + 1) == .reordered)  // joins the first range
        #expect(tracker.record(stream: -1, sequence: 1) == .rejected)
        #expect(tracker.record(stream: 1_000_000, sequence: 1) == .inOrder)  // no cap on the stream count
        #expect(tracker.ranges(stream: 0) == [(1 << 40)..<((1 << 40) + 2), (UInt64.max - 1)..<UInt64.max])
        let counts = tracker.counts(stream: 0, expected: 5)
        #expect(counts.received == 5)
        #expect(counts.unique == 3)
        #expect(counts.untracked == 2)
        #expect(counts.lost == 0)
        #expect(tracker.totals { _ in 1 }.rejected == 1)
    }

    @Test("ranges: in-order arrivals extend one range, gaps open ranges, late arrivals join or split them")
    func ranges() {
        var tracker = DeliveryTracker()
        for sequence in UInt64(0)..<1_000 { tracker.record(stream: 0, sequence: sequence) }
        #expect(tracker.ranges(stream: 0) == [0..<1_000])
        #expect(tracker.record(stream: 0, sequence: 1_005) == .inOrder)
        #expect(tracker.record(stream: 0, sequence: 1_010) == .inOrder)
        #expect(tracker.ranges(stream: 0) == [0..<1_000, 1_005..<1_006, 1_010..<1_011])
        #expect(tracker.record(stream: 0, sequence: 1_000) == .reordered)  // extends the first
        #expect(tracker.record(stream: 0, sequence: 1_004) == .reordered)  // extends the second downwards
        #expect(tracker.record(stream: 0, sequence: 1_002) == .reordered)  // a range of its own
        #expect(tracker.ranges(stream: 0) == [0..<1_001, 1_002..<1_003, 1_004..<1_006, 1_010..<1_011])
        #expect(tracker.record(stream: 0, sequence: 1_001) == .reordered)  // joins first and second
        #expect(tracker.record(stream: 0, sequence: 1_003) == .reordered)  // joins into one
        #expect(tracker.ranges(stream: 0) == [0..<1_006, 1_010..<1_011])
        #expect(tracker.record(stream: 0, sequence: 500) == .duplicate)
        #expect(tracker.record(stream: 0, sequence: 1_010) == .duplicate)
        #expect(tracker.record(stream: 0, sequence: 1_007) == .reordered)
        #expect(tracker.counts(stream: 0, expected: 1_011)
                    == DeliveryCounts(expected: 1_011, received: 1_010, unique: 1_008, duplicated: 2, reordered: 6))
        #expect(tracker.counts(stream: 0, expected: 1_011).lost == 3)
        #expect(tracker.uniqueCount(stream: 0, in: 1_000..<1_010) == 7)
        #expect(tracker.uniqueCount(stream: 0, in: 999..<1_011) == 9)
        #expect(tracker.uniqueCount(stream: 0, in: 2_000..<3_000) == 0)
        #expect(tracker.uniqueCount(stream: 1, in: 0..<10) == 0)
    }

    @Test("more distinct messages than expected are reported as unexpected, not as negative loss")
    func unexpected() {
        var tracker = DeliveryTracker()
        for sequence in UInt64(0)..<5 { tracker.record(stream: 0, sequence: sequence) }
        let counts = tracker.counts(stream: 0, expected: 3)
        #expect(counts.lost == 0)
        #expect(counts.unexpected == 2)
    }

    @Test("lanes merge by summing their counts")
    func mergeLanes() {
        var laneA = DeliveryTracker()
        var laneB = DeliveryTracker()
        for sequence in UInt64(0)..<100 where sequence % 10 != 3 { laneA.record(stream: 0, sequence: sequence) }
        for sequence in UInt64(0)..<100 { laneB.record(stream: 0, sequence: sequence) }
        laneB.record(stream: 0, sequence: 42)
        var total = laneA.counts(stream: 0, expected: 100)
        total.add(laneB.counts(stream: 0, expected: 100))
        #expect(total == DeliveryCounts(expected: 200, received: 191, unique: 190, duplicated: 1, reordered: 0))
        #expect(total.lost == 10)
    }

    @Test("reset forgets what was seen; reserve creates the streams")
    func resetAndReserve() {
        var tracker = DeliveryTracker()
        tracker.reserve(streams: 2, rangesPerStream: 16)
        #expect(tracker.streamCount == 2)
        tracker.record(stream: 1, sequence: 9_999)
        tracker.reset()
        #expect(tracker.record(stream: 1, sequence: 9_999) == .inOrder)
        #expect(tracker.counts(stream: 1, expected: 1) == DeliveryCounts(expected: 1, received: 1, unique: 1, duplicated: 0, reordered: 0))
    }
}
