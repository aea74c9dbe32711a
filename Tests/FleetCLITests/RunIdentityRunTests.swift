import FleetTestSupport
import FleetBroker
import Foundation
import Testing

/// Issue 11's cases 2 and 3 as a user meets them: `fleetbench` processes against one real mosquitto, read back
/// from report.json. Only a run's own messages count; the run id given with --run-id is the one in the report.
@Suite("fleetbench run: only this run's messages count", .serialized)
struct RunIdentityRunTests {
    static func int(_ report: [String: Any], _ keys: String...) -> Int? {
        var value: Any? = report
        for key in keys { value = (value as? [String: Any])?[key] }
        return value as? Int
    }

    /// Publishers `{prefix}-p{i}` on topics `identity/{i}` (the same topics for every prefix) and one subscriber
    /// `{prefix}-sub` to `identity/+`, all QoS 1.
    static func scenario(prefix: String, broker: String, duration: String, retain: Bool = false, limit: Int) -> String {
        """
        {"name": "identity-\(prefix)", "duration": "\(duration)", "brokers": ["\(broker)"],
         "fleets": [
           {"name": "sub", "count": 1, "client_id": "\(prefix)-sub", "subscriptions": [{"filter": "identity/+", "qos": 1}]},
           {"name": "pub", "count": 3, "client_id": "\(prefix)-p{i}",
            "publish": [{"topic": "identity/{i}", "qos": 1, "retain": \(retain), "limit": \(limit),
                         "schedule": {"type": "rate", "per_second": 20}, "payload": {"size": 64}}]}
         ],
         "thresholds": ["delivery.qos1.lost == 0", "delivery.qos1.duplicated == 0"]}
        """
    }

    static func write(_ text: String, to directory: String, name: String) throws -> String {
        let file = directory + "/" + name
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test("case 2: a retained stream run twice; the first run's 3 retained messages are retained on subscribe, not duplicates")
    func retainedTwice() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let directory = RunEndToEndTests.temporaryDirectory("identity-retained")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try Self.write(Self.scenario(prefix: "r", broker: broker.url, duration: "1s", retain: true, limit: 10),
                                  to: directory, name: "retained.json")
        var reports: [[String: Any]] = []
        for (index, runID) in ["1", "c0ffee"].enumerated() {
            let out = directory + "/out\(index)"
            let outcome = try RunEndToEndTests.run(["run", file, "--run-id", runID, "--out", out, "--quiet"])
            #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
            reports.append(try RunEndToEndTests.report(in: out))
        }
        #expect((reports[0]["run"] as? [String: Any])?["run_id"] as? String == "0000000000000001")
        #expect((reports[1]["run"] as? [String: Any])?["run_id"] as? String == "0000000000c0ffee")
        #expect(Self.int(reports[0], "delivery", "retained_on_subscribe") == 0)
        let second = reports[1]
        #expect(Self.int(second, "messages", "qos1", "published") == 30)
        // Received is this run's 30; the 3 retained leftovers arrived too.
        #expect(Self.int(second, "messages", "qos1", "received") == 30)
        #expect(Self.int(second, "messages", "qos1", "arrived") == 33)
        #expect(Self.int(second, "delivery", "retained_on_subscribe") == 3)
        #expect(Self.int(second, "delivery", "foreign") == 0)
        #expect(Self.int(second, "delivery", "qos1", "expected") == 30)
        #expect(Self.int(second, "delivery", "qos1", "received") == 30)
        #expect(Self.int(second, "delivery", "qos1", "unique") == 30)
        #expect(Self.int(second, "delivery", "qos1", "duplicated") == 0)
        #expect(Self.int(second, "delivery", "qos1", "lost") == 0)
        #expect(Self.int(second, "latency_ms", "end_to_end", "count") == 30)
    }

    @Test("case 3: two runs at once on the same topics; each counts its own 30, the other's are foreign")
    func twoRunsAtOnce() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let directory = RunEndToEndTests.temporaryDirectory("identity-two-runs")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Run a lasts 6 s; run b starts once a publishes and is over (10 messages per publisher at 20/s) well before
        // a ends, so a's subscriber gets every message of b. b's subscriber gets what a publishes meanwhile.
        let fileA = try Self.write(Self.scenario(prefix: "a", broker: broker.url, duration: "6s", limit: 100),
                                   to: directory, name: "a.json")
        let fileB = try Self.write(Self.scenario(prefix: "b", broker: broker.url, duration: "1s", limit: 10),
                                   to: directory, name: "b.json")
        // Run a as a process of its own, its output into files; run b meanwhile through the usual helper.
        let processA = Process()
        processA.executableURL = URL(fileURLWithPath: try RunEndToEndTests.binary())
        processA.arguments = ["run", fileA, "--out", directory + "/a", "--quiet"]
        processA.currentDirectoryURL = RunEndToEndTests.root
        FileManager.default.createFile(atPath: directory + "/a.stdout", contents: nil)
        FileManager.default.createFile(atPath: directory + "/a.stderr", contents: nil)
        processA.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/a.stdout"))
        processA.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/a.stderr"))
        try processA.run()
        defer { if processA.isRunning { processA.terminate() } }
        // Run b once run a publishes (its streamed timeline shows it): a's subscriber is in by then.
        #expect(EventWait.until(seconds: 30) { RunProgress.published(in: directory + "/a") > 0 })
        let outcomeB = try RunEndToEndTests.run(["run", fileB, "--out", directory + "/b", "--quiet",
                                                 "--summary-json", directory + "/b-summary.json"])
        processA.waitUntilExit()
        let errorA = (try? String(contentsOfFile: directory + "/a.stderr", encoding: .utf8)) ?? ""
        #expect(processA.terminationStatus == 0, "\(errorA)")
        #expect(outcomeB.status == 0, "\(outcomeB.output)\n\(outcomeB.error)")
        let reportA = try RunEndToEndTests.report(in: directory + "/a")
        let reportB = try RunEndToEndTests.report(in: directory + "/b")
        let runIDA = (reportA["run"] as? [String: Any])?["run_id"] as? String
        let runIDB = (reportB["run"] as? [String: Any])?["run_id"] as? String
        #expect(runIDA?.count == 16)
        #expect(runIDA != runIDB)
        #expect(Self.int(reportA, "messages", "qos1", "published") == 300)
        #expect(Self.int(reportB, "messages", "qos1", "published") == 30)
        for report in [reportA, reportB] {
            let published = Self.int(report, "messages", "qos1", "published")
            #expect(Self.int(report, "delivery", "qos1", "expected") == published)
            #expect(Self.int(report, "delivery", "qos1", "unique") == published)
            #expect(Self.int(report, "delivery", "qos1", "duplicated") == 0)
            #expect(Self.int(report, "delivery", "qos1", "lost") == 0)
            #expect(Self.int(report, "delivery", "qos1", "unexpected") == 0)
            #expect(Self.int(report, "latency_ms", "end_to_end", "count") == published)
            // Received is this run's messages only; every arrival is this run's or the other's.
            #expect(Self.int(report, "messages", "qos1", "received") == published)
            #expect(Self.int(report, "messages", "qos1", "arrived")
                    == published.map { $0 + (Self.int(report, "delivery", "foreign") ?? -1) })
        }
        // Every one of b's 30 messages reached a's subscriber, as foreign.
        #expect(Self.int(reportA, "delivery", "foreign") == 30)
        #expect(Self.int(reportA, "messages", "qos1", "arrived") == 330)
        // b's summary, printed and as JSON: received and its rate are b's own 30 messages; what arrived from a
        // is apart.
        let foreignB = try #require(Self.int(reportB, "delivery", "foreign"))
        #expect(foreignB > 0)
        #expect(outcomeB.output.contains("  qos1          published 30, acked 30, unacked at end 0, received 30, "
            + "arrived \(30 + foreignB); expected 30, lost 0, duplicated 0, reordered 0\n"), "\(outcomeB.output)")
        #expect(outcomeB.output.contains("  not counted   foreign \(foreignB) (not this run's), retained on subscribe 0; "
            + "in arrived only, not in received, expected, lost or duplicated\n"))
        let publishSeconds = try #require((reportB["run"] as? [String: Any])?["publish_s"] as? Double)
        let summaryB = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: directory + "/b-summary.json"))) as? [String: Any])
        let rates = try #require(summaryB["rates"] as? [String: Any])
        func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
        #expect(rates["received"] as? Double == rounded(30 / publishSeconds))
        #expect(rates["arrived"] as? Double == rounded(Double(30 + foreignB) / publishSeconds))
    }
}
