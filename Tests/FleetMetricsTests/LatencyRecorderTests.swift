import Testing
@testable import FleetMetrics

@Suite("Latency recorders")
struct LatencyRecorderTests {
    @Test("a message's latency is recorded from its intended and its actual send time, in rounded microseconds")
    func bothOrigins() {
        var recorder = LatencyRecorder()
        // Intended at 1 ms, sent 300.4 µs late, received 2 ms after intended.
        recorder.record(.endToEnd, intendedAt: 1_000_000, sentAt: 1_300_400, completedAt: 3_000_000)
        let intended = recorder.histogram(.endToEnd, from: .intended)
        let sent = recorder.histogram(.endToEnd, from: .sent)
        #expect(intended.recordedValues().map(\.lowestEquivalentValue) == [2000])
        #expect(sent.recordedValues().map(\.lowestEquivalentValue) == [1700])  // 1699.6 µs rounds to 1700
        #expect(recorder.kindsWithSamples == [.endToEnd])
        #expect(recorder.histogram(.puback, from: .intended).totalCount == 0)
    }

    @Test("a completion before its start records 0 and is counted as clamped")
    func clockAnomaly() {
        var recorder = LatencyRecorder()
        recorder.record(.tcpConnect, startedAt: 5_000, completedAt: 1_000)
        let histogram = recorder.histogram(.tcpConnect, from: .sent)
        #expect(histogram.count(atIndex: 0) == 1)
        #expect(histogram.clampedLowCount == 1)
    }

    @Test("recorders merge kind by kind and origin by origin")
    func merge() {
        var laneA = LatencyRecorder()
        var laneB = LatencyRecorder()
        var single = LatencyRecorder()
        for value in UInt64(1)...2000 {
            let kind: LatencyKind = value % 3 == 0 ? .puback : .endToEnd
            let origin: LatencyOrigin = value % 2 == 0 ? .intended : .sent
            if value % 5 == 0 {
                laneA.record(kind, from: origin, microseconds: value * 37)
            } else {
                laneB.record(kind, from: origin, microseconds: value * 37)
            }
            single.record(kind, from: origin, microseconds: value * 37)
        }
        var merged = LatencyRecorder()
        merged.add(laneA)
        merged.add(laneB)
        for kind in LatencyKind.allCases {
            for origin in LatencyOrigin.allCases {
                #expect(
                    merged.histogram(kind, from: origin).recordedValues()
                        == single.histogram(kind, from: origin).recordedValues())
            }
        }
        #expect(merged.kindsWithSamples == [.puback, .endToEnd])
    }

    @Test("interval snapshots hand over exactly what was recorded since the last one, and recording goes on")
    func intervals() {
        var lane = IntervalLatencyRecorder(startingAt: 0)
        var total = LatencyRecorder()
        var seen: [UInt64] = []
        var held: LatencyInterval? = nil
        for second in UInt64(0)..<5 {
            for value in 1...(second + 1) * 10 {
                lane.record(.endToEnd, from: .intended, microseconds: second * 1000 + value)
            }
            let interval = lane.takeInterval(endingAt: (second + 1) * 1_000_000_000)
            #expect(interval.start == second * 1_000_000_000)
            #expect(interval.end == (second + 1) * 1_000_000_000)
            let histogram = interval.latencies.histogram(.endToEnd, from: .intended)
            seen.append(histogram.totalCount)
            #expect(histogram.min == histogram.lowestEquivalentValue(second * 1000 + 1))
            total.add(interval.latencies)
            // In second 2 the merger holds on to its snapshot while the lane goes on: it must not change.
            if second == 2 { held = interval }
        }
        #expect(seen == [10, 20, 30, 40, 50])
        #expect(total.histogram(.endToEnd, from: .intended).totalCount == 150)
        #expect(held?.latencies.histogram(.endToEnd, from: .intended).totalCount == 30)
        #expect(held?.latencies.histogram(.endToEnd, from: .intended).min == 2001)
        #expect(lane.current.histogram(.endToEnd, from: .intended).totalCount == 0)
    }
}
