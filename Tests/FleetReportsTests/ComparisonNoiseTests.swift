import FleetJSON
import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

/// Issue 19: compare says first whether the runs are like for like, and does not call noise a regression.
@Suite("Comparing two reports: like for like, samples and noise")
struct ComparisonNoiseTests {
    /// A report with only the given end-to-end and subscribe latencies (µs, intended origin).
    static func report(endToEnd: [UInt64], subscribe: [UInt64] = []) -> RunReport {
        var report = SampleReports.make()
        var latency = LatencyRecorder()
        for value in endToEnd { latency.record(.endToEnd, from: .intended, microseconds: value) }
        for value in subscribe { latency.record(.subscribe, from: .sent, microseconds: value) }
        report.latency = latency
        return report
    }

    @Test("percentile p needs 1/(1-p) samples: p50 2, p90 10, p99 100, p999 1,000")
    func minimumSamples() {
        #expect([50, 90, 99, 99.9].map(ReportComparison.minimumSamples(percentile:)) == [2, 10, 100, 1000])
    }

    @Test("one subscribe sample each: no percentile, and a max of +1883 % is chance, not a regression")
    func oneSample() throws {
        let comparison = ReportComparison(baseline: Self.report(endToEnd: [], subscribe: [100]),
                                          candidate: Self.report(endToEnd: [], subscribe: [1983]))
        #expect(!comparison.hasRegression)
        let rows = comparison.rows.filter { $0.metric.hasPrefix("latency.suback.") }
        #expect(rows.map(\.verdict) == [.tooFewSamples, .tooFewSamples, .tooFewSamples, .tooFewSamples, .tooFewSamples, .worse])
        #expect(ReportComparison.verdictText(rows[0]) == "too few samples (1 and 1; mean needs 2)")
        let p99 = try #require(rows.first { $0.metric == "latency.suback.p99" })
        #expect(ReportComparison.verdictText(p99) == "too few samples (1 and 1; p99 needs 100)")
        #expect(p99.changePercent == nil)
        let max = try #require(rows.last)
        #expect(abs(try #require(max.changePercent) - 1883) < 1e-9)
        #expect(max.pValue == 0.5)
        #expect(ReportComparison.verdictText(max) == "worse (within noise, p = 0.5)")
        #expect(comparison.table().contains(
            "\nlatency.suback.p99        ms                0.1      1.983        –  too few samples (1 and 1; p99 needs 100)\n"))
    }

    @Test("Fisher's exact test, one-sided: exact values")
    func fisher() {
        // One sample each, the candidate's above: one chance in two.
        #expect(ReportComparison.fisherWorse(baselineAbove: 0, baselineTotal: 1, candidateAbove: 1, candidateTotal: 1) == 0.5)
        // The candidate holds the 3 highest of 360 samples: C(180,3) / C(360,3) = 5735160 / 46267920.
        let p = ReportComparison.fisherWorse(baselineAbove: 0, baselineTotal: 180, candidateAbove: 3, candidateTotal: 180)
        #expect(abs(p - 5_735_160.0 / 46_267_920.0) < 1e-12)
        // Nothing above in either run: certainly chance.
        #expect(ReportComparison.fisherWorse(baselineAbove: 0, baselineTotal: 10, candidateAbove: 0, candidateTotal: 10) == 1)
    }

    @Test("one slow outlier among 1,000 samples raises the max far beyond the floor, but is within noise")
    func outlier() throws {
        let values = Array(UInt64(1)...1000)
        let comparison = ReportComparison(baseline: Self.report(endToEnd: values),
                                          candidate: Self.report(endToEnd: values.dropLast() + [50_000]))
        let max = try #require(comparison.rows.first { $0.metric == "latency.end_to_end.max" })
        #expect(max.verdict == .worse)
        // 50 ms is recorded in a bucket whose highest value is 50.015 ms.
        #expect(max.candidate == 50.015)
        #expect(max.changePercent == 4901.5)
        #expect(abs(try #require(max.pValue) - 0.5) < 1e-9)
        #expect(!comparison.hasRegression)
    }

    @Test("a hundred slow samples among 1,000: p99, p999 and max regress, significantly")
    func slowTail() throws {
        let values = Array(UInt64(1)...1000)
        let comparison = ReportComparison(baseline: Self.report(endToEnd: values),
                                          candidate: Self.report(endToEnd: values.dropLast(100) + Array(repeating: 50_000, count: 100)))
        #expect(comparison.regressions.map(\.metric) == [
            "latency.end_to_end.mean", "latency.end_to_end.p99", "latency.end_to_end.p999", "latency.end_to_end.max",
        ])
        for row in comparison.regressions { #expect(try #require(row.pValue) < 1e-6) }
    }

    @Test("the default table: p50, p99 and max of each latency, counts and rates, regressions first; --all every row")
    func compactTable() throws {
        let values = Array(UInt64(1)...1000)
        var candidate = Self.report(endToEnd: values.dropLast(100) + Array(repeating: 50_000, count: 100))
        candidate.delivery.qos2.lost = 3
        let comparison = ReportComparison(baseline: Self.report(endToEnd: values), candidate: candidate)
        let metrics = comparison.shownRows().map(\.metric)
        // The mean and p999 are no key rows, but they regressed: shown, in report order among the regressions.
        #expect(metrics == [
            "latency.end_to_end.mean", "latency.end_to_end.p99", "latency.end_to_end.p999", "latency.end_to_end.max",
            "delivery.qos2.lost", "delivery.qos2.loss_ratio",
            "latency.end_to_end.p50",
            "rates.published", "rates.received",
            "delivery.qos0.lost", "delivery.qos0.loss_ratio", "delivery.qos0.duplicated",
            "delivery.qos1.lost", "delivery.qos1.loss_ratio", "delivery.qos1.duplicated",
            "delivery.qos2.duplicated",
            "ack_timeouts.puback", "ack_timeouts.pingresp", "ack_timeouts.total",
            "connections.failed", "connections.reconnects", "generator.dropped",
        ])
        #expect(comparison.shownRows(all: true).count == comparison.rows.count)
        #expect(comparison.shownRows(all: true).prefix(6).map(\.metric) == [
            "latency.end_to_end.mean", "latency.end_to_end.p99", "latency.end_to_end.p999", "latency.end_to_end.max",
            "delivery.qos2.lost", "delivery.qos2.loss_ratio",
        ])
        let table = comparison.table()
        #expect(table.contains("\n\n6 regressions beyond the 10 % tolerance"))
        #expect(table.hasSuffix("\n1 more row (mean, p90, p999 of each latency) with --all.\n"))
        #expect(!comparison.table(all: true).contains("more row"))
        #expect(comparison.markdown().hasSuffix("\n\n1 more row (mean, p90, p999 of each latency) with --all.\n"))
    }

    @Test("a regressed mean or p90 is named in the summary and shown in the default table, first, in every format and the trend")
    func hiddenRowRegressed() throws {
        // 900 fast and 100 slow samples against 800 and 200: p50, p99 and max stay, the p90 and the mean double.
        let fast = [UInt64](repeating: 100, count: 800)
        let slow = [UInt64](repeating: 20_000, count: 100)
        let baseline = Self.report(endToEnd: fast + [UInt64](repeating: 100, count: 100) + slow)
        let candidate = Self.report(endToEnd: fast + slow + slow)
        let comparison = ReportComparison(baseline: baseline, candidate: candidate)
        #expect(comparison.regressions.map(\.metric) == ["latency.end_to_end.mean", "latency.end_to_end.p90"])
        #expect(comparison.regressions.allSatisfy { !$0.isKey })
        let shown = comparison.shownRows()
        #expect(shown.prefix(3).map(\.metric) == ["latency.end_to_end.mean", "latency.end_to_end.p90", "latency.end_to_end.p50"])
        #expect(shown.filter { !$0.isKey }.count == 2)
        let table = comparison.table()
        let p90Line = try #require(table.split(separator: "\n").first { $0.hasPrefix("latency.end_to_end.p90 ") })
        // 20,000 µs is reported as the top of its HDR bucket (20,000-20,015 µs), as every percentile is.
        #expect(p90Line.hasSuffix("+19915 %  REGRESSION"))
        #expect(table.hasSuffix(": latency.end_to_end.mean, latency.end_to_end.p90\n1 more row (mean, p90, p999 of each latency) with --all.\n"))
        #expect(comparison.markdown().contains("| `latency.end_to_end.p90` | ms | 0.1 | 20.015 | +19915 % | **regression** |\n"))
        let rows = try ComparisonHTMLTests.section("rows", in: ComparisonHTML.render(comparison, baseline: baseline, candidate: candidate))
        #expect(rows.contains("<code>latency.end_to_end.p90</code>"))
        #expect(rows.contains("<code>latency.end_to_end.mean</code>"))
        #expect(!rows.contains("<code>latency.end_to_end.p999</code>"))
        // The trend of the same runs lists them too, as its first lines.
        let trend = TrendComparison(runs: [baseline, baseline, candidate])
        #expect(trend.lines().prefix(2).map(\.metric) == ["latency.end_to_end.mean", "latency.end_to_end.p90"])
        #expect(trend.lines().count == shown.count)
    }

    /// The sample report run again differently: another broker, version, duration, seed and a --set.
    static func differentRun() -> RunReport {
        var candidate = SampleReports.make()
        candidate.brokers = ["mqtt://10.0.0.5:5672"]
        candidate.brokerEmbedded = false
        candidate.toolVersion = "0.2.0"
        candidate.run.durationSeconds = 30
        candidate.run.seed = 7
        candidate.generator.saturated = false
        candidate.generator.saturationReasons = []
        candidate.scenario.sha256 = "0123456789abcdef" + String(repeating: "0", count: 48)
        candidate.scenario.redacted = .object([
            JSONMember("name", .string("vehicles soak")),
            JSONMember("brokers", .array([.string("mqtt://user:********@127.0.0.1:1883")])),
            JSONMember("fleets", .array([.object([JSONMember("name", .string("cars")), JSONMember("protocol", .string("5"))])])),
        ])
        return candidate
    }

    @Test("like for like: the same run twice says so, and names what it checked")
    func likeForLike() throws {
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: SampleReports.make())
        #expect(comparison.isLikeForLike)
        #expect(comparison.likeForLikeLine == "Like for like: scenario vehicles soak, file sha256 9f86d081884c, same "
            + "settings and overrides, brokers embedded mosquitto, fleetbench 0.1.0, duration 3 s, both finished, seed 42, "
            + "both generators saturated, machine bench-1, 2 cores.")
        #expect(comparison.table().hasPrefix("""
            baseline:  vehicles soak @ 2026-11-29T15:16:30.125Z
            candidate: vehicles soak @ 2026-11-29T15:16:30.125Z

            \(comparison.likeForLikeLine)
            Caution: both runs' generators were saturated (they could not keep their own schedule): their latencies measure this machine's load as well as the broker.

            metric
            """))
        #expect(comparison.markdown().contains("`\n\n\(comparison.likeForLikeLine)\n\n"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(comparison.json().utf8)) as? [String: Any])
        #expect(json["like_for_like"] as? Bool == true)
        #expect((json["differences"] as? [Any])?.isEmpty == true)
    }

    @Test("not like for like: brokers, version, duration, seed, scenario file and settings, in every format")
    func notLikeForLike() throws {
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: Self.differentRun())
        #expect(!comparison.isLikeForLike)
        #expect(comparison.differences.map(\.what) == [
            "scenario file sha256", "setting fleets", "brokers", "fleetbench", "duration", "seed", "generator saturated",
        ])
        #expect(comparison.table().contains("""

            NOT like for like: 7 differences between the runs, which may explain changes below as well as the brokers or fleetbench would:
              scenario file sha256  9f86d081884c -> 0123456789ab
              setting fleets        (unset) -> [{"name":"cars","protocol":"5"}]
              brokers               embedded mosquitto -> mqtt://10.0.0.5:5672
              fleetbench            0.1.0 -> 0.2.0
              duration              3 s -> 30 s
              seed                  42 -> 7
              generator saturated   yes (schedule lag p99 20 µs above 10 µs) -> no

            metric
            """))
        let markdown = comparison.markdown()
        #expect(markdown.contains("| brokers | `embedded mosquitto` | `mqtt://10.0.0.5:5672` |\n"))
        #expect(markdown.contains("**NOT like for like: 7 differences"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(comparison.json().utf8)) as? [String: Any])
        #expect(json["like_for_like"] as? Bool == false)
        let differences = try #require(json["differences"] as? [[String: String]])
        #expect(differences[4] == ["what": "duration", "baseline": "3 s", "candidate": "30 s"])
    }

    @Test("the both-saturated caution follows the differences, in text and Markdown")
    func cautionAfterDifferences() {
        var candidate = SampleReports.make()
        candidate.run.seed = 7
        let comparison = ReportComparison(baseline: SampleReports.make(), candidate: candidate)
        let caution = "Caution: both runs' generators were saturated (they could not keep their own schedule): their "
            + "latencies measure this machine's load as well as the broker."
        #expect(comparison.caution == caution)
        #expect(comparison.table().contains("\n  seed  42 -> 7\n\(caution)\n\nmetric "))
        #expect(comparison.markdown().contains("| seed | `42` | `7` |\n\n**\(caution)**\n\n"))
    }

    @Test("a --set shows as the setting it changed, by the fleet's name")
    func overrideDifference() {
        func scenario(count: Int64) -> JSONValue {
            .object([JSONMember("fleets", .array([
                .object([JSONMember("name", .string("sensors")), JSONMember("count", .integer(10))]),
                .object([JSONMember("name", .string("dashboard")), JSONMember("count", .integer(count))]),
            ]))])
        }
        var differences: [ReportComparison.Difference] = []
        ReportComparison.settingDifferences(scenario(count: 1), scenario(count: 2), path: "", into: &differences)
        #expect(differences == [ReportComparison.Difference(what: "setting fleets.dashboard.count", baseline: "1", candidate: "2")])
    }
}
