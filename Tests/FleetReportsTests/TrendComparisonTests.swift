import FleetJSON
import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

@Suite("compare A B C: a trend")
struct TrendComparisonTests {
    static let runs = [SampleReports.make(), SampleReports.make(), ReportComparisonTests.worseCandidate()]
    static let trend = TrendComparison(runs: runs, tolerance: 10, latencyFloorMilliseconds: 0)

    @Test("each later run is compared with the first; the lines put their rows side by side, regressions first")
    func lines() throws {
        let trend = Self.trend
        #expect(trend.comparisons.count == 2)
        #expect(!trend.comparisons[0].hasRegression)
        #expect(trend.comparisons[1].hasRegression)
        #expect(trend.hasRegression)
        let lines = trend.lines()
        let regressedCount = lines.filter(\.regressed).count
        #expect(regressedCount == trend.comparisons[1].shownRows().filter { $0.verdict == .regression }.count)
        #expect(lines.prefix(regressedCount).allSatisfy { $0.regressed })
        let p99 = try #require(lines.first { $0.metric == "latency.end_to_end.p99" })
        #expect(p99.baseline == 0.99)
        #expect(p99.rows.map { $0?.candidate } == [0.99, 1.98])
        #expect(p99.rows.map { TrendComparison.cell($0) } == ["0.99 (0 %)", "1.98 (+100 %) REGRESSION"])
        // Every metric the pairs show, once.
        let metrics = lines.map(\.metric)
        #expect(Set(metrics).count == metrics.count)
        #expect(Set(metrics) == Set(trend.comparisons.flatMap { $0.shownRows().map(\.metric) }))
    }

    @Test("a statistic with too few samples says so in each run's cell, in text, Markdown and HTML; a max has its change")
    func tooFewSamples() throws {
        // One subscribe each (p50 needs 2, p99 100): what the quickstart scenario's one dashboard gives.
        let runs = [ComparisonNoiseTests.report(endToEnd: [], subscribe: [100]),
                    ComparisonNoiseTests.report(endToEnd: [], subscribe: [150]),
                    ComparisonNoiseTests.report(endToEnd: [], subscribe: [1983])]
        let trend = TrendComparison(runs: runs)
        #expect(!trend.hasRegression)
        let lines = trend.lines()
        let p99 = try #require(lines.first { $0.metric == "latency.suback.p99" })
        #expect(p99.rows.map { TrendComparison.cell($0) } == ["0.15 (too few samples)", "1.983 (too few samples)"])
        let max = try #require(lines.first { $0.metric == "latency.suback.max" })
        #expect(max.rows.map { TrendComparison.cell($0) } == ["0.15 (+50 %)", "1.983 (+1883 %)"])
        let p50Line = try #require(trend.table().split(separator: "\n").first { $0.hasPrefix("latency.suback.p50 ") })
        #expect(p50Line.components(separatedBy: "  ").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            == ["latency.suback.p50", "ms", "0.1", "0.15 (too few samples)", "1.983 (too few samples)"])
        #expect(trend.markdown().contains("| `latency.suback.p99` | ms | 0.1 | 0.15 (too few samples) | 1.983 (too few samples) |\n"))
        let rows = try ComparisonHTMLTests.section("rows", in: ComparisonHTML.render(trend, runs: runs))
        #expect(rows.contains("<td class=\"num\">1.983 (too few samples)</td>"))
    }

    @Test("text, Markdown and JSON name every run; JSON holds each pair's full comparison")
    func formats() throws {
        let trend = Self.trend
        let table = trend.table()
        #expect(table.hasPrefix("run 1 (baseline): vehicles soak @ "))
        #expect(table.contains("\nrun 3: vehicles soak @ "))
        #expect(table.contains("\nrun 2: Like for like: "))
        #expect(table.hasSuffix("\n\nrun 3: " + trend.comparisons[1].summary + "\n"))
        let header = try #require(table.split(separator: "\n").first { $0.hasPrefix("metric") })
        #expect(header.split(separator: " ", omittingEmptySubsequences: true)
            == ["metric", "unit", "run", "1", "(baseline)", "run", "2", "run", "3"])
        let markdown = trend.markdown()
        #expect(markdown.contains("| metric | unit | run 1 (baseline) | run 2 | run 3 |\n|---|---|---:|---:|---:|\n"))
        #expect(markdown.contains("| `latency.end_to_end.p99` | ms | 0.99 | 0.99 (0 %) | **1.98 (+100 %) REGRESSION** |\n"))
        let json = trend.jsonValue()
        #expect(json["schema"] == .string("fleetbench.compare-trend/1"))
        #expect(json["has_regression"] == .bool(true))
        #expect(json["comparisons"]?.arrayElements?.count == 2)
        #expect(json["comparisons"]?.arrayElements?[1] == trend.comparisons[1].jsonValue())
    }

    @Test("the trend page: every run's curve on each latency chart, each run's timeline, the table")
    func page() throws {
        let page = ComparisonHTML.render(Self.trend, runs: Self.runs)
        #expect(page.contains("<div class=\"badge\">REGRESSED</div>"))
        #expect(!page.contains("<script"))
        for id in ComparisonHTML.sectionIDs { #expect(page.contains("id=\"\(id)\""), "\(id)") }
        let latency = try ComparisonHTMLTests.section("latency", in: page)
        let endToEnd = try #require(latency.components(separatedBy: "<figure>").first { $0.contains("<figcaption>end_to_end<") })
        for run in 1...3 { #expect(endToEnd.contains(">run \(run) (1000)</text>"), "run \(run)") }
        #expect(ComparisonHTMLTests.count("<polyline", in: endToEnd) == 3)
        let timeline = try ComparisonHTMLTests.section("timeline", in: page)
        #expect(ComparisonHTMLTests.count("<figure>", in: timeline) == 6)
        let rows = try ComparisonHTMLTests.section("rows", in: page)
        #expect(rows.contains("<th class=\"num\">Run 3</th></tr>"))
        #expect(rows.contains("<td class=\"num bad\">1.98 (+100 %) REGRESSION</td>"))
    }

    @Test("the trend page lists what differs under each run's NOT like for like line; received keeps its own colour")
    func trendDifferences() throws {
        var interrupted = SampleReports.make()
        interrupted.run.interrupted = true
        let runs = [SampleReports.make(), SampleReports.make(), interrupted]
        let trend = TrendComparison(runs: runs, tolerance: 10, latencyFloorMilliseconds: 0)
        #expect(trend.comparisons[0].isLikeForLike)
        #expect(!trend.comparisons[1].isLikeForLike)
        let page = ComparisonHTML.render(trend, runs: runs)
        let line = HTML.escape("run 3: " + trend.comparisons[1].likeForLikeLine)
        #expect(page.contains("<p class=\"warning\">\(line)</p>\n<table>\n<thead><tr><th>Differs</th><th>Baseline</th>"
            + "<th>Run 3</th></tr></thead>\n<tbody>\n<tr><td>interrupted</td><td><code>no</code></td><td><code>yes</code></td></tr>\n"))
        #expect(ComparisonHTMLTests.count("<th>Differs</th>", in: page) == 1)
        // Run 3 is drawn in palette[2], the colour received / s has on the other charts: its received line takes palette[3].
        let timeline = try ComparisonHTMLTests.section("timeline", in: page)
        let run3 = try #require(timeline.components(separatedBy: "<figure>").first { $0.contains("<figcaption>Message rates, run 3<") })
        #expect(run3.contains("stroke=\"\(ReportHTML.palette[3])\""))
        let run2 = try #require(timeline.components(separatedBy: "<figure>").first { $0.contains("<figcaption>Message rates, run 2<") })
        #expect(!run2.contains("stroke=\"\(ReportHTML.palette[3])\""))
    }
}
