import Foundation
import Testing
@testable import FleetReports

/// report.json `network[]`: written only when some fleet emulates a link, read back exactly, merged by segments.
@Suite("report.json network")
struct NetworkReportTests {
    static func sample() -> NetworkReport {
        var report = NetworkReport(fleet: "cars", profile: "lte+", description: "latency 50ms each way", clients: 40,
                                   fraction: 0.5)
        report.stalls = 17
        report.drops = 2
        report.outages = 3
        report.outageSeconds = 41.5
        report.meanDelayUpMilliseconds = 52.25
        report.meanDelayDownMilliseconds = 50.5
        report.heldForBandwidth = 4
        report.readPauses = 5
        return report
    }

    @Test("one entry per profile of a fleet: the HTML report has a row for each")
    func htmlRowPerProfile() {
        var report = SampleReports.make()
        var nbIoT = Self.sample()
        nbIoT.profile = "nb-iot"
        nbIoT.clients = 10
        nbIoT.stalls = 9
        report.network = [Self.sample(), nbIoT]
        let html = ReportHTML.render(report)
        #expect(html.contains("<h2>Network conditions</h2>"))
        #expect(html.contains("<tr><td>cars</td><td>lte+</td><td class=\"num\">40</td><td>latency 50ms each way</td><td class=\"num\">17</td>"))
        #expect(html.contains("<tr><td>cars</td><td>nb-iot</td><td class=\"num\">10</td><td>latency 50ms each way</td><td class=\"num\">9</td>"))
        report.network = []
        #expect(!ReportHTML.render(report).contains("Network conditions"))
    }

    @Test("written and read back byte for byte; a report without it keeps its bytes")
    func roundTrip() throws {
        var report = SampleReports.make()
        let without = try report.jsonText()
        #expect(!without.contains("\"network\""))
        report.network = [Self.sample()]
        let text = try report.jsonText()
        let reread = try RunReport.parse(text: text)
        #expect(reread.network == [Self.sample()])
        #expect(try reread.jsonText() == text)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let network = try #require(object["network"] as? [[String: Any]])
        #expect(network.first?["outage_s"] as? Double == 41.5)
        #expect(network.first?["held_for_bandwidth"] as? Int == 4)
        #expect(network.first?["read_pauses"] as? Int == 5)
    }

    @Test("segments add: counts sum, mean delays weigh by clients")
    func merge() {
        var merged = Self.sample()
        var other = Self.sample()
        other.clients = 10
        other.stalls = 3
        other.meanDelayUpMilliseconds = 102.25
        merged.add(other)
        #expect(merged.clients == 50)
        #expect(merged.stalls == 20)
        #expect(merged.drops == 4)
        #expect(merged.outageSeconds == 83)
        #expect(merged.meanDelayUpMilliseconds == (52.25 * 40 + 102.25 * 10) / 50)
    }
}
