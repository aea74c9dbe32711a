import Foundation
import Testing

/// `network` through the whole tool: the scenario maps to the engine, the summary and report.json show each
/// fleet's profile and its counts, thresholds read them, and a bad value is refused at its file:line:column.
@Suite("fleetbench run with network conditions")
struct RunNetworkTests {
    static let scenario = """
        {
          "name": "network",
          "duration": "2s",
          "fleets": [
            {"name": "cars", "count": 4,
             "network": {"preset": "lte", "latency": "50ms", "loss": {"rate": "10%", "burst": 2}},
             "publish": [{"topic": "cars/{client_id}", "qos": 1, "schedule": {"type": "rate", "per_second": 10}, "payload": {"size": 64}}]},
            {"name": "dashboard", "count": 1, "subscriptions": [{"filter": "cars/#", "qos": 1}]}
          ],
          "thresholds": ["network.stalls >= 0", "network.drops == 0", "latency.puback_broker.p50 < 40ms",
                         "latency.puback.p50 >= 100ms"]
        }
        """

    @Test("two profiles in one fleet: report.json, the summary and the HTML report have one entry for each")
    func twoProfiles() throws {
        let directory = RunEndToEndTests.temporaryDirectory("network-two")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/two.json"
        try Self.scenario.replacingOccurrences(
            of: #""network": {"preset": "lte", "latency": "50ms", "loss": {"rate": "10%", "burst": 2}}"#,
            with: #""network": [{"preset": "lte", "fraction": 0.75}, {"latency": "200ms", "fraction": 0.25}]"#)
            .replacingOccurrences(of: #""latency.puback.p50 >= 100ms""#, with: #""latency.puback.p50 >= 50ms""#)
            .write(toFile: file, atomically: true, encoding: .utf8)
        let out = directory + "/out"
        let outcome = try RunEndToEndTests.run(["run", file, "--seed", "5", "--out", out, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        let report = try RunEndToEndTests.report(in: out)
        let network = try #require(report["network"] as? [[String: Any]])
        #expect(network.map { $0["fleet"] as? String } == ["cars", "cars"])
        #expect(network.map { $0["profile"] as? String } == ["lte", "custom"])
        #expect(network.map { $0["clients"] as? Int } == [3, 1])
        #expect(network.map { $0["fraction"] as? Double } == [0.75, 0.25])
        #expect(network[1]["description"] as? String == "latency 200ms each way")
        // A fixed 200 ms each way: the custom profile's mean added delay is exactly that.
        #expect(network[1]["mean_delay_up_ms"] as? Double == 200)
        #expect(outcome.output.contains("  network       cars: lte on 3 clients (latency p50 30ms, p99 120ms each way;"))
        #expect(outcome.output.contains("  network       cars: custom on 1 clients (latency 200ms each way)"))
        let html = try String(contentsOfFile: out + "/report.html", encoding: .utf8)
        #expect(html.contains("<tr><td>cars</td><td>lte</td><td class=\"num\">3</td>"))
        #expect(html.contains("<tr><td>cars</td><td>custom</td><td class=\"num\">1</td>"))
    }

    @Test("summary, report.json and thresholds show the fleet's profile, its stalls and the broker-side latency")
    func reported() throws {
        let directory = RunEndToEndTests.temporaryDirectory("network")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/network.json"
        try Self.scenario.write(toFile: file, atomically: true, encoding: .utf8)
        let out = directory + "/out"
        let summaryFile = directory + "/summary.json"
        let outcome = try RunEndToEndTests.run(["run", file, "--seed", "5", "--out", out, "--quiet",
                                                "--summary-json", summaryFile])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        let report = try RunEndToEndTests.report(in: out)
        let network = try #require(report["network"] as? [[String: Any]])
        #expect(network.count == 1)
        let cars = try #require(network.first)
        #expect(cars["fleet"] as? String == "cars")
        #expect(cars["profile"] as? String == "lte+")
        #expect(cars["clients"] as? Int == 4)
        // `loss` replaces the preset's loss as a whole: no drop interval unless the object gives one.
        #expect(cars["description"] as? String == "latency 50ms each way; bandwidth up 5Mbit, down 17Mbit; loss 10% in bursts of 2")
        let stalls = try #require(cars["stalls"] as? Int)
        #expect(stalls > 0, "10 % of about 160 sends each way")
        // The threshold reads the same count the report holds.
        let thresholds = try #require(report["thresholds"] as? [[String: Any]])
        let stallThreshold = try #require(thresholds.first { $0["metric"] as? String == "network.stalls" })
        #expect(stallThreshold["observed"] as? Int == stalls)
        #expect(thresholds.allSatisfy { $0["passed"] as? Bool == true }, "\(thresholds)")
        #expect(outcome.output.contains("  network       cars: lte+ on 4 clients (latency 50ms each way;"))
        #expect(outcome.output.contains("                stalls \(stalls), drops 0, outages 0 (0 s)"))
        let summaryData = try Data(contentsOf: URL(fileURLWithPath: summaryFile))
        let summary = try #require(try JSONSerialization.jsonObject(with: summaryData) as? [String: Any])
        let summaryNetwork = try #require(summary["network"] as? [[String: Any]])
        #expect(summaryNetwork.first?["stalls"] as? Int == stalls)
        let latency = try #require(report["latency_ms"] as? [String: Any])
        #expect(latency["puback_broker"] != nil && latency["end_to_end_broker"] != nil)
    }

    @Test("validate refuses a bad network value at its file:line:column")
    func refused() throws {
        let directory = RunEndToEndTests.temporaryDirectory("network-bad")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/bad.json"
        try """
            {"duration": "2s",
             "fleets": [{"name": "cars", "count": 1,
                         "network": {"latency": {"p50": "90ms", "p99": "40ms"}, "bandwidth_down": "fast"}}]}
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let outcome = try RunEndToEndTests.run(["validate", file])
        #expect(outcome.status == 65)
        #expect(outcome.error.contains("""
            \(file):3:60: fleets[0].network.latency.p99: p99 (40ms) must be at least p50 (90ms)
            \(file):3:87: fleets[0].network.bandwidth_down: expected a bandwidth such as "256kbit", "2Mbit" or "1Gbit", got string "fast"
            """), "\(outcome.error)")
    }
}
