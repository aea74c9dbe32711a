import Foundation
import Testing

/// report.json of a real run (the quickstart against the embedded mosquitto), field by field, and the summary
/// printed from the same numbers.
@Suite("report.json after a real run")
struct RunReportAfterRealRunTests {
    @Test("every required field is there, consistent with the run and with the printed summary")
    func fields() throws {
        let out = RunEndToEndTests.temporaryDirectory("report-fields")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try RunEndToEndTests.run(
            ["run", "scenarios/quickstart.json", "--duration", "4s", "--seed", "42", "--out", out, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let report = try RunEndToEndTests.report(in: out)

        #expect(report["schema"] as? String == "fleetbench.report/1")
        #expect((report["tool"] as? [String: Any])?["version"] as? String == "0.1.0")
        let scenario = try #require(report["scenario"] as? [String: Any])
        #expect(scenario["name"] as? String == "quickstart")
        #expect(scenario["file"] as? String == "scenarios/quickstart.json")
        let sha = try #require(scenario["sha256"] as? String)
        #expect(sha.count == 64 && sha.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        let run = try #require(report["run"] as? [String: Any])
        #expect(run["interrupted"] as? Bool == false)
        #expect(run["seed"] as? Int == 42)
        let started = try #require(run["started_at"] as? String)
        #expect(started.hasSuffix("Z") && started.count == 24, "RFC 3339 UTC with milliseconds: \(started)")
        let duration = try #require(run["duration_s"] as? Double)
        #expect(duration >= 3.9 && duration < 30)
        #expect(report["broker_embedded"] as? Bool == true)
        #expect((report["brokers"] as? [String])?.first?.hasPrefix("mqtt://127.0.0.1:") == true)
        #expect(report["passed"] as? Bool == true)

        let connections = try #require(report["connections"] as? [String: Any])
        #expect(connections["attempted"] as? Int == 11)
        #expect(connections["succeeded"] as? Int == 11)
        #expect(connections["failed"] as? Int == 0)
        #expect(connections["reconnects"] as? Int == 0)
        #expect(connections["peak_connected"] as? Int == 11)
        #expect(connections["disconnects_by_reason"] as? [String: Int] == ["client_initiated": 11])

        // Messages and delivery agree: every QoS 1 reading published, acked, received once by the dashboard.
        let qos1 = try #require((report["messages"] as? [String: Any])?["qos1"] as? [String: Int])
        let published = try #require(qos1["published"])
        #expect(published > 0)
        #expect(qos1["acked"] == published)
        #expect(qos1["received"] == published)
        // Nothing but this run's messages arrived.
        #expect(qos1["arrived"] == published)
        #expect((report["messages"] as? [String: Any])?["qos0"] as? [String: Int] == ["published": 0, "received": 0, "arrived": 0])
        let delivery = try #require((report["delivery"] as? [String: Any])?["qos1"] as? [String: Any])
        #expect(delivery["expected"] as? Int == published)
        #expect(delivery["received"] as? Int == published)
        #expect(delivery["lost"] as? Int == 0)
        #expect(delivery["duplicated"] as? Int == 0)
        #expect(delivery["reordered"] as? Int == 0)

        let timeouts = try #require(report["ack_timeouts"] as? [String: Any])
        for kind in ["connack", "suback", "unsuback", "puback", "pubrec", "pubcomp", "pingresp", "total"] {
            #expect(timeouts[kind] as? Int == 0, "\(kind)")
        }
        #expect((timeouts["timeouts_s"] as? [String: Double])?["connack"] == 12)
        #expect((timeouts["timeouts_s"] as? [String: Double])?["puback"] == 15)

        let latency = try #require(report["latency_ms"] as? [String: Any])
        for kind in ["tcp_connect", "connect", "subscribe", "puback", "end_to_end"] {
            let figures = try #require(latency[kind] as? [String: Any], "\(kind) missing")
            let p50 = try #require(figures["p50"] as? Double)
            let p99 = try #require(figures["p99"] as? Double)
            let max = try #require(figures["max"] as? Double)
            #expect(0 <= p50 && p50 <= p99 && p99 <= max, "\(kind)")
        }
        let endToEnd = try #require(latency["end_to_end"] as? [String: Any])
        #expect(endToEnd["count"] as? Int == published)
        #expect(endToEnd["origin"] as? String == "intended")
        #expect((endToEnd["from_sent"] as? [String: Any])?["count"] as? Int == published)

        let thresholds = try #require(report["thresholds"] as? [[String: Any]])
        #expect(thresholds.map { $0["expression"] as? String } == [
            "connections.failed == 0", "delivery.qos1.lost == 0", "latency.end_to_end.p99 < 100ms",
        ])
        #expect(thresholds.allSatisfy { $0["passed"] as? Bool == true })

        let generator = try #require(report["generator"] as? [String: Any])
        // The embedded broker is on loopback: one lane per core but one left to the broker.
        #expect(generator["lanes"] as? Int == max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) - 1))
        #expect((generator["peak_rss_bytes"] as? Int ?? 0) > 0)
        #expect(generator["receive_coalescing_us"] as? Int == 1000)
        // The quickstart's few messages a second never make a lane pause.
        #expect(generator["receive_coalescing_pauses"] as? Int == 0)
        #expect(generator["receive_batching_us"] as? Int == 500)
        // A few clients to a local broker: the kernel picks their source address and port.
        #expect(generator["source_addresses"] as? [String] == [])
        // io_uring where the kernel allows it; otherwise the report says send(2) and why.
        if generator["io_uring_unavailable"] is NSNull {
            #expect(generator["send_path"] as? String == "io_uring")
        } else {
            #expect(generator["send_path"] as? String == "send")
            #expect((generator["io_uring_unavailable"] as? String)?.hasPrefix("io_uring_setup failed: ") == true)
        }
        // epoll unless FLEETBENCH_RECEIVE_PATH=io_uring asked for the receive ring (and the kernel gave it).
        let readPath = generator["receive_path"] as? String
        #expect(readPath == "epoll+recv" || readPath == "io_uring")
        if readPath == "io_uring" { #expect(generator["receive_ring_unavailable"] is NSNull) }
        #expect(generator["saturated"] as? Bool == false, "\(generator["saturation_reasons"] ?? "")")

        // The timeline's per-second counts add up to the totals.
        let timeline = try #require(report["timeline"] as? [[String: Any]])
        #expect(timeline.count >= 3)
        #expect(timeline.reduce(0) { $0 + ($1["published"] as? Int ?? 0) } == published)
        #expect(timeline.reduce(0) { $0 + ($1["received"] as? Int ?? 0) } == published)

        // The summary printed at the end uses the same numbers.
        #expect(outcome.output.contains("qos1          published \(published), acked \(published), unacked at end 0, "
            + "received \(published); "
            + "expected \(published), lost 0, duplicated 0, reordered 0"))
        let p99 = try #require(endToEnd["p99"] as? Double)
        #expect(outcome.output.contains("threshold     pass  latency.end_to_end.p99 < 100ms  (observed \(Self.trimmed(p99)) ms)"))
    }

    /// How the summary prints a millisecond figure with µs precision.
    static func trimmed(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String((value * 1000).rounded() / 1000)
    }
}
