import Foundation
import Testing

/// scenarios/city-commute.json at small scale: vehicles on the shipped Munich route, per-vehicle identities, a
/// tunnel stage and the route's own tunnel cutting links, telemetry buffered while offline.
@Suite("city-commute at small scale")
struct CityCommuteRunTests {
    /// 20 of the 200 commuters, a 14 s timeline with half of them cut for 1-3 s. Publishing starts 2 s after the
    /// ramp at the latest: an NB-IoT car needs several of its 0.8-5 s one-way delays to connect and subscribe.
    static let scaledDown = [
        "--scale", "0.1", "--set", "duration=14s", "--set", "ready_timeout=2s", "--set",
        #"stages=[{"type": "ramp_up", "over": "1s"}, {"type": "steady", "duration": "3s"}, "#
            + #"{"type": "tunnel", "fleet": "commuters", "fraction": "50%", "outage": ["1s", "3s"], "duration": "3s"}, "#
            + #"{"type": "steady", "duration": "7s"}]"#,
    ]

    @Test("passes its thresholds; offline counts add up: buffered = flushed + overflowed + still buffered at the end; its tunnels and link drops show as link cuts, errors 0")
    func scaledDownRun() throws {
        let out = RunEndToEndTests.temporaryDirectory("city-commute")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try RunEndToEndTests.run(["run", "scenarios/city-commute.json", "--out", out] + Self.scaledDown)
        #expect(outcome.status == 0, "exit \(outcome.status)\n\(outcome.output)\n\(outcome.error)")
        let report = try RunEndToEndTests.report(in: out)
        #expect(report["passed"] as? Bool == true)
        let offline = try #require(report["offline"] as? [String: Any])
        let buffered = try #require(offline["buffered"] as? Int)
        let flushed = try #require(offline["flushed"] as? Int)
        let overflowed = try #require(offline["overflowed"] as? Int)
        let generator = try #require(report["generator"] as? [String: Any])
        let unsent = try #require(generator["unsent_at_end"] as? Int)
        #expect(buffered > 0 && flushed > 0)
        #expect(buffered == flushed + overflowed + unsent, "buffered \(buffered), flushed \(flushed), overflowed \(overflowed), unsent \(unsent)")
        // The tunnel stage cuts half of the connected commuters (those the route's tunnel did not cut already),
        // who come back after 1-3 s.
        let fleets = try #require(report["fleets"] as? [[String: Any]])
        let commuters = try #require(fleets.first { $0["name"] as? String == "commuters" })
        let connections = try #require(commuters["connections"] as? [String: Any])
        #expect((connections["reconnects"] as? Int ?? 0) > 0)
        let delivery = try #require(report["delivery"] as? [String: Any])
        let qos1 = try #require(delivery["qos1"] as? [String: Any])
        #expect(qos1["lost"] as? Int == 0)
        #expect((qos1["expected"] as? Int ?? 0) > 0)
        // Its cuts are tunnels and emulated link drops, which the scenario asks for: named link cuts on the progress
        // lines and in the summary, not errors (the full-size run showed them as 79 "errors").
        let reasons = try #require((report["connections"] as? [String: Any])?["disconnects_by_reason"] as? [String: Int])
        #expect(Set(reasons.keys).isSubset(of: ["client_initiated", "tunnel", "network_drop"]), "\(reasons)")
        let cuts = (reasons["tunnel"] ?? 0) + (reasons["network_drop"] ?? 0)
        let lines = outcome.output.split(separator: "\n").map(String.init)
        let progress = lines.filter { $0.hasPrefix("[") }
        #expect(!progress.isEmpty && progress.allSatisfy { $0.contains("  errors 0") }, "\(progress)")
        // Lines come every 5 s in a pipe: the one at 10 s follows the tunnel stage (4-7 s).
        #expect(progress.contains { $0.contains("  errors 0  link cuts ") }, "\(progress)")
        let drops = reasons["network_drop"].map { "network_drop \($0), " } ?? ""
        #expect(lines.contains("                disconnects: by the client \(reasons["client_initiated"] ?? 0) "
            + "(client_initiated \(reasons["client_initiated"] ?? 0)); link cuts \(cuts) (\(drops)tunnel \(reasons["tunnel"] ?? 0)); errors 0"),
                "\(outcome.output)")
    }
}
