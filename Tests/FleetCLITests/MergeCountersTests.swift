import FleetEngine
import FleetMetrics
import FleetReports
import Foundation
import Testing
@testable import FleetCLI

/// `fleetbench merge` sums every count of its segments' reports, top level and per fleet, through the report
/// sections' own `add`: the counts report.json gained from `ClientCounters` (churn skips, transport errors by text,
/// both sides of request/response, ack-batching fallbacks) as much as the older ones.
@Suite("merge: every count of the segments summed")
struct MergeCountersTests {
    /// One segment's report: two fleets whose counters differ by `base`, the run's counters their sum.
    static func part(index: Int, base: UInt64, transportError: String) -> MergeCommand.Part {
        func fleetCounters(_ offset: UInt64) -> ClientCounters {
            var counters = ClientCounters()
            counters.connectsAttempted = base + offset + 10
            counters.connectsSucceeded = base + offset + 10
            counters.churnSkipped = base + offset + 1
            counters.recordTransportError(transportError, count: base + offset + 2)
            counters.requestsSent = base + offset + 20
            counters.responsesReceived = base + offset + 18
            counters.responsesLate = offset + 1
            counters.requestsAnswered = base + offset + 19
            counters.requestsUnanswered = offset + 1
            counters.lowWatermarkFallbacks = base + offset + 3
            counters.lowWatermarkRearms = base + offset + 2
            counters.unsentAtEnd = base + offset + 4
            counters.droppedSlots = base + offset + 5
            counters.abandonedPublishes = base + offset + 6
            counters.subscriptionsDowngraded = offset + 1
            counters.received = PerQoSCounts(qos1: base + offset + 30)
            counters.arrived = PerQoSCounts(qos1: base + offset + 37)
            return counters
        }
        let fleets = [fleetCounters(0), fleetCounters(100)]
        var run = ClientCounters()
        for fleet in fleets { run.add(fleet) }
        var report = RunReport(toolVersion: "test", scenario: ScenarioInfo(name: "m", file: "m.json", sha256: "00"),
                               run: RunInfo(startedAt: Date(timeIntervalSince1970: 1_800_000_000), durationSeconds: 2,
                                            publishSeconds: 2))
        report.setCounters(run, peakConnected: 20)
        report.fleets = zip(["cars", "backend"], fleets).map { name, counters in
            FleetReport(name: name, clients: 10, counters: counters, peakConnected: 10, delivery: DeliveryByQoS(),
                        latency: LatencyRecorder())
        }
        report.segments = SegmentInfo(index: index, count: 2, deliveryFinal: false)
        var delivery = SegmentDelivery(fleetCount: 2)
        delivery.index = index
        delivery.count = 2
        let segment = SegmentFile(runID: 0x5e6d, seed: 7, scenarioSHA256: "00", index: index, count: 2,
                                  delivery: delivery, requests: SegmentFile.Requests())
        return MergeCommand.Part(directory: "segment-\(index)", report: report, segment: segment, intervals: [])
    }

    @Test("churn skips, transport errors by text, requests, ack-batching fallbacks and per-fleet generator counts add up")
    func countsAddUp() throws {
        let merged = try MergeCommand.merge([
            Self.part(index: 1, base: 1000, transportError: "TLS handshake timeout"),
            Self.part(index: 0, base: 0, transportError: "TLS error: wrong version number"),
        ])
        // Segment 0: fleets 1 and 101 churn skips; segment 1: 1001 and 1101.
        #expect(merged.connections.churnSkipped == 1 + 101 + 1001 + 1101)
        #expect(merged.connections.transportErrors == [
            ReasonCount("TLS handshake timeout", 1002 + 1102), ReasonCount("TLS error: wrong version number", 2 + 102),
        ])
        #expect(merged.requests == RequestSummary(
            sent: 20 + 120 + 1020 + 1120, answered: 18 + 118 + 1018 + 1118,
            // Per fleet: 2 without a reply plus the late ones (1 and 101), in each segment.
            timedOut: (2 + 1) + (2 + 101) + (2 + 1) + (2 + 101), late: 1 + 101 + 1 + 101,
            responderAnswered: 19 + 119 + 1019 + 1119, responderUnanswered: 1 + 101 + 1 + 101))
        #expect(merged.generator.lowWatermarkFallbacks == 3 + 103 + 1003 + 1103)
        #expect(merged.generator.lowWatermarkRearms == 2 + 102 + 1002 + 1102)
        #expect(merged.generator.unsentAtEnd == 4 + 104 + 1004 + 1104)
        #expect(merged.connections.attempted == 10 + 110 + 1010 + 1110)
        // This run's messages received, and every arrival (7 more per fleet: other runs' messages), apart.
        #expect(merged.messages.received == PerQoSCounts(qos1: 30 + 130 + 1030 + 1130))
        #expect(merged.messages.arrived == PerQoSCounts(qos1: 37 + 137 + 1037 + 1137))

        // Per fleet: each fleet's counts of both segments (dropped, unsent, abandoned and downgrades included).
        let cars = try #require(merged.fleets.first { $0.name == "cars" })
        #expect(cars.connections.churnSkipped == 1 + 1001)
        #expect(cars.connections.transportErrors == [
            ReasonCount("TLS handshake timeout", 1002), ReasonCount("TLS error: wrong version number", 2),
        ])
        #expect(cars.requests.late == 2)
        #expect(cars.requests.responderAnswered == 19 + 1019)
        #expect(cars.unsentAtEnd == 4 + 1004)
        #expect(cars.droppedSlots == 5 + 1005)
        #expect(cars.abandonedPublishes == 6 + 1006)
        #expect(cars.downgrades.subscriptionQoS == 2)
        #expect(cars.messages.received == PerQoSCounts(qos1: 30 + 1030))
        #expect(cars.messages.arrived == PerQoSCounts(qos1: 37 + 1037))
        let backend = try #require(merged.fleets.first { $0.name == "backend" })
        #expect(backend.connections.churnSkipped == 101 + 1101)
        #expect(backend.downgrades.subscriptionQoS == 202)

        // report.json of the merge holds them, and reads back to the same figures.
        let reread = try RunReport.parse(text: try merged.jsonText())
        #expect(reread.connections == merged.connections)
        #expect(reread.requests == merged.requests)
        #expect(reread.messages == merged.messages)
        #expect(reread.fleets.map(\.messages) == merged.fleets.map(\.messages))
        #expect(reread.generator.lowWatermarkFallbacks == merged.generator.lowWatermarkFallbacks)
        #expect(reread.fleets.map(\.connections) == merged.fleets.map(\.connections))
    }
}
