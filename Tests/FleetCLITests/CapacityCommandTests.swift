import FleetBroker
import Foundation
import Testing
@testable import FleetCLI

/// `fleetbench capacity` in-process against embedded mosquittos: a tiny scenario whose verdict is exact (a
/// closed-model stream with a limit publishes exactly count × limit messages), so the levels tried are known.
@Suite("fleetbench capacity")
struct CapacityCommandTests {
    /// `pub` clients send 10 QoS 1 messages each as fast as they can; a sink subscribes.
    static let scenario = """
        {"name": "tiny-capacity", "duration": "900ms", "seed": 11, "drain": "2s",
         "fleets": [
          {"name": "sink", "count": 1, "subscriptions": [{"filter": "cap/#", "qos": 1}]},
          {"name": "pub", "count": 2,
           "publish": [{"name": "burst", "topic": "cap/{client_id}", "qos": 1, "schedule": {"type": "max"}, "limit": 10,
                        "payload": {"size": 32}}]}
         ],
         "stages": [{"type": "ramp_up", "over": "100ms"}, {"type": "steady", "duration": "800ms"}],
         "thresholds": ["delivery.qos1.lost == 0"]
        }
        """

    static func writeScenario() throws -> String {
        let path = RunEndToEndTests.temporaryDirectory("capacity") + ".json"
        try scenario.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func json(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("finds the knee of an exact threshold: ramp 3 6 12 24 40, bisect 32 28; max passing 24; table, json, html")
    func findsKnee() throws {
        let file = try Self.writeScenario()
        let out = RunEndToEndTests.temporaryDirectory("capacity-out")
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: out)
        }
        let result = FleetCommandLineTests.run([
            "capacity", file, "--vary", "fleets.pub.count=3..40", "--until", "messages.qos1.published <= 250",
            "--until", "delivery.qos1.lost == 0", "--step-duration", "300ms", "--warm-up", "0", "--precision", "20%",
            "--out", out,
        ])
        #expect(result.code == .success, "\(result.output)\n\(result.error)")
        let capacity = try Self.json(out + "/capacity.json")
        let levels = try #require(capacity["levels"] as? [[String: Any]])
        #expect(levels.map { $0["level"] as? Int } == [3, 6, 12, 24, 40, 32, 28])
        #expect(levels.map { $0["verdict"] as? String } == ["pass", "pass", "pass", "pass", "fail", "fail", "fail"])
        #expect(levels.map { $0["phase"] as? String } == ["ramp", "ramp", "ramp", "ramp", "ramp", "bisect", "bisect"])
        #expect(capacity["max_passing"] as? Int == 24)
        #expect(capacity["min_failing"] as? Int == 28)
        #expect(capacity["thresholds"] as? [String] == ["messages.qos1.published <= 250", "delivery.qos1.lost == 0"])
        #expect(capacity["stopped_early"] is NSNull)
        // Each level's published count is exact: 10 per client.
        let observed = levels.map { (($0["thresholds"] as? [[String: Any]])?.first?["observed"] as? Double) }
        #expect(observed == [30, 60, 120, 240, 400, 320, 280])
        // Every level kept its own results folder.
        for (index, level) in levels.enumerated() {
            let folder = try #require(level["results"] as? String)
            #expect(folder == out + String(format: "/level-%02d-", index + 1) + String(level["level"] as? Int ?? 0))
            #expect(FileManager.default.fileExists(atPath: folder + "/report.json"))
        }
        // The table: a row per level as it went, then the result line.
        #expect(result.output.contains("\n  5  40            ramp    FAIL   "))
        #expect(result.output.contains("messages.qos1.published <= 250 (observed 400)"))
        #expect(result.output.contains("capacity: max passing fleets.pub.count = 24 (lowest failing 28) after 7 levels in "))
        let html = try String(contentsOfFile: out + "/capacity.html", encoding: .utf8)
        #expect(html.contains("Highest passing level: 24 (lowest failing: 28)"))
        #expect(html.contains("knee 24"))
        #expect(html.contains("<svg"))
        #expect(!html.contains("<script"))
    }

    @Test("with --broker every level runs on that broker: HIGH caps the ramp, then one bisection step")
    func givenBroker() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let file = try Self.writeScenario()
        let out = RunEndToEndTests.temporaryDirectory("capacity-broker")
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: out)
        }
        let result = FleetCommandLineTests.run([
            "capacity", file, "--vary", "fleets.pub.count=20..30", "--until", "messages.qos1.published <= 250",
            "--step-duration", "300ms", "--warm-up", "0", "--precision", "20%", "--broker", broker.url, "--out", out,
        ])
        #expect(result.code == .success, "\(result.output)\n\(result.error)")
        let capacity = try Self.json(out + "/capacity.json")
        // 20 passes, 40 is capped at HIGH 30 (fails), 25 passes (250 <= 250), 30 - 25 <= 20 % of 25: done.
        #expect((capacity["levels"] as? [[String: Any]])?.map { $0["level"] as? Int } == [20, 30, 25])
        #expect(capacity["max_passing"] as? Int == 25)
        #expect(capacity["broker"] as? String == broker.url)
        let level = try RunEndToEndTests.report(in: out + "/level-03-25")
        #expect(level["brokers"] as? [String] == [broker.url])
    }

    @Test("even LOW failing exits 99 after one level; the warm-up run has its own folder")
    func lowFails() throws {
        let file = try Self.writeScenario()
        let out = RunEndToEndTests.temporaryDirectory("capacity-low")
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: out)
        }
        let result = FleetCommandLineTests.run([
            "capacity", file, "--vary", "fleets.pub.count=3..40", "--until", "messages.qos1.published <= 20",
            "--step-duration", "300ms", "--warm-up", "200ms", "--out", out, "--quiet",
        ])
        #expect(result.code == .thresholdsFailed, "\(result.output)\n\(result.error)")
        let capacity = try Self.json(out + "/capacity.json")
        #expect((capacity["levels"] as? [[String: Any]])?.count == 1)
        #expect(capacity["max_passing"] is NSNull)
        #expect(capacity["min_failing"] as? Int == 3)
        #expect(FileManager.default.fileExists(atPath: out + "/level-01-3/warm-up/report.json"))
        #expect(result.output.hasPrefix("capacity: even LOW (3) failed after 1 level in "))
    }

    @Test("usage errors exit 2 with the message; a bad scenario value exits 65", arguments: [
        (["capacity", "x.json"], "fleetbench capacity: capacity needs --vary PATH=LOW..HIGH, e.g. --vary fleets.vehicles.count=100..5000\n"),
        (["capacity", "x.json", "--vary", "fleets.a.count=10"],
         "fleetbench capacity: --vary needs a range LOW..HIGH of two numbers after '=', e.g. --vary fleets.vehicles.count=100..5000; got '10'\n"),
        (["capacity", "x.json", "--vary", "fleets.a.count=10..5"], "fleetbench capacity: --vary needs 0 < LOW <= HIGH, got 10..5\n"),
        (["capacity", "x.json", "--vary", "a=1..2", "--vary", "b=1..2"], "fleetbench capacity: capacity varies one value: give --vary once\n"),
        (["capacity", "x.json", "--vary", "a=1..2", "--step-duraton", "5s"],
         "fleetbench capacity: unknown option '--step-duraton' for capacity; did you mean '--step-duration'?\n"),
        (["capacity", "x.json", "--vary", "a=1..2", "--precision", "abc"],
         "fleetbench capacity: --precision needs a percentage from 0 to below 100 such as 5%, got 'abc'\n"),
    ])
    func usage(arguments: [String], message: String) {
        let result = FleetCommandLineTests.run(arguments)
        #expect(result.code == .usage)
        #expect(result.error.hasPrefix(message), "\(result.error)")
    }

    @Test("a varied path the scenario does not have is an invalid scenario (65) naming it; nothing runs")
    func badPath() throws {
        let file = try Self.writeScenario()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = FleetCommandLineTests.run(["capacity", file, "--vary", "fleets.pub.cont=1..5"])
        #expect(result.code == .invalidScenario)
        #expect(result.error.contains("unknown key 'cont'; did you mean 'count'?"), "\(result.error)")
        #expect(result.output == "")
    }

    @Test("capacity is listed in the usage and has its own help")
    func help() {
        #expect(FleetCommandLine.usage.contains("  capacity SCENARIO   find the highest level"))
        let result = FleetCommandLineTests.run(["help", "capacity"])
        #expect(result.code == .success)
        #expect(result.output == CapacityCommand.help + "\n")
    }
}
