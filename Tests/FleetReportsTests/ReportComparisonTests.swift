import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

@Suite("Comparing two reports")
struct ReportComparisonTests {
    typealias Verdict = ReportComparison.Verdict

    @Test("verdict of one metric against a 10 % tolerance", arguments: [
        (ReportComparison.Direction.lowerIsBetter, 10.0, 10.0, Verdict.same, 0.0),
        (.lowerIsBetter, 10, 9, .better, -10),
        (.lowerIsBetter, 10, 10.5, .worse, 5),
        (.lowerIsBetter, 10, 11, .worse, 10),
        (.lowerIsBetter, 10, 12, .regression, 20),
        (.lowerIsBetter, 0, 1, .regression, .infinity),
        (.lowerIsBetter, 0, 0, .same, 0),
        (.lowerIsBetter, 4, 0, .better, -100),
        (.higherIsBetter, 100, 95, .worse, -5),
        (.higherIsBetter, 100, 80, .regression, -20),
        (.higherIsBetter, 100, 120, .better, 20),
        (.higherIsBetter, 0, 5, .better, .infinity),
    ])
    func verdict(direction: ReportComparison.Direction, baseline: Double, candidate: Double, verdict: Verdict,
                 change: Double) {
        let row = ReportComparison.row("m", "ms", direction, baseline, candidate, tolerance: 10)
        #expect(row.verdict == verdict)
        #expect(row.changePercent == change)
        // A floor of 0 is no floor: the same verdicts.
        #expect(ReportComparison.row("m", "ms", direction, baseline, candidate, tolerance: 10, absoluteFloor: 0) == row)
    }

    @Test("verdict of a latency around an absolute floor, with a 10 % tolerance", arguments: [
        // The motivating case: p99 0.9 ms -> 1.1 ms is +22 % but only 0.2 ms.
        (0.9, 1.1, 1.0, Verdict.worse),
        (0.9, 1.1, 0, .regression),
        // Exactly at the floor, even at +200 %.
        (0.5, 1.5, 1, .worse),
        // At the floor up to binary rounding: 8.999 - 7.999 = 1.0000000000000009.
        (7.999, 8.999, 1, .worse),
        // Just above the floor: the percentage decides.
        (0.5, 1.501, 1, .regression),
        (20, 21.001, 1, .worse),
        (20, 23, 1, .regression),
        // A rise from zero within the floor is worse; beyond it, or without a floor, a regression.
        (0, 0.5, 1, .worse),
        (0, 0.5, 0, .regression),
        (0, 1.5, 1, .regression),
        // Improvements and no change are untouched.
        (1.1, 0.9, 1, .better),
        (2, 0, 1, .better),
        (0.5, 0.5, 1, .same),
        // A 500 µs floor.
        (0.9, 1.4, 0.5, .worse),
        (0.9, 1.401, 0.5, .regression),
    ])
    func floor(baseline: Double, candidate: Double, floor: Double, verdict: Verdict) {
        let row = ReportComparison.row("latency.end_to_end.p99", "ms", .lowerIsBetter, baseline, candidate,
                                       tolerance: 10, absoluteFloor: floor)
        #expect(row.verdict == verdict)
        // The change stays the plain percentage; the floor only changes the verdict.
        let plain = ReportComparison.row("m", "ms", .lowerIsBetter, baseline, candidate, tolerance: 10)
        #expect(row.changePercent == plain.changePercent)
    }

    @Test("a rise from 0 ms to 0.5 ms: +∞ % either way, worse with a 1 ms floor, a regression without")
    func floorFromZero() {
        let floored = ReportComparison.row("latency.puback.p50", "ms", .lowerIsBetter, 0, 0.5, tolerance: 10,
                                           absoluteFloor: 1)
        #expect(floored.verdict == .worse)
        #expect(floored.changePercent == .infinity)
        let unfloored = ReportComparison.row("latency.puback.p50", "ms", .lowerIsBetter, 0, 0.5, tolerance: 10,
                                             absoluteFloor: 0)
        #expect(unfloored.verdict == .regression)
        #expect(unfloored.changePercent == .infinity)
    }

    @Test("a metric only one report has is not comparable, and not a regression")
    func missing() {
        let row = ReportComparison.row("m", "ms", .lowerIsBetter, 3, nil, tolerance: 10)
        #expect(row.verdict == .incomparable)
        #expect(row.changePercent == nil)
    }

    @Test("tolerance as given on the command line", arguments: [
        ("10%", 10.0 as Double?), ("10", 10), ("2.5%", 2.5), ("0", 0), ("-1%", nil), ("abc", nil), ("%", nil),
        ("inf", nil), ("", nil),
    ])
    func tolerance(text: String, expected: Double?) {
        #expect(ReportComparison.parseTolerance(text) == expected)
    }

    @Test("the same report against itself: every row the same, no regression")
    func identical() {
        let report = SampleReports.make()
        let comparison = ReportComparison(baseline: report, candidate: report)
        #expect(!comparison.hasRegression)
        #expect(comparison.isLikeForLike)
        // 3 TCP connects, 3 PUBACKs and 11 schedule lags are too few for a p90 (10), p99 (100) or p999 (1,000).
        #expect(comparison.rows.filter { $0.verdict == .tooFewSamples }.map(\.metric) == [
            "latency.tcp_connect.p90", "latency.tcp_connect.p99", "latency.tcp_connect.p999",
            "latency.puback.p90", "latency.puback.p99", "latency.puback.p999",
            "latency.schedule_lag.p99", "latency.schedule_lag.p999",
        ])
        #expect(comparison.rows.allSatisfy { $0.verdict == .same || $0.verdict == .tooFewSamples })
        #expect(comparison.rows.map(\.metric) == [
            "latency.tcp_connect.mean", "latency.tcp_connect.p50", "latency.tcp_connect.p90", "latency.tcp_connect.p99",
            "latency.tcp_connect.p999", "latency.tcp_connect.max",
            "latency.puback.mean", "latency.puback.p50", "latency.puback.p90", "latency.puback.p99",
            "latency.puback.p999", "latency.puback.max",
            "latency.end_to_end.mean", "latency.end_to_end.p50", "latency.end_to_end.p90", "latency.end_to_end.p99",
            "latency.end_to_end.p999", "latency.end_to_end.max",
            "latency.schedule_lag.mean", "latency.schedule_lag.p50", "latency.schedule_lag.p90",
            "latency.schedule_lag.p99", "latency.schedule_lag.p999", "latency.schedule_lag.max",
            "rates.published", "rates.received",
            "delivery.qos0.lost", "delivery.qos0.loss_ratio", "delivery.qos0.duplicated",
            "delivery.qos1.lost", "delivery.qos1.loss_ratio", "delivery.qos1.duplicated",
            "delivery.qos2.lost", "delivery.qos2.loss_ratio", "delivery.qos2.duplicated",
            "ack_timeouts.puback", "ack_timeouts.pingresp", "ack_timeouts.total",
            "connections.failed", "connections.reconnects", "generator.dropped",
        ])
    }

    @Test("request/response rows when either run sent requests: fewer answers or more timeouts is a regression")
    func requestRows() {
        let base = SampleReports.make()
        #expect(!ReportComparison(baseline: base, candidate: base).rows.contains { $0.metric.hasPrefix("requests.") })
        var baseline = base
        baseline.requests = RequestSummary(sent: 100, answered: 100, timedOut: 0)
        var candidate = base
        candidate.requests = RequestSummary(sent: 100, answered: 80, timedOut: 20)
        let rows = ReportComparison(baseline: baseline, candidate: candidate).rows.filter { $0.metric.hasPrefix("requests.") }
        #expect(rows.map(\.metric) == ["requests.answered", "requests.timed_out"])
        #expect(rows.map(\.baseline) == [100, 0])
        #expect(rows.map(\.candidate) == [80, 20])
        #expect(rows.allSatisfy { $0.verdict == .regression })
    }

    /// The sample with end-to-end latency doubled, QoS 2 losing 3 messages and a slower publish rate.
    static func worseCandidate() -> RunReport {
        var candidate = SampleReports.make()
        var latency = SampleReports.latency()
        var doubled = HDRHistogram()
        for value in stride(from: UInt64(2), through: 2000, by: 2) { doubled.record(value) }
        latency = LatencyRecorder()
        latency.add(SampleReports.latency().histogram(.tcpConnect, from: .sent), kind: .tcpConnect, origin: .sent)
        latency.add(doubled, kind: .endToEnd, origin: .intended)
        candidate.latency = latency
        candidate.delivery.qos2.lost = 3
        candidate.messages.published.qos0 = 95  // 345 in 3 s instead of 350: -1.4 %, within tolerance
        return candidate
    }

    @Test("a worse candidate without a latency floor: latency and loss regress, a small rate drop is only worse")
    func regressions() throws {
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate(), tolerance: 10,
                                          latencyFloorMilliseconds: 0)
        func row(_ metric: String) throws -> ReportComparison.Row {
            try #require(comparison.rows.first { $0.metric == metric })
        }
        #expect(comparison.hasRegression)
        #expect(try row("latency.end_to_end.p99").verdict == .regression)
        #expect(try row("latency.end_to_end.p99").baseline == 0.99)
        #expect(try row("latency.end_to_end.p99").candidate == 1.98)
        #expect(try row("latency.end_to_end.p99").changePercent == 100)
        #expect(try row("latency.tcp_connect.p50").verdict == .same)
        #expect(try row("latency.tcp_connect.p99").verdict == .tooFewSamples)
        #expect(try row("latency.puback.p99").verdict == .incomparable)
        #expect(try row("delivery.qos2.lost").verdict == .regression)
        #expect(try row("delivery.qos2.lost").changePercent == .infinity)
        #expect(try row("rates.published").verdict == .worse)
        #expect(comparison.regressions.map(\.metric) == [
            "latency.end_to_end.mean", "latency.end_to_end.p50", "latency.end_to_end.p90", "latency.end_to_end.p99",
            "latency.end_to_end.p999", "latency.end_to_end.max", "delivery.qos2.lost", "delivery.qos2.loss_ratio",
        ])
        // Read the other way round, the same changes are improvements.
        let reversed = ReportComparison(baseline: Self.worseCandidate(), candidate: SampleReports.make(), tolerance: 10,
                                        latencyFloorMilliseconds: 0)
        #expect(!reversed.hasRegression)
        #expect(reversed.rows.first { $0.metric == "latency.end_to_end.p99" }?.verdict == .better)
    }

    @Test("a tolerance of 150 % lets the doubled latency through, but never a rise from zero")
    func wideTolerance() {
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate(), tolerance: 150,
                                          latencyFloorMilliseconds: 0)
        #expect(comparison.regressions.map(\.metric) == ["delivery.qos2.lost", "delivery.qos2.loss_ratio"])
    }

    @Test("the default 1 ms latency floor: the sub-millisecond doubling is only worse; new losses still regress")
    func defaultFloor() throws {
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate())
        #expect(comparison.latencyFloorMilliseconds == 1)
        #expect(comparison.regressions.map(\.metric) == ["delivery.qos2.lost", "delivery.qos2.loss_ratio"])
        let endToEnd = comparison.rows.filter { $0.metric.hasPrefix("latency.end_to_end.") }
        #expect(endToEnd.map(\.verdict) == Array(repeating: .worse, count: 6))
        // max 1 ms -> 2 ms: exactly at the floor.
        let max = try #require(endToEnd.last)
        #expect(max.metric == "latency.end_to_end.max")
        #expect(max.baseline == 1)
        #expect(max.candidate == 2)
        #expect(max.changePercent == 100)
        #expect(comparison.summary == "2 regressions beyond the 10 % tolerance (latency changes within 1 ms are not "
            + "counted): delivery.qos2.lost, delivery.qos2.loss_ratio")
        let identical = ReportComparison(baseline: SampleReports.make(), candidate: SampleReports.make())
        #expect(identical.summary == "No regression beyond the 10 % tolerance (latency changes within 1 ms are not counted).")
    }

    @Test("a 500 µs latency floor: changes of 0.5 ms stay worse, larger ones regress; counts ignore any floor")
    func halfMillisecondFloor() throws {
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate(),
                                          latencyFloorMilliseconds: 0.5)
        #expect(comparison.regressions.map(\.metric) == [
            "latency.end_to_end.p90", "latency.end_to_end.p99", "latency.end_to_end.p999", "latency.end_to_end.max",
            "delivery.qos2.lost", "delivery.qos2.loss_ratio",
        ])
        #expect(comparison.rows.first { $0.metric == "latency.end_to_end.p50" }?.verdict == .worse)
        #expect(comparison.rows.first { $0.metric == "latency.end_to_end.mean" }?.verdict == .worse)
        #expect(comparison.summary.hasPrefix("6 regressions beyond the 10 % tolerance (latency changes within 0.5 ms "
            + "are not counted): "))
        // A floor far above every change: latency never regresses, a rise from zero in a count still does.
        let huge = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate(),
                                    latencyFloorMilliseconds: 1000)
        #expect(huge.regressions.map(\.metric) == ["delivery.qos2.lost", "delivery.qos2.loss_ratio"])
        #expect(huge.rows.first { $0.metric == "rates.published" }?.verdict == .worse)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(comparison.json().utf8)) as? [String: Any])
        #expect(json["latency_floor_ms"] as? Double == 0.5)
    }

    @Test("renderings: table, Markdown and JSON carry the same rows")
    func renderings() throws {
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate(), tolerance: 10,
                                          latencyFloorMilliseconds: 0)
        let table = comparison.table()
        // The regressed mean (+99.8 %) is shown too, and widens the change column.
        #expect(table.contains("\nlatency.end_to_end.p99    ms               0.99       1.98   +100 %  REGRESSION\n"))
        #expect(table.hasSuffix("\n8 regressions beyond the 10 % tolerance: latency.end_to_end.mean, latency.end_to_end.p50, latency.end_to_end.p90, latency.end_to_end.p99, latency.end_to_end.p999, latency.end_to_end.max, delivery.qos2.lost, delivery.qos2.loss_ratio\n"
            + "9 more rows (mean, p90, p999 of each latency) with --all.\n"))
        let markdown = comparison.markdown()
        #expect(markdown.contains("| `latency.end_to_end.p99` | ms | 0.99 | 1.98 | +100 % | **regression** |\n"))
        #expect(markdown.contains("| `delivery.qos2.lost` | messages | 0 | 3 | +∞ % | **regression** |\n"))
        #expect(markdown.contains("| `latency.puback.p99` | ms | 2 | – | – | not comparable |\n"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(comparison.json().utf8)) as? [String: Any])
        #expect(json["schema"] as? String == "fleetbench.compare/2")
        #expect(json["has_regression"] as? Bool == true)
        #expect(json["tolerance_percent"] as? Int == 10)
        #expect(json["latency_floor_ms"] as? Int == 0)
        let floored = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate())
        #expect(floored.json().contains("\"tolerance_percent\": 10,\n  \"latency_floor_ms\": 1,\n"))
        let rows = try #require(json["rows"] as? [[String: Any]])
        #expect(rows.count == comparison.rows.count)
        let lost = try #require(rows.first { $0["metric"] as? String == "delivery.qos2.lost" })
        #expect(lost["change_percent"] is NSNull)
        #expect(lost["from_zero"] as? Bool == true)
        #expect(lost["verdict"] as? String == "regression")
        #expect(lost["direction"] as? String == "lower_is_better")
    }

    @Test("comparison survives report.json: reports read back compare as the originals")
    func fromFiles() throws {
        let baseline = try RunReport.parse(text: try SampleReports.make().jsonText())
        let candidate = try RunReport.parse(text: try Self.worseCandidate().jsonText())
        let fromFiles = ReportComparison(baseline: baseline, candidate: candidate)
        let direct = ReportComparison(baseline: SampleReports.make(), candidate: Self.worseCandidate())
        #expect(fromFiles.rows == direct.rows)
    }

    @Test("rates divide by the publishing phase (run.publish_s), as thresholds and the HTML report do")
    func ratesOverPublishingPhase() throws {
        var baseline = SampleReports.make()
        baseline.run.publishSeconds = 2  // a 3 s run of which 2 s published
        var candidate = SampleReports.make()
        candidate.run.publishSeconds = 0  // an older report without publish_s: the whole run
        let comparison = ReportComparison(baseline: baseline, candidate: candidate, tolerance: 10, latencyFloorMilliseconds: 0)
        let row = try #require(comparison.rows.first { $0.metric == "rates.published" })
        let published = Double(baseline.messages.published.total)
        #expect(row.baseline == published / 2)
        #expect(row.candidate == (published / 3 * 1000).rounded() / 1000)
    }
}
