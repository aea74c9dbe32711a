import FleetJSON
import Foundation
import Testing
@testable import FleetReports

@Suite("summary JSON and timeline.csv")
struct RunSummaryJSONTests {
    @Test("timeline.csv: a header and one line per second, empty fields for seconds without latency samples")
    func timelineCSV() {
        let text = TimelineCSV.render(SampleReports.make().timeline)
        #expect(text == """
            t_s,connected,published,received,end_to_end_p50_ms,end_to_end_p99_ms,ack_timeouts
            1,8,100,90,0.4,0.9,0
            2,10,150,160,,,1
            3,10,100,96,0.5,1.2,2

            """)
        #expect(TimelineCSV.render([]) == TimelineCSV.header + "\n")
    }

    @Test("summary JSON: schema, keys in a fixed order, the report's figures, the folder and the exit code")
    func summaryKeys() throws {
        let report = SampleReports.make()
        let value = RunSummaryJSON.value(report, directory: "/tmp/results", exitCode: 99)
        let members = try #require(value.objectMembers)
        #expect(members.map(\.key) == [
            "schema", "scenario", "verdict", "passed", "exit_code", "results", "run", "connections", "messages", "rates",
            "delivery", "ack_timeouts", "downgrades", "latency_ms", "thresholds", "generator",
        ])
        #expect(value["schema"] == .string("fleetbench.summary/1"))
        #expect(value["scenario"] == .string("vehicles soak"))
        #expect(value["verdict"] == .string("failed"))
        #expect(value["passed"] == .bool(false))
        #expect(value["exit_code"] == .integer(99))
        #expect(value["results"] == .string("/tmp/results"))
        // The same sections as report.json, key for key.
        let full = try report.jsonValue()
        for key in ["run", "connections", "messages", "delivery", "downgrades", "thresholds"] {
            #expect(value[key] == full[key], "\(key)")
        }
        #expect(value["latency_ms"]?["end_to_end"]?["count"] == full["latency_ms"]?["end_to_end"]?["count"])
        #expect(value["latency_ms"]?["end_to_end"]?["p99"] == full["latency_ms"]?["end_to_end"]?["p99"])
        #expect(value["latency_ms"]?["end_to_end"]?["hdr"] == nil)
        #expect(value["rates"]?["published"] == .real(RunSummaryJSON.rounded(report.run.rate(report.messages.published.total))))
        #expect(value["generator"]?["dropped_slots"] == .integer(4))
        #expect(RunSummaryJSON.value(report, directory: nil, exitCode: 1)["results"] == .null)
    }
}
