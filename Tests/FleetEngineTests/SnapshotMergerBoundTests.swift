import FleetMetrics
import Testing
@testable import FleetEngine

/// The merge of the lanes' snapshots keeps nothing per second when the run streams its seconds out
/// (`keepsIntervalLatencies` and `keepsTimeline` off): an hour-long run holds what one second needs.
@Suite("Snapshot merger memory")
struct SnapshotMergerBoundTests {
    final class Seen: @unchecked Sendable {
        // Safety: written only by the merger's callback, which these tests call on their own thread.
        var seconds = 0
        var endToEnd: UInt64 = 0
        var maxPending = 0
    }

    /// Lane `lane`'s snapshot of second `index`: `samples` end-to-end latencies, cumulative counters.
    static func laneSnapshot(lane: Int, index: Int, samples: Int, final: Bool = false) -> LaneSnapshot {
        var latencies = LatencyRecorder()
        for sample in 0..<samples {
            latencies.record(.endToEnd, from: .intended, microseconds: UInt64(100 + (sample * 31 + index) % 9000))
        }
        var counters = ClientCounters()
        counters.published.qos1 = UInt64(index * samples)
        let start = UInt64(index - 1) * 1_000_000_000
        let end = UInt64(index) * 1_000_000_000
        return LaneSnapshot(
            lane: lane, index: index, start: start, end: end,
            fleets: [FleetLaneSnapshot(counters: counters, connected: 7500,
                                       interval: LatencyInterval(start: start, end: end, latencies: latencies))],
            isFinal: final)
    }

    @Test("an hour of two lanes' seconds: every second reaches the callback, none is kept, totals whole",
          arguments: [false, true])
    func hourStreamed(lanesOutOfStep: Bool) {
        let seen = Seen()
        let merger = SnapshotMerger(laneCount: 2, fleetNames: ["vehicles"], origin: 0, keepsIntervalLatencies: false,
                                    keepsTimeline: false) { snapshot in
            seen.seconds += 1
            seen.endToEnd += snapshot.latency.histogram(.endToEnd, from: .intended).totalCount
        }
        for index in 1...3600 {
            let final = index == 3600
            if lanesOutOfStep {
                // Lane 1 reports three seconds late: the merger holds those seconds, never more.
                merger.add(Self.laneSnapshot(lane: 0, index: index, samples: 50, final: final))
                if index > 3 { merger.add(Self.laneSnapshot(lane: 1, index: index - 3, samples: 50)) }
                if final { for late in 3598...3600 { merger.add(Self.laneSnapshot(lane: 1, index: late, samples: 50, final: late == 3600)) } }
            } else {
                merger.add(Self.laneSnapshot(lane: 0, index: index, samples: 50, final: final))
                merger.add(Self.laneSnapshot(lane: 1, index: index, samples: 50, final: final))
            }
            seen.maxPending = max(seen.maxPending, merger.pendingSeconds)
            #expect(merger.timeline.isEmpty && merger.intervals.isEmpty)
        }
        #expect(seen.seconds == 3600)
        #expect(seen.endToEnd == 3600 * 100)
        #expect(merger.fleetLatency[0].histogram(.endToEnd, from: .intended).totalCount == 3600 * 100)
        #expect(merger.pendingSeconds == 0)
        #expect(seen.maxPending == (lanesOutOfStep ? 3 : 0))
        #expect(merger.timeline.isEmpty)
        #expect(merger.intervals.isEmpty)
    }

    @Test("with the defaults the merger keeps each second (short runs, tests)")
    func keptByDefault() {
        let merger = SnapshotMerger(laneCount: 1, fleetNames: ["vehicles"], origin: 0, keepsIntervalLatencies: true,
                                    onSnapshot: nil)
        for index in 1...5 { merger.add(Self.laneSnapshot(lane: 0, index: index, samples: 10, final: index == 5)) }
        #expect(merger.timeline.count == 5)
        #expect(merger.intervals.count == 5)
        #expect(merger.intervals.map { $0.latencies.histogram(.endToEnd, from: .intended).totalCount } == [10, 10, 10, 10, 10])
    }
}
