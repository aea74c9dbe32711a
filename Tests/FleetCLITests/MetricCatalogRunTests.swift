import FleetMetrics
import Foundation
import Testing

/// The metric catalog against a real run: one scenario that does everything a metric needs (QoS 0, 1 and 2
/// streams, subscribers, requests and responses, TLS and WebSocket clients, idle clients that ping) run against
/// the embedded mosquitto, with a threshold on every threshold metric of the catalog.
@Suite("Metric catalog against a real run")
struct MetricCatalogRunTests {
    static let scenario = """
        {
          "name": "every-metric",
          "duration": "4s",
          "fleets": [
            {"name": "cars", "count": 2, "keepalive": "10s",
             "publish": [
               {"topic": "cat/{client_id}/q0", "qos": 0, "schedule": {"type": "rate", "per_second": 10}, "payload": {"size": 40}},
               {"topic": "cat/{client_id}/q1", "qos": 1, "schedule": {"type": "rate", "per_second": 10}, "payload": {"size": 40}},
               {"topic": "cat/{client_id}/q2", "qos": 2, "schedule": {"type": "rate", "per_second": 10}, "payload": {"size": 40}}
             ]},
            {"name": "dashboard", "count": 1, "keepalive": "10s", "subscriptions": [{"filter": "cat/#", "qos": 2}]},
            {"name": "idle", "count": 2, "keepalive": "1s"},
            {"name": "secure", "count": 1, "transport": "mqtts", "keepalive": "10s"},
            {"name": "browser", "count": 1, "transport": "ws", "keepalive": "10s"},
            {"name": "vehicles", "count": 2, "protocol": "5", "keepalive": "10s",
             "respond": {"topic": "veh/{client_id}/cmd", "qos": 1, "payload": "ok"}},
            {"name": "backend", "count": 1, "protocol": "5", "keepalive": "10s",
             "requests": [{"name": "unlock", "target_fleet": "vehicles", "topic": "veh/{target_client_id}/cmd", "qos": 1,
                           "schedule": {"type": "rate", "per_second": 5}, "payload": "unlock",
                           "response_topic": "backend/{client_id}/responses"}]}
          ],
          "thresholds": THRESHOLDS
        }
        """

    /// Every threshold metric a run can produce, each with a condition every observed value meets.
    static var everyThreshold: [String] {
        MetricCatalog.all.filter { $0.threshold && $0.source.producible }.map { metric in
            metric.path + (metric.unit == .time ? " >= 0ns" : " >= 0")
        }
    }

    @Test("every catalog metric is produced by the run that exercises it, and report.json holds nothing else")
    func everyMetricProduced() throws {
        let directory = RunEndToEndTests.temporaryDirectory("catalog")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let thresholds = "[" + Self.everyThreshold.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        let file = directory + "/every-metric.json"
        try Self.scenario.replacingOccurrences(of: "THRESHOLDS", with: thresholds)
            .write(toFile: file, atomically: true, encoding: .utf8)
        let out = directory + "/out"

        let outcome = try RunEndToEndTests.run(["run", file, "--seed", "7", "--out", out, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        let report = try RunEndToEndTests.report(in: out)

        // Each threshold metric was observed (a metric the run did not produce reads null and fails).
        let results = try #require(report["thresholds"] as? [[String: Any]])
        #expect(results.count == Self.everyThreshold.count)
        let unobserved = results.filter { $0["observed"] is NSNull }.compactMap { $0["metric"] as? String }
        #expect(unobserved == [], "metrics the run did not produce")

        // Every report.json key of the measured sections, top level and per fleet, is a catalog entry.
        var keys: [String] = []
        for section in Self.measuredSections { Self.collectKeys(report[section], prefix: section, into: &keys) }
        let fleets = try #require(report["fleets"] as? [[String: Any]])
        #expect(fleets.count == 7)
        for fleet in fleets {
            for section in Self.measuredSections { Self.collectKeys(fleet[section], prefix: section, into: &keys) }
        }
        let outside = Set(keys.filter { MetricCatalog.metric(reportKey: $0) == nil })
        #expect(outside == [], "report.json keys outside the metric catalog")

        // And every report key of the catalog is in this report (patterns and never-produced ones aside).
        let present = Set(keys)
        let missing = MetricCatalog.all.compactMap { metric -> String? in
            guard let key = metric.report, !key.contains("*"), metric.source.producible else { return nil }
            return present.contains(key) ? nil : key
        }
        #expect(missing == [], "catalog entries the run did not write into report.json")
        // The keepalive round trips of the idle clients, measured.
        let pingresp = try #require((report["latency_ms"] as? [String: Any])?["pingresp"] as? [String: Any])
        #expect((pingresp["count"] as? Int ?? 0) >= 4, "two idle clients with a 1 s keepalive for 4 s")
    }

    @Test("validate and run refuse a threshold no run of the scenario can produce: exit 65, file:line:column")
    func refusedByValidateAndRun() throws {
        let directory = RunEndToEndTests.temporaryDirectory("catalog-refused")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/busy.json"
        try """
            {"duration": "10s",
             "fleets": [{"name": "cars", "count": 1, "keepalive": "60s",
                         "publish": [{"topic": "t", "schedule": {"type": "rate", "per_second": 1}, "payload": "x"}]}],
             "thresholds": ["messages.qos0.acked == 0", "latency.pingresp.p99 < 50ms"]}
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let expected = """
            \(file):4:18: thresholds[0]: no run produces messages.qos0.acked: QoS 0 publishes are never acknowledged; did you mean 'messages.qos1.acked'?
            \(file):4:46: thresholds[1]: no run of this scenario produces latency.pingresp.p99: it needs a fleet whose keepalive is on and shorter than the run (an idle client then pings)
            """
        let validate = try RunEndToEndTests.run(["validate", file])
        #expect(validate.status == 65)
        #expect(validate.error.contains(expected), "\(validate.error)")
        let run = try RunEndToEndTests.run(["run", file, "--out", directory + "/out", "--quiet"])
        #expect(run.status == 65)
        #expect(run.error.contains(expected), "\(run.error)")
    }

    /// The sections of report.json that hold measurements (the rest describe the run: scenario, environment, ...).
    static let measuredSections = ["connections", "messages", "delivery", "ack_timeouts", "downgrades", "requests", "offline", "latency_ms",
                                    "generator"]

    /// Dotted paths of every leaf; arrays of strings and null are leaves, objects are walked.
    static func collectKeys(_ value: Any?, prefix: String, into keys: inout [String]) {
        guard let value else { return }  // a section fleets[] does not have
        if let object = value as? [String: Any], !(object.isEmpty) {
            for (key, child) in object { collectKeys(child, prefix: prefix + "." + key, into: &keys) }
        } else if value is [String: Any] {
            return  // an empty object (no failure reasons): nothing to name
        } else {
            keys.append(prefix)
        }
    }
}
