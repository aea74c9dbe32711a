import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

@Suite("compare --format html")
struct ComparisonHTMLTests {
    static func page(baseline: RunReport = SampleReports.make(), candidate: RunReport = ReportComparisonTests.worseCandidate())
        -> (ReportComparison, String) {
        let comparison = ReportComparison(baseline: baseline, candidate: candidate, tolerance: 10, latencyFloorMilliseconds: 0)
        return (comparison, ComparisonHTML.render(comparison, baseline: baseline, candidate: candidate))
    }

    /// The text between `<section id="ID">` (or the verdict header) and its end.
    static func section(_ id: String, in page: String) throws -> String {
        let start = try #require(page.range(of: id == "verdict" ? "<header id=\"verdict\"" : "<section id=\"\(id)\">"))
        let rest = page[start.lowerBound...]
        let end = try #require(rest.range(of: id == "verdict" ? "<section" : "</section>"))
        return String(rest[..<end.lowerBound])
    }

    static func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    @Test("self-contained: the sections in order, no script, nothing fetched, report.html's stylesheet")
    func selfContained() {
        let (_, page) = Self.page()
        #expect(page.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">\n"))
        #expect(page.hasSuffix("</main>\n</body>\n</html>\n"))
        let positions = ComparisonHTML.sectionIDs.map { page.range(of: "id=\"\($0)\"")?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil })
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
        #expect(!page.contains("<script"))
        #expect(!page.contains("<link"))
        #expect(!page.contains("src="))
        #expect(page.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "").range(of: "http") == nil)
        #expect(page.contains(ReportHTML.css))
        #expect(page.contains("<title>fleetbench compare: vehicles soak REGRESSED</title>"))
    }

    @Test("verdict and table: regressions counted in the header and listed first, each row's verdict as the text table says")
    func regressionsFirst() throws {
        let (comparison, page) = Self.page()
        let verdict = try Self.section("verdict", in: page)
        #expect(verdict.contains("<div class=\"badge\">REGRESSED</div>"))
        #expect(verdict.contains("<h1>\(comparison.summary)</h1>"))
        let rows = try Self.section("rows", in: page)
        let body = rows.components(separatedBy: "<tr class=\"").dropFirst()
        let classes = body.map { String($0.prefix { $0 != "\"" }) }
        #expect(classes.count == comparison.shownRows().count)
        let regressions = comparison.shownRows().filter { $0.verdict == .regression }.count
        #expect(regressions > 0)
        #expect(Array(classes.prefix(regressions)) == Array(repeating: "regression", count: regressions))
        #expect(!classes.dropFirst(regressions).contains("regression"))
        #expect(rows.contains("<td><code>latency.end_to_end.p99</code></td><td>ms</td><td class=\"num\">0.99</td>"
            + "<td class=\"num\">1.98</td><td class=\"num\">+100 %</td><td class=\"verdict\">REGRESSION</td></tr>"))

        let (same, samePage) = Self.page(candidate: SampleReports.make())
        #expect(!same.hasRegression)
        #expect(samePage.contains("<div class=\"badge\">NO REGRESSION</div>"))
        #expect(samePage.contains("<p class=\"ok\">\(same.likeForLikeLine)</p>"))
    }

    @Test("latency: one chart per kind in either run, the baseline solid and the candidate dashed, with sample counts")
    func overlaidPercentiles() throws {
        let (_, page) = Self.page()
        let latency = try Self.section("latency", in: page)
        // Baseline kinds: end_to_end, tcp_connect, puback, schedule_lag; the candidate has end_to_end and tcp_connect.
        #expect(Self.count("<figure>", in: latency) == 4)
        for kind in ["end_to_end", "tcp_connect", "puback", "schedule_lag"] {
            #expect(latency.contains("<figcaption>\(kind)</figcaption>"), "\(kind)")
        }
        let endToEnd = try #require(latency.components(separatedBy: "<figure>").first { $0.contains("<figcaption>end_to_end<") })
        #expect(endToEnd.contains(">baseline (1000)</text>"))
        #expect(endToEnd.contains(">candidate (1000)</text>"))
        #expect(Self.count("<polyline fill=\"none\" stroke=\"\(ComparisonHTML.baselineColor)\" stroke-width=\"1.8\" points=", in: endToEnd) == 1)
        #expect(Self.count("<polyline fill=\"none\" stroke=\"\(ComparisonHTML.candidateColor)\" stroke-width=\"1.8\" stroke-dasharray=\"6 4\" points=", in: endToEnd) == 1)
        // A kind only the baseline has: its curve alone.
        let puback = try #require(latency.components(separatedBy: "<figure>").first { $0.contains("<figcaption>puback<") })
        #expect(puback.contains(">baseline (3)</text>"))
        #expect(!puback.contains(">candidate ("))
    }

    @Test("over time: connected clients and rates of the two runs side by side on the same y axis")
    func sideBySide() throws {
        var candidate = SampleReports.make()
        candidate.timeline = candidate.timeline.map { point in
            var point = point
            point.connected *= 4
            return point
        }
        let (_, page) = Self.page(candidate: candidate)
        let timeline = try Self.section("timeline", in: page)
        #expect(Self.count("<div class=\"grid2\">", in: timeline) == 2)
        let figures: [String] = Array(timeline.components(separatedBy: "<figure>").dropFirst())
        #expect(figures.map { String($0.prefix { $0 != "\n" }) } == [
            "<figcaption>Connected clients, baseline</figcaption>", "<figcaption>Connected clients, candidate</figcaption>",
            "<figcaption>Message rates, baseline</figcaption>", "<figcaption>Message rates, candidate</figcaption>",
        ])
        // The baseline peaks at 10 clients, the candidate at 40: both axes end at the same tick.
        func yLabels(_ figure: String) -> [String] {
            figure.components(separatedBy: "text-anchor=\"end\">").dropFirst().map { String($0.prefix { $0 != "<" }) }
        }
        #expect(yLabels(figures[0]) == yLabels(figures[1]))
        #expect(yLabels(figures[0]).last == "40")
        #expect(yLabels(figures[2]) == yLabels(figures[3]))
    }

    @Test("names from the scenario are escaped")
    func escaped() {
        let (_, page) = Self.page(baseline: SampleReports.make(name: "a<b>&\"c\""), candidate: SampleReports.make(name: "a<b>&\"c\""))
        #expect(!page.contains("a<b>"))
        #expect(page.contains("a&lt;b&gt;&amp;&quot;c&quot;"))
    }
}
