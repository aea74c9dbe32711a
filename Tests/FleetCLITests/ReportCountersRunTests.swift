import FleetBroker
import FleetMetrics
import FleetReports
import Foundation
import Testing

/// Counts report.json gained from the engine's counters, checked on real runs of the built binary and read back
/// through `RunReport.load` (RunReport+Reading), as `fleetbench report` and `compare` read them.
@Suite("report.json counts from real runs")
struct ReportCountersRunTests {
    @Test("a churn stage that finds no connected client skips every disconnect: exactly rate × duration in report.json")
    func churnSkipped() throws {
        let directory = RunEndToEndTests.temporaryDirectory("churn-skipped")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/churn.json"
        // Two clients that can never connect (port 1 refuses at once): each of the 5/s × 2 s churn disconnects
        // finds no connected client on its lane. A steady second after it so the last one is due well before the end.
        try """
            {"name": "churn-skips",
             "fleets": [{"name": "cars", "count": 2}],
             "stages": [{"type": "churn", "fleet": "cars", "rate": 5, "duration": "2s"},
                        {"type": "steady", "duration": "1s"}],
             "thresholds": ["connections.churn_skipped == 10", "connections.transport_errors == 0"]}
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let out = directory + "/out"
        let outcome = try RunEndToEndTests.run(["run", file, "--broker", "mqtt://127.0.0.1:1", "--out", out])
        // No client could connect: a runtime failure, results written all the same.
        #expect(outcome.status == 1, "\(outcome.output)\n\(outcome.error)")
        #expect(outcome.output.contains("                churn skipped: 10 (no connected client of the fleet on the lane)\n"),
                "\(outcome.output)")
        #expect(outcome.output.contains("threshold     pass  connections.churn_skipped == 10  (observed 10)"))
        let report = try RunReport.load(path: out + "/report.json")
        #expect(report.connections.churnSkipped == 10)
        #expect(report.connections.attempted == 2)
        #expect(report.connections.failuresByReason == [ReasonCount("refused", 2)])
        #expect(report.connections.transportErrors == [])
        #expect(report.thresholds.map(\.passed) == [true, true])
        let json = try RunEndToEndTests.report(in: out)
        #expect((json["connections"] as? [String: Any])?["churn_skipped"] as? Int == 10)
    }

    @Test("TLS spoken to a plain listener: every attempt's transport error by its text in report.json, the total a threshold metric")
    func transportErrors() throws {
        let directory = RunEndToEndTests.temporaryDirectory("transport-errors")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let file = directory + "/tls.json"
        try """
            {"name": "tls-to-plain", "duration": "1s",
             "brokers": [{"url": "mqtts://127.0.0.1:\(broker.port)", "tls": {"insecure_skip_verify": true}}],
             "fleets": [{"name": "cars", "count": 3}],
             "thresholds": ["connections.transport_errors == 3"]}
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let out = directory + "/out"
        let outcome = try RunEndToEndTests.run(["run", file, "--out", out, "--quiet"])
        #expect(outcome.status == 1, "\(outcome.output)\n\(outcome.error)")
        #expect(outcome.error.contains("fleetbench: transport error ×3: TLS error: wrong version number\n"), "\(outcome.error)")
        let report = try RunReport.load(path: out + "/report.json")
        #expect(report.connections.transportErrors == [ReasonCount("TLS error: wrong version number", 3)])
        #expect(report.connections.transportErrorsTotal == 3)
        #expect(report.connections.failuresByReason == [ReasonCount("tls_handshake_failed", 3)])
        #expect(report.thresholds.map(\.passed) == [true])
    }
}
