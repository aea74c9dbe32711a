import FleetBroker
import Foundation
import Testing

/// `fleetbench run --broker` against the suite's RabbitMQ node, by the built binary as a user runs it: the library's
/// scenarios at 3.1.1 pass; chat-room as shipped (MQTT 5 support agents, QoS 2 everywhere) fails, naming the
/// refused clients and the downgrades in the summary, report.json and on stderr, unless thresholds accept them.
extension RabbitMQTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    struct BinaryMissing: Error, CustomStringConvertible { let description: String }

    /// Runs the newest built fleetbench (scripts/test builds the release one) against the suite's node (unless
    /// `againstNode` is false), in a fresh results folder; returns its exit status, output and report.json (nil
    /// when the run wrote none).
    static func fleetbench(_ arguments: [String]) throws -> (Outcome, [String: Any]) {
        let (outcome, report) = try fleetbench(arguments, againstNode: true)
        return (outcome, try #require(report, "no report.json: \(outcome)"))
    }

    static func fleetbench(_ arguments: [String], againstNode: Bool) throws -> (Outcome, [String: Any]?) {
        let candidates = [".build/debug/fleetbench", ".build/release/fleetbench"].map { root.appendingPathComponent($0).path }
        func modified(_ path: String) -> Date {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
        }
        guard let binary = candidates.filter({ FileManager.default.isExecutableFile(atPath: $0) })
            .max(by: { modified($0) < modified($1) }) else {
            throw BinaryMissing(description: "no fleetbench binary: run `swift build --product fleetbench` first")
        }
        let out = FileManager.default.temporaryDirectory
            .appendingPathComponent("fleetbench-rabbitmq-run-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments + (againstNode ? ["--broker", try RabbitMQNode.broker().url] : []) + ["--out", out]
        process.currentDirectoryURL = root
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let outcome = Outcome(status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
                              error: String(decoding: errorData, as: UTF8.self))
        guard let data = FileManager.default.contents(atPath: out + "/report.json") else { return (outcome, nil) }
        return (outcome, try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Thresholds on counts only: latency on a shared 2-core machine running the whole test suite says nothing here.
    static let countThresholds = #"thresholds=["connections.failed == 0", "delivery.qos1.lost == 0", "delivery.qos1.duplicated == 0"]"#

    @Test("the quickstart at MQTT 3.1.1 against RabbitMQ with --broker: every reading acked and delivered, exit 0")
    func quickstartAt311() throws {
        let (outcome, report) = try Self.fleetbench([
            "run", "scenarios/quickstart.json", "--duration", "2s", "--quiet",
            "--set", "fleets.sensors.protocol=3.1.1", "--set", "fleets.dashboard.protocol=3.1.1",
            "--set", Self.countThresholds,
        ])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        #expect(report["passed"] as? Bool == true)
        let connections = try #require(report["connections"] as? [String: Any])
        #expect(connections["succeeded"] as? Int == 11)
        #expect(connections["never_connected"] as? Int == 0)
        let qos1 = try #require((report["messages"] as? [String: Any])?["qos1"] as? [String: Any])
        let published = try #require(qos1["published"] as? Int)
        #expect(published >= 20)
        #expect(qos1["acked"] as? Int == published)
        let delivery = try #require((report["delivery"] as? [String: Any])?["qos1"] as? [String: Any])
        #expect(delivery["expected"] as? Int == published)
        #expect(delivery["unique"] as? Int == published)
        #expect(delivery["lost"] as? Int == 0)
        #expect(report["downgrades"] as? [String: Int] == [
            "subscription_qos": 0, "subscription_refused": 0, "qos2_acked_as_qos1": 0])
    }

    @Test("chat-room as shipped against RabbitMQ fails (exit 99): 2 MQTT 5 clients never connected, QoS 2 downgraded")
    func chatRoomFailsLoudly() throws {
        let (outcome, report) = try Self.fleetbench([
            "run", "scenarios/chat-room.json", "--scale", "0.2", "--duration", "3s", "--set", "seed=7",
            "--set", #"stages=[{"type": "ramp_up", "over": "1s"}, {"type": "steady", "duration": "2s"}]"#,
        ])
        #expect(outcome.status == 99, "\(outcome.output)\n\(outcome.error)")
        #expect(report["passed"] as? Bool == false)
        // 0.2 × (25 lobby users at 3.1.1 + 10 support agents at MQTT 5): 5 connect, the 2 agents never do.
        let connections = try #require(report["connections"] as? [String: Any])
        #expect(connections["succeeded"] as? Int == 5)
        #expect(connections["never_connected"] as? Int == 2)
        let reasons = try #require(connections["failed_by_reason"] as? [String: Int])
        #expect(Array(reasons.keys) == ["closed_before_connack"])
        #expect((reasons["closed_before_connack"] ?? 0) >= 2)
        // Every QoS 2 publish answered with PUBACK, every QoS 2 subscription granted QoS 1.
        let qos2 = try #require((report["messages"] as? [String: Any])?["qos2"] as? [String: Any])
        let published = try #require(qos2["published"] as? Int)
        #expect(published > 0)
        #expect(qos2["acked"] as? Int == 0)
        let downgrades = try #require(report["downgrades"] as? [String: Int])
        #expect(downgrades == ["subscription_qos": 5, "subscription_refused": 0, "qos2_acked_as_qos1": published])
        // The summary's line, with the fleet they all happened in (the agents never got that far).
        #expect(outcome.output.contains(
            "  downgrades    subscription_qos 5, qos2_acked_as_qos1 \(published) (lobby \(published + 5))\n"))
        #expect(outcome.output.contains("                never connected: 2 clients\n"))
        #expect(outcome.error.contains("fleetbench: 2 clients never got connected; add a threshold on connections.*"))
        #expect(outcome.error.contains(
            "fleetbench: the broker granted less than asked (QoS 2 publishes answered with PUBACK \(published), "
                + "subscriptions granted a lower QoS 5); add a threshold on downgrades.* "
                + #"(e.g. "downgrades.qos2_acked_as_qos1 <= N") to accept that"#))
    }

    @Test("chat-room at 3.1.1 only, with thresholds accepting the downgrades: passes against RabbitMQ, exit 0")
    func chatRoomDowngradesAccepted() throws {
        let scenario = try String(contentsOf: Self.root.appendingPathComponent("scenarios/chat-room.json"), encoding: .utf8)
        var object = try #require(try JSONSerialization.jsonObject(with: Data(scenario.utf8)) as? [String: Any])
        let fleets = try #require(object["fleets"] as? [[String: Any]])
        object["fleets"] = [fleets[0]]  // the lobby: 3.1.1 users at QoS 2
        object["thresholds"] = ["delivery.qos2.lost == 0", "delivery.qos2.duplicated == 0",
                                "downgrades.subscription_refused == 0", "downgrades.subscription_qos <= 5"]
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("fleetbench-rabbitmq-lobby-\(getpid()).json").path
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let (outcome, report) = try Self.fleetbench([
            "run", file, "--scale", "0.2", "--duration", "3s", "--set", "seed=7", "--quiet",
            "--set", #"stages=[{"type": "ramp_up", "over": "1s"}, {"type": "steady", "duration": "2s"}]"#,
        ])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        #expect(report["passed"] as? Bool == true)
        let downgrades = try #require(report["downgrades"] as? [String: Int])
        #expect(downgrades["subscription_qos"] == 5)
        #expect(!outcome.error.contains("granted less than asked"))
    }
}
