import Foundation
import Testing
@testable import FleetReports

#if canImport(FoundationXML)
import FoundationXML
#endif

/// What a CI system reads from junit.xml, collected with Foundation's XMLParser.
final class JUnitCollector: NSObject, XMLParserDelegate {
    struct TestCase: Equatable {
        var name: String
        var className: String
        var failureMessage: String?
        var failureText: String?
    }

    var suites: [[String: String]] = []
    var root: [String: String] = [:]
    var cases: [TestCase] = []
    var properties: [String: String] = [:]
    private var text = ""
    private var inFailure = false

    func parser(
        _ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        switch element {
        case "testsuites": root = attributes
        case "testsuite": suites.append(attributes)
        case "property": properties[attributes["name"] ?? ""] = attributes["value"]
        case "testcase":
            cases.append(TestCase(name: attributes["name"] ?? "", className: attributes["classname"] ?? ""))
        case "failure":
            cases[cases.count - 1].failureMessage = attributes["message"]
            inFailure = true
            text = ""
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inFailure { text += string }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        if element == "failure" {
            cases[cases.count - 1].failureText = text
            inFailure = false
        }
    }

    static func parse(_ xml: String) throws -> JUnitCollector {
        let collector = JUnitCollector()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = collector
        let parsed = parser.parse()
        #expect(parsed, "junit.xml is not well-formed: \(String(describing: parser.parserError))")
        return collector
    }
}

@Suite("junit.xml")
struct JUnitReportTests {
    @Test("one suite, a case per threshold after 'run completed', failures with observed against limit")
    func thresholds() throws {
        let junit = try JUnitCollector.parse(JUnitReport.render(SampleReports.make()))
        #expect(junit.root["tests"] == "3")
        #expect(junit.root["failures"] == "1")
        #expect(junit.suites.count == 1)
        #expect(junit.suites[0]["name"] == "vehicles soak")
        #expect(junit.suites[0]["tests"] == "3")
        #expect(junit.suites[0]["failures"] == "1")
        #expect(junit.suites[0]["time"] == "3.000")
        #expect(junit.suites[0]["timestamp"] == "2026-11-29T15:16:30.125Z")
        #expect(junit.cases == [
            .init(name: "run completed", className: "fleetbench.vehicles soak"),
            .init(name: "latency.end_to_end.p99 < 50ms", className: "fleetbench.vehicles soak"),
            .init(
                name: "delivery.qos1.lost == 0", className: "fleetbench.vehicles soak",
                failureMessage: "observed 1, limit 0 (delivery.qos1.lost == 0)",
                failureText: "observed 1, limit 0 (delivery.qos1.lost == 0)\n1 of 200 QoS 1 messages never arrived"),
        ])
        #expect(junit.properties["scenario.file"] == "scenarios/soak.json")
        #expect(junit.properties["run.seed"] == "42")
    }

    @Test("an interrupted run fails 'run completed'")
    func interrupted() throws {
        var report = SampleReports.make()
        report.run.interrupted = true
        let junit = try JUnitCollector.parse(JUnitReport.render(report))
        #expect(junit.root["failures"] == "2")
        #expect(junit.cases[0].failureMessage == "the run was interrupted after 3.000 s")
    }

    @Test("times are shown in ms and ratios in %, an unobserved metric says so")
    func failureTexts() throws {
        var report = SampleReports.make()
        report.thresholds = [
            ThresholdResult(expression: "latency.end_to_end.p99 < 0.5ms", metric: "latency.end_to_end.p99",
                            observed: 990_000, limit: 500_000, passed: false),
            ThresholdResult(expression: "delivery.qos0.loss_ratio < 1%", metric: "delivery.qos0.loss_ratio",
                            observed: 0.05, limit: 0.01, passed: false),
            ThresholdResult(expression: "latency.request_response.p99 < 1s", metric: "latency.request_response.p99",
                            observed: nil, limit: 1e9, passed: false),
        ]
        let junit = try JUnitCollector.parse(JUnitReport.render(report))
        #expect(junit.cases.map(\.failureMessage) == [
            nil,
            "observed 0.99 ms, limit 0.5 ms (latency.end_to_end.p99 < 0.5ms)",
            "observed 5 %, limit 1 % (delivery.qos0.loss_ratio < 1%)",
            "not observed: the run produced no latency.request_response.p99 (limit 1000 ms; latency.request_response.p99 < 1s)",
        ])
    }

    @Test("hostile names stay well-formed XML and come back as written (control characters dropped)")
    func escaping() throws {
        var report = SampleReports.make(name: "a<b>&\"c\"'d'\u{01}]]>")
        report.thresholds[1].expression = "messages.qos1.acked >= 1 && <x>"
        report.thresholds[1].detail = "</failure><testcase name=\"forged\"/>"
        let junit = try JUnitCollector.parse(JUnitReport.render(report))
        #expect(junit.suites[0]["name"] == "a<b>&\"c\"'d']]>")
        #expect(junit.cases.count == 3)
        #expect(junit.cases[2].name == "messages.qos1.acked >= 1 && <x>")
        #expect(junit.cases[2].failureText?.hasSuffix("\n</failure><testcase name=\"forged\"/>") == true)
    }

    @Test("no thresholds: the suite still has its one test")
    func noThresholds() throws {
        var report = SampleReports.make()
        report.thresholds = []
        let junit = try JUnitCollector.parse(JUnitReport.render(report))
        #expect(junit.root["tests"] == "1")
        #expect(junit.root["failures"] == "0")
    }
}
