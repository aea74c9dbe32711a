import FleetTestSupport
import FleetBroker
import Foundation
import Testing

/// What mosquitto delivers of a run's JSON payloads, read by mosquitto_sub: every payload parses.
@Suite("JSON payloads on the wire", .serialized)
struct JSONPayloadRunTests {
    /// The issue's template (a quote and a backslash in choice options) and a tab and control character inside
    /// JSON strings, 60 messages.
    static let scenario = #"""
        {
          "name": "json-escaping",
          "duration": "6s",
          "brokers": ["BROKER"],
          "fleets": [
            {"name": "notes", "count": 1, "client_id": "note\"taker",
             "publish": [{"topic": "notes/out", "qos": 1, "schedule": {"type": "rate", "per_second": 30}, "limit": 60,
                          "payload": {"json": {"note": "say {choice:\"hi\"|back\\slash}",
                                               "t": "{choice:a\tb|c\u0001d}", "who": "{client_id}", "n": "{seq}"}}}]}
          ]
        }
        """#

    @Test("every payload a subscriber receives is valid JSON holding the generated values")
    func everyPayloadParses() throws {
        var brokerConfiguration = MosquittoConfiguration()
        brokerConfiguration.extraLines = [MosquittoBroker.subscriptionLogging]
        let broker = try MosquittoBroker(configuration: brokerConfiguration)
        defer { broker.stop() }
        let directory = RunEndToEndTests.temporaryDirectory("json-escaping")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/json-escaping.json"
        try Self.scenario.replacingOccurrences(of: "BROKER", with: broker.url).write(toFile: file, atomically: true, encoding: .utf8)

        // The subscriber: mosquitto's own client, one payload per line (the payloads hold no raw newline).
        let subscriber = Process()
        subscriber.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        subscriber.arguments = ["-h", "127.0.0.1", "-p", String(broker.port), "-t", "notes/out", "-q", "1", "-C", "60", "-W", "30"]
        let output = Pipe()
        subscriber.standardOutput = output
        try subscriber.run()
        defer { if subscriber.isRunning { subscriber.terminate() } }
        // Subscribed before the first publish: mosquitto logged the subscription.
        #expect(broker.waitForSubscriptions(to: "notes/out"))

        let outcome = try RunEndToEndTests.run(["run", file, "--seed", "3", "--out", directory + "/out", "--quiet"])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        let data = output.fileHandleForReading.readDataToEndOfFile()
        subscriber.waitUntilExit()

        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 60)
        var invalid = 0
        var notes = Set<String>()
        var tabs = Set<String>()
        for line in lines {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                invalid += 1
                continue
            }
            notes.insert(object["note"] as? String ?? "?")
            tabs.insert(object["t"] as? String ?? "?")
            #expect(object["who"] as? String == "note\"taker")
            #expect(object["_fb"] is String)
        }
        #expect(invalid == 0, "payloads that are not JSON")
        #expect(notes == ["say \"hi\"", "say back\\slash"])
        #expect(tabs == ["a\tb", "c\u{01}d"])
    }
}
