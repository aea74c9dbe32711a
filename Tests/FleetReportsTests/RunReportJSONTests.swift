import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

/// report.json parsed by Foundation's JSONSerialization (an independent reader) and checked key by key.
@Suite("report.json")
struct RunReportJSONTests {
    static func parsed(_ report: RunReport = SampleReports.make()) throws -> [String: Any] {
        let text = try report.jsonText()
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try #require(object as? [String: Any])
    }

    static func object(_ value: Any?) throws -> [String: Any] { try #require(value as? [String: Any]) }

    @Test("top-level keys are exactly the documented ones, in order")
    func topLevelKeys() throws {
        let text = try SampleReports.make().jsonText()
        let keys = text.split(separator: "\n").filter { $0.hasPrefix("  \"") }.map {
            String($0.dropFirst(3).prefix(while: { $0 != "\"" }))
        }
        #expect(keys == [
            "schema", "tool", "scenario", "run", "brokers", "broker_embedded", "passed", "connections", "messages",
            "delivery", "ack_timeouts", "downgrades", "requests", "offline", "latency_ms", "thresholds", "generator", "timeline", "fleets",
            "environment",
        ])
        #expect(text.hasSuffix("}\n"))
    }

    @Test("schema, tool, scenario, run, brokers and verdict")
    func headFields() throws {
        let json = try Self.parsed()
        #expect(json["schema"] as? String == "fleetbench.report/1")
        #expect(try Self.object(json["tool"])["version"] as? String == "0.1.0")
        let scenario = try Self.object(json["scenario"])
        #expect(scenario["name"] as? String == "vehicles soak")
        #expect(scenario["file"] as? String == "scenarios/soak.json")
        #expect(scenario["sha256"] as? String == "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        #expect(scenario["description"] as? String == "Cars report telemetry; trucks too.")
        #expect(try Self.object(scenario["redacted"])["name"] as? String == "vehicles soak")
        let run = try Self.object(json["run"])
        #expect(run["started_at"] as? String == "2026-11-29T15:16:30.125Z")
        #expect(run["duration_s"] as? Int == 3)
        #expect(run["interrupted"] as? Bool == false)
        #expect(run["seed"] as? Int == 42)
        #expect(json["brokers"] as? [String] == ["mqtt://user:********@127.0.0.1:1883"])
        #expect(json["broker_embedded"] as? Bool == true)
        #expect(json["passed"] as? Bool == false)
    }

    @Test("connections with failures and disconnects by reason")
    func connections() throws {
        let connections = try Self.object(try Self.parsed()["connections"])
        #expect(connections["attempted"] as? Int == 12)
        #expect(connections["succeeded"] as? Int == 10)
        #expect(connections["failed"] as? Int == 2)
        #expect(connections["reconnects"] as? Int == 1)
        #expect(connections["peak_connected"] as? Int == 10)
        #expect(try Self.object(connections["failed_by_reason"]) as? [String: Int]
            == ["refused": 1, "connack_refused_0x87": 1])
        #expect(try Self.object(connections["disconnects_by_reason"]) as? [String: Int]
            == ["client_initiated": 9, "closed_by_peer": 1])
    }

    @Test("messages per QoS: acked absent for QoS 0")
    func messages() throws {
        let messages = try Self.object(try Self.parsed()["messages"])
        #expect(try Self.object(messages["qos0"]) as? [String: Int] == ["published": 100, "received": 95, "arrived": 95])
        #expect(try Self.object(messages["qos1"]) as? [String: Int]
            == ["published": 200, "acked": 199, "received": 201, "arrived": 201, "unacked_at_end": 0])
        #expect(try Self.object(messages["qos2"]) as? [String: Int]
            == ["published": 50, "acked": 50, "received": 50, "arrived": 50, "unacked_at_end": 0])
        #expect(messages["bytes_in"] as? Int == 40_000)
        #expect(messages["bytes_out"] as? Int == 35_000)
    }

    @Test("delivery per QoS")
    func delivery() throws {
        let delivery = try Self.object(try Self.parsed()["delivery"])
        #expect(try Self.object(delivery["qos1"]) as? [String: Int] == [
            "expected": 200, "received": 201, "unique": 199, "lost": 1, "duplicated": 2, "reordered": 3,
            "unexpected": 0, "missed_while_offline": 0, "untracked": 0, "rejected": 0,
        ])
        #expect(delivery["foreign"] as? Int == 0)
        #expect(delivery["retained_on_subscribe"] as? Int == 0)
        #expect(try Self.object(delivery["qos0"])["lost"] as? Int == 5)
        #expect(try Self.object(delivery["qos2"])["expected"] as? Int == 50)
    }

    @Test("ack timeouts by kind, their total and the deadlines used")
    func ackTimeouts() throws {
        let timeouts = try Self.object(try Self.parsed()["ack_timeouts"])
        #expect(timeouts["puback"] as? Int == 1)
        #expect(timeouts["pingresp"] as? Int == 2)
        #expect(timeouts["connack"] as? Int == 0)
        #expect(timeouts["total"] as? Int == 3)
        #expect(try Self.object(timeouts["timeouts_s"]) as? [String: Double] == ["connack": 10, "puback": 5, "pingresp": 7.5])
        #expect(Set(timeouts.keys) == [
            "connack", "suback", "unsuback", "puback", "pubrec", "pubcomp", "pingresp", "total", "timeouts_s",
        ])
    }

    @Test("latency in ms with µs precision, intended figures with the sent ones beside them")
    func latency() throws {
        let latency = try Self.object(try Self.parsed()["latency_ms"])
        #expect(Set(latency.keys) == ["tcp_connect", "puback", "end_to_end", "schedule_lag"])
        let endToEnd = try Self.object(latency["end_to_end"])
        #expect(endToEnd["origin"] as? String == "intended")
        #expect(endToEnd["count"] as? Int == 1000)
        #expect(endToEnd["min"] as? Double == 0.001)
        #expect(endToEnd["mean"] as? Double == 0.501)
        #expect(endToEnd["p50"] as? Double == 0.5)
        #expect(endToEnd["p90"] as? Double == 0.9)
        #expect(endToEnd["p99"] as? Double == 0.99)
        #expect(endToEnd["p999"] as? Double == 0.999)
        #expect(endToEnd["max"] as? Double == 1)
        #expect((endToEnd["hdr"] as? String)?.hasPrefix("HISTFAAA") == true)
        let sent = try Self.object(endToEnd["from_sent"])
        #expect(sent["count"] as? Int == 500)
        #expect(sent["mean"] as? Double == 0.251)
        #expect(sent["p50"] as? Double == 0.25)
        #expect(sent["p99"] as? Double == 0.495)
        #expect(sent["max"] as? Double == 0.5)
        let connect = try Self.object(latency["tcp_connect"])
        #expect(connect["origin"] as? String == "sent")
        #expect(connect["from_sent"] == nil)
        #expect(connect["count"] as? Int == 3)
        #expect(connect["p50"] as? Double == 0.2)
        #expect(connect["p90"] as? Double == 0.3)
        let puback = try Self.object(latency["puback"])
        #expect(puback["p999"] as? Double == 2)
        #expect(puback["from_sent"] == nil)
    }

    @Test("thresholds with observed values, limits and details")
    func thresholds() throws {
        let thresholds = try #require(try Self.parsed()["thresholds"] as? [[String: Any]])
        #expect(thresholds.count == 2)
        #expect(thresholds[0]["expression"] as? String == "latency.end_to_end.p99 < 50ms")
        #expect(thresholds[0]["metric"] as? String == "latency.end_to_end.p99")
        #expect(thresholds[0]["observed"] as? Int == 990_000)
        #expect(thresholds[0]["limit"] as? Int == 50_000_000)
        #expect(thresholds[0]["passed"] as? Bool == true)
        #expect(thresholds[0]["detail"] == nil)
        #expect(thresholds[1]["passed"] as? Bool == false)
        #expect(thresholds[1]["detail"] as? String == "1 of 200 QoS 1 messages never arrived")
    }

    @Test("a threshold whose metric was not produced has observed null")
    func unobservedThreshold() throws {
        var report = SampleReports.make()
        report.thresholds = [ThresholdResult(expression: "latency.request_response.p99 < 1s",
                                             metric: "latency.request_response.p99", observed: nil, passed: false)]
        let thresholds = try #require(try Self.parsed(report)["thresholds"] as? [[String: Any]])
        #expect(thresholds[0]["observed"] is NSNull)
        #expect(thresholds[0]["limit"] == nil)
    }

    @Test("generator health with schedule lag from the latency recorder")
    func generator() throws {
        let generator = try Self.object(try Self.parsed()["generator"])
        #expect(try Self.object(generator["schedule_lag_ms"]) as? [String: Double] == ["p50": 0.015, "p99": 0.02, "max": 0.02])
        #expect(generator["saturated"] as? Bool == true)
        #expect(generator["saturation_reasons"] as? [String] == ["schedule lag p99 20 µs above 10 µs"])
        #expect(generator["cpu_s"] as? Double == 1.25)
        #expect(generator["peak_rss_bytes"] as? Int == 52_428_800)
        #expect(generator["lanes"] as? Int == 2)
        #expect(generator["dropped_slots"] as? Int == 4)
        #expect(generator["abandoned_publishes"] as? Int == 1)
        #expect(generator["foreign_messages"] as? Int == 0)
        #expect(generator["receive_coalescing_us"] as? Int == 250)
        #expect(generator["receive_coalescing_pauses"] as? Int == 12)
        #expect(generator["receive_batching_us"] as? Int == 250)
        #expect(generator["receive_batching_pauses"] as? Int == 7)
        #expect(generator["send_path"] as? String == "io_uring")
        #expect(generator["io_uring_unavailable"] is NSNull)
        #expect(generator["source_addresses"] as? [String] == ["127.0.0.1", "127.0.0.2"])
    }

    @Test("no schedule lag samples: schedule_lag_ms is null")
    func noScheduleLag() throws {
        var report = SampleReports.make()
        report.latency = LatencyRecorder()
        let json = try Self.parsed(report)
        #expect(try Self.object(json["generator"])["schedule_lag_ms"] is NSNull)
        #expect(try Self.object(json["latency_ms"]).isEmpty)
    }

    @Test("timeline: one entry a second, null latency for a second without samples")
    func timeline() throws {
        let timeline = try #require(try Self.parsed()["timeline"] as? [[String: Any]])
        #expect(timeline.count == 3)
        #expect(timeline[0]["t"] as? Int == 1)
        #expect(timeline[0]["connected"] as? Int == 8)
        #expect(timeline[0]["published"] as? Int == 100)
        #expect(timeline[0]["received"] as? Int == 90)
        #expect(timeline[0]["end_to_end_p50_ms"] as? Double == 0.4)
        #expect(timeline[0]["end_to_end_p99_ms"] as? Double == 0.9)
        #expect(timeline[0]["ack_timeouts"] as? Int == 0)
        #expect(timeline[1]["end_to_end_p99_ms"] is NSNull)
        #expect(timeline[2]["ack_timeouts"] as? Int == 2)
    }

    @Test("per-fleet breakdowns and the environment")
    func fleetsAndEnvironment() throws {
        let json = try Self.parsed()
        let fleets = try #require(json["fleets"] as? [[String: Any]])
        #expect(fleets.map { $0["name"] as? String } == ["cars", "trucks"])
        #expect(fleets[0]["clients"] as? Int == 6)
        #expect(try Self.object(fleets[0]["connections"])["succeeded"] as? Int == 6)
        #expect(try Self.object(try Self.object(fleets[0]["messages"])["qos1"])["published"] as? Int == 100)
        #expect(try Self.object(try Self.object(fleets[0]["delivery"])["qos1"])["duplicated"] as? Int == 2)
        #expect(try Self.object(try Self.object(fleets[0]["latency_ms"])["end_to_end"])["p50"] as? Double == 1.5)
        #expect(try Self.object(fleets[0]["ack_timeouts"])["total"] as? Int == 0)
        let environment = try Self.object(json["environment"])
        #expect(environment["hostname"] as? String == "bench-1")
        #expect(environment["os"] as? String == "Debian GNU/Linux 13")
        #expect(environment["cores"] as? Int == 2)
        #expect(environment["memory_bytes"] as? Int == 8_589_934_592)
        #expect(environment["fleetbench_version"] as? String == "0.1.0")
        #expect(environment.count == 5)
    }

    @Test("per fleet: downgrades, requests and the generator's unsent, dropped and abandoned counts, read back")
    func fleetShares() throws {
        var report = SampleReports.make()
        report.downgrades = DowngradeSummary(subscriptionQoS: 3, subscriptionRefused: 1, qos2AckedAsQoS1: 0)
        report.requests = RequestSummary(sent: 50, answered: 47, timedOut: 3)
        report.generator.unsentAtEnd = 12
        report.fleets[0].downgrades = DowngradeSummary(subscriptionQoS: 3, subscriptionRefused: 0, qos2AckedAsQoS1: 0)
        report.fleets[1].downgrades = DowngradeSummary(subscriptionQoS: 0, subscriptionRefused: 1, qos2AckedAsQoS1: 0)
        report.fleets[0].unsentAtEnd = 9
        report.fleets[1].unsentAtEnd = 3
        report.fleets[1].droppedSlots = 2
        report.fleets[1].abandonedPublishes = 4
        report.fleets[1].requests = RequestSummary(sent: 50, answered: 47, timedOut: 3)
        let json = try Self.parsed(report)
        #expect(try Self.object(json["requests"]) as NSDictionary == ["sent": 50, "answered": 47, "timed_out": 3, "late": 0, "responder_answered": 0, "responder_unanswered": 0])
        let fleets = try #require(json["fleets"] as? [[String: Any]])
        #expect(try Self.object(fleets[0]["downgrades"]) as NSDictionary
            == ["subscription_qos": 3, "subscription_refused": 0, "qos2_acked_as_qos1": 0])
        #expect(try Self.object(fleets[1]["downgrades"]) as NSDictionary
            == ["subscription_qos": 0, "subscription_refused": 1, "qos2_acked_as_qos1": 0])
        #expect(try Self.object(fleets[0]["generator"]) as NSDictionary
            == ["dropped_slots": 0, "unsent_at_end": 9, "abandoned_publishes": 0])
        #expect(try Self.object(fleets[1]["generator"]) as NSDictionary
            == ["dropped_slots": 2, "unsent_at_end": 3, "abandoned_publishes": 4])
        #expect(try Self.object(fleets[0]["requests"]) as NSDictionary == ["sent": 0, "answered": 0, "timed_out": 0, "late": 0, "responder_answered": 0, "responder_unanswered": 0])
        #expect(try Self.object(fleets[1]["requests"]) as NSDictionary == ["sent": 50, "answered": 47, "timed_out": 3, "late": 0, "responder_answered": 0, "responder_unanswered": 0])
        let back = try RunReport.parse(text: try report.jsonText())
        #expect(back.requests == RequestSummary(sent: 50, answered: 47, timedOut: 3))
        #expect(back.fleets.map(\.downgrades) == report.fleets.map(\.downgrades))
        #expect(back.fleets.map(\.unsentAtEnd) == [9, 3])
        #expect(back.fleets.map(\.droppedSlots) == [0, 2])
        #expect(back.fleets.map(\.abandonedPublishes) == [0, 4])
        #expect(back.fleets.map(\.requests) == report.fleets.map(\.requests))
    }

    @Test("a seed beyond Int64 is written as a decimal string and read back")
    func hugeSeed() throws {
        var report = SampleReports.make()
        report.run.seed = UInt64.max
        #expect(try Self.object(try Self.parsed(report)["run"])["seed"] as? String == "18446744073709551615")
        #expect(try RunReport.parse(text: try report.jsonText()).run.seed == UInt64.max)
    }

    @Test("the end of a run: unacked at end per QoS, unsent slots and the drain, written and read back")
    func endOfRun() throws {
        var report = SampleReports.make()
        report.messages.unackedAtEnd = PerQoSCounts(qos1: 320, qos2: 7)
        report.generator.unsentAtEnd = 1_680
        report.generator.drainSeconds = 2.5
        report.generator.drainLimitSeconds = 15
        let json = try Self.parsed(report)
        let messages = try Self.object(json["messages"])
        #expect(try Self.object(messages["qos0"])["unacked_at_end"] == nil)
        #expect(try Self.object(messages["qos1"])["unacked_at_end"] as? Int == 320)
        #expect(try Self.object(messages["qos2"])["unacked_at_end"] as? Int == 7)
        let generator = try Self.object(json["generator"])
        #expect(generator["unsent_at_end"] as? Int == 1_680)
        #expect(generator["drain_s"] as? Double == 2.5)
        #expect(generator["drain_limit_s"] as? Int == 15)
        let back = try RunReport.parse(text: try report.jsonText())
        #expect(back.messages.unackedAtEnd == PerQoSCounts(qos1: 320, qos2: 7))
        #expect(back.generator.unsentAtEnd == 1_680)
        #expect(back.generator.drainSeconds == 2.5)
        #expect(back.generator.drainLimitSeconds == 15)
    }

    @Test("clamped samples of every histogram are reported and read back")
    func clampedCounts() throws {
        var report = SampleReports.make()
        var latency = LatencyRecorder()
        // Received at 1,000 µs: sent at 1,003 and 1,001 µs (negative: clamped), 960 µs; intended 950 µs each.
        for sent: UInt64 in [1_003_000, 1_001_000, 960_000] {
            latency.record(.endToEnd, intendedAt: 950_000, sentAt: sent, completedAt: 1_000_000)
        }
        report.latency = latency
        let entry = try Self.object(try Self.object(try Self.parsed(report)["latency_ms"])["end_to_end"])
        #expect(entry["count"] as? Int == 3)
        #expect(entry["clamped_low"] as? Int == 0)
        #expect(entry["clamped_high"] as? Int == 0)
        let fromSent = try Self.object(entry["from_sent"])
        #expect(fromSent["count"] as? Int == 3)
        #expect(fromSent["clamped_low"] as? Int == 2)
        let back = try RunReport.parse(text: try report.jsonText())
        #expect(back.latency.histogram(.endToEnd, from: .sent).clampedLowCount == 2)
    }

    @Test("rates have one time base, the publishing phase: publish_s is written, compare divides by it")
    func publishSeconds() throws {
        var report = SampleReports.make()
        report.run.publishSeconds = 2
        #expect(try Self.object(try Self.parsed(report)["run"])["publish_s"] as? Int == 2)
        let back = try RunReport.parse(text: try report.jsonText())
        #expect(back.run.publishSeconds == 2)
        #expect(back.run.rateSeconds == 2)
        #expect(back.run.rate(350) == 175)
        var older = report
        older.run.publishSeconds = 0
        #expect(older.run.rateSeconds == 3)
    }

    @Test("each fleet reports its own ack deadlines")
    func fleetTimeouts() throws {
        var report = SampleReports.make()
        report.fleets[0].ackTimeoutSeconds = [.puback: 2]
        report.fleets[1].ackTimeoutSeconds = [.puback: 30, .connack: 5]
        let fleets = try #require(try Self.parsed(report)["fleets"] as? [[String: Any]])
        #expect(try Self.object(try Self.object(fleets[0]["ack_timeouts"])["timeouts_s"]) as? [String: Int] == ["puback": 2])
        #expect(try Self.object(try Self.object(fleets[1]["ack_timeouts"])["timeouts_s"]) as? [String: Int]
            == ["connack": 5, "puback": 30])
        let back = try RunReport.parse(text: try report.jsonText())
        #expect(back.fleets[1].ackTimeoutSeconds == [.puback: 30, .connack: 5])
    }
}
