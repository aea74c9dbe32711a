import Foundation
import Testing
@testable import FleetCLI

/// Closed-model publishing (`{"type": "max"}`) run in-process against the embedded mosquitto: exact counts with
/// `limit`, no schedule lag, nothing unsent at the end, and the report saying the stream ran closed-model.
@Suite("run: closed-model publishing")
struct ClosedModelRunTests {
    static func scenario(qos: Int, clients: Int, limit: Int, window: Int) -> String {
        """
        {"name": "closed", "duration": "5s", "seed": 3,
         "fleets": [
          {"name": "sink", "count": 1, "subscriptions": [{"filter": "closed/#", "qos": \(qos)}]},
          {"name": "pub", "count": \(clients), "inflight_window": \(window),
           "publish": [{"name": "flood", "topic": "closed/{client_id}", "qos": \(qos), "schedule": {"type": "max"},
                        "limit": \(limit), "payload": {"size": 64}}]}
         ],
         "stages": [{"type": "ramp_up", "fleet": "sink", "over": "200ms"}, {"type": "ramp_up", "fleet": "pub", "over": "200ms"},
                    {"type": "steady", "duration": "4600ms"}]
        }
        """
    }

    static func writeScenario(_ text: String) throws -> String {
        let path = RunEndToEndTests.temporaryDirectory("closed") + ".json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("limit 1000 per client × 4 clients: published == acked == received == 4000 at QoS 1 and 2; 4000 at QoS 0",
          arguments: [(1, 8), (2, 16), (1, 1), (0, 32)])
    func exactCounts(qos: Int, window: Int) throws {
        let file = try Self.writeScenario(Self.scenario(qos: qos, clients: 4, limit: 1000, window: window))
        let out = RunEndToEndTests.temporaryDirectory("closed-run")
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: out)
        }
        let result = FleetCommandLineTests.run(["run", file, "--out", out, "--quiet"])
        #expect(result.code == .success, "\(result.output)\n\(result.error)")
        let report = try RunEndToEndTests.report(in: out)
        let level = "qos\(qos)"
        let messages = try #require((report["messages"] as? [String: Any])?[level] as? [String: Any])
        #expect(messages["published"] as? Int == 4000)
        if qos > 0 {
            #expect(messages["acked"] as? Int == 4000)
            #expect(messages["unacked_at_end"] as? Int == 0)
        }
        #expect(messages["received"] as? Int == 4000)
        let delivery = try #require((report["delivery"] as? [String: Any])?[level] as? [String: Any])
        #expect(delivery["expected"] as? Int == 4000)
        #expect(delivery["lost"] as? Int == 0)
        #expect(delivery["duplicated"] as? Int == 0)
        let generator = try #require(report["generator"] as? [String: Any])
        #expect(generator["closed_model_streams"] as? [String] == ["flood"])
        #expect(generator["unsent_at_end"] as? Int == 0)
        #expect(generator["dropped_slots"] as? Int == 0)
        // No intended time, so no schedule lag at all (and no generator lag to call it saturated by).
        #expect(generator["schedule_lag_ms"] is NSNull)
        #expect(!((generator["saturation_reasons"] as? [String]) ?? []).contains { $0.hasPrefix("generator lag") })
        #expect(result.output.contains("  closed model  flood: as fast as the window or socket allowed; "
            + "latency from the actual send, not from a planned time\n"))
        let html = try String(contentsOfFile: out + "/report.html", encoding: .utf8)
        #expect(html.contains("Closed model: flood published as fast as each client"))
    }

    @Test("without a limit a closed stream runs until the end and still owes nothing")
    func unlimited() throws {
        let text = Self.scenario(qos: 1, clients: 2, limit: 1, window: 4)
            .replacingOccurrences(of: "\"limit\": 1,", with: "")
            .replacingOccurrences(of: "\"duration\": \"5s\"", with: "\"duration\": \"2s\"")
            .replacingOccurrences(of: "\"duration\": \"4600ms\"", with: "\"duration\": \"1600ms\"")
        let file = try Self.writeScenario(text)
        let out = RunEndToEndTests.temporaryDirectory("closed-unlimited")
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: out)
        }
        let result = FleetCommandLineTests.run(["run", file, "--out", out, "--quiet"])
        #expect(result.code == .success, "\(result.output)\n\(result.error)")
        let report = try RunEndToEndTests.report(in: out)
        let messages = try #require((report["messages"] as? [String: Any])?["qos1"] as? [String: Any])
        let published = try #require(messages["published"] as? Int)
        let acked = try #require(messages["acked"] as? Int)
        // Hundreds of messages at least in ~1.5 s with a window of 4 on loopback; every one acknowledged.
        #expect(published > 500)
        #expect(acked == published)
        let generator = try #require(report["generator"] as? [String: Any])
        #expect(generator["unsent_at_end"] as? Int == 0)
        #expect(messages["unacked_at_end"] as? Int == 0)
    }
}
