import FleetJSON
import FleetMetrics
import FleetReports
import Testing
@testable import FleetCLI

/// Issue 11, item 13: one definition of rates. A run of 12 s that published for 10 s: every place that shows a rate
/// divides by the 10 s of the publishing phase (`run.publish_s`), never by the whole run.
@Suite("rates: one time base everywhere")
struct RatesOneDefinitionTests {
    static func report() -> RunReport {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.run.durationSeconds = 12
        report.run.publishSeconds = 10
        report.messages.published = PerQoSCounts(qos1: 1000)
        report.messages.received = PerQoSCounts(qos1: 900)
        // And 300 messages of another run on the same topics: arrived, not received.
        report.messages.arrived = PerQoSCounts(qos1: 1200)
        report.delivery.foreign = 300
        return report
    }

    @Test("thresholds, the summary JSON, the HTML messages table and compare: 100 and 90 per second, not 83.3 and 75")
    func everywhere() throws {
        let report = Self.report()
        // Thresholds (rates.published >= 100 holds only over the publishing phase).
        #expect(ReportMetrics(report: report).value("rates.published") == 100)
        #expect(ReportMetrics(report: report).value("rates.received") == 90)
        #expect(ReportMetrics(report: report).value("rates.arrived") == 120)
        #expect(ReportMetrics(report: report).value("messages.qos1.received") == 900)
        #expect(ReportMetrics(report: report).value("messages.qos1.arrived") == 1200)
        // --summary-json.
        let summary = RunSummaryJSON.value(report, directory: nil, exitCode: 0)
        #expect(summary["rates"]?["published"] == .real(100))
        #expect(summary["rates"]?["received"] == .real(90))
        #expect(summary["rates"]?["arrived"] == .real(120))
        #expect(summary["messages"]?["qos1"]?["received"]?.numberValue == 900)
        #expect(summary["messages"]?["qos1"]?["arrived"]?.numberValue == 1200)
        // report.html's messages table: QoS 1 row, published / s and received / s, then what arrived in all.
        let html = ReportHTML.render(report)
        #expect(html.contains("<th class=\"num\">received / s</th><th class=\"num\">arrived (all senders)</th>"
            + "<th class=\"num\">arrived / s</th></tr>"))
        #expect(html.contains("<tr><td>QoS 1</td><td class=\"num\">1,000</td><td class=\"num\">0</td><td class=\"num\">0</td>"
            + "<td class=\"num\">900</td><td class=\"num\">100</td><td class=\"num\">90</td>"
            + "<td class=\"num\">1,200</td><td class=\"num\">120</td></tr>"))
        // Without other senders' messages, no arrived columns.
        var alone = report
        alone.messages.arrived = alone.messages.received
        #expect(!ReportHTML.render(alone).contains("arrived (all senders)"))
        // fleetbench compare.
        let comparison = ReportComparison(baseline: report, candidate: report, tolerance: 10, latencyFloorMilliseconds: 0)
        #expect(comparison.rows.first { $0.metric == "rates.published" }?.baseline == 100)
        #expect(comparison.rows.first { $0.metric == "rates.received" }?.candidate == 90)
    }
}
