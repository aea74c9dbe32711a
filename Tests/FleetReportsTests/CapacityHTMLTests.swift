import Foundation
import Testing
@testable import FleetReports

@Suite("capacity.html")
struct CapacityHTMLTests {
    static func level(_ value: Double, passed: Bool, p99: Double) -> CapacityLevel {
        CapacityLevel(
            level: value, phase: "ramp", passed: passed, publishedPerSecond: value * 2, receivedPerSecond: value * 2,
            endToEndP50Ms: 0.28, endToEndP99Ms: p99, connectionsFailed: 0, lost: 0, ackTimeouts: 0, saturated: false,
            thresholds: [ThresholdResult(expression: "latency.end_to_end.p99 < 2ms", metric: "latency.end_to_end.p99",
                                         observed: p99, limit: 2, passed: passed)],
            results: "/tmp/cap/level-\(Int(value))")
    }

    @Test("levels table: figures right-aligned, FAIL as red text in its cell (not the block warning callout)")
    func levelsTable() {
        var report = CapacityReport(
            toolVersion: "0.1.0", scenario: "quickstart", scenarioFile: "q.json", startedAt: Date(timeIntervalSince1970: 0),
            vary: "fleets.sensors.count=5..80", low: 5, high: 80, thresholds: ["latency.end_to_end.p99 < 2ms"],
            stepSeconds: 2, warmUpSeconds: 0, broker: "embedded")
        report.levels = [Self.level(5, passed: true, p99: 0.65), Self.level(10, passed: false, p99: 3.16)]
        report.maxPassing = 5
        report.minFailing = 10
        let page = CapacityHTML.render(report)
        #expect(page.contains("<th>verdict</th><th class=\"num\">published/s</th><th class=\"num\">received/s</th>"
            + "<th class=\"num\">e2e p50 ms</th><th class=\"num\">e2e p99 ms</th><th>failed thresholds</th>"))
        #expect(page.contains("<tr><td class=\"num\">1</td><td class=\"num\">5</td><td>ramp</td><td class=\"ok\">pass</td>"
            + "<td class=\"num\">10</td><td class=\"num\">10</td><td class=\"num\">0.28</td><td class=\"num\">0.65</td><td></td>"))
        #expect(page.contains("<tr><td class=\"num\">2</td><td class=\"num\">10</td><td>ramp</td><td class=\"bad\">FAIL</td>"
            + "<td class=\"num\">20</td><td class=\"num\">20</td><td class=\"num\">0.28</td><td class=\"num\">3.16</td>"
            + "<td>latency.end_to_end.p99 &lt; 2ms</td>"))
        #expect(!page.contains("<td class=\"warning\""))
    }
}
