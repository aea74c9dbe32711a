import FleetMetrics
import Testing
@testable import FleetScenario

@Suite("Threshold expressions")
struct ThresholdTests {
    @Test("valid expressions parse to metric, operator and a value in base units", arguments: [
        ("latency.end_to_end.p99 < 50ms", "latency.end_to_end.p99", ComparisonOperator.less, 50_000_000.0),
        ("delivery.qos1.lost == 0", "delivery.qos1.lost", .equal, 0),
        ("ack_timeouts.puback == 0", "ack_timeouts.puback", .equal, 0),
        ("connections.failed_ratio < 0.1%", "connections.failed_ratio", .less, 0.001),
        ("connections.failed_ratio <= 0.05", "connections.failed_ratio", .lessOrEqual, 0.05),
        ("latency.connack.max<=2s", "latency.connack.max", .lessOrEqual, 2_000_000_000),
        ("  rates.received >= 1e3  ", "rates.received", .greaterOrEqual, 1000),
        ("generator.schedule_lag_p99 != 1.5ms", "generator.schedule_lag_p99", .notEqual, 1_500_000),
        ("latency.puback.count > 10", "latency.puback.count", .greater, 10),
        ("messages.qos2.published > 0", "messages.qos2.published", .greater, 0),
    ])
    func parses(text: String, metric: String, comparison: ComparisonOperator, value: Double) throws {
        let threshold = try Threshold.parse(text).get()
        #expect(threshold.metric == metric)
        #expect(threshold.comparison == comparison)
        #expect(threshold.value == value)
        #expect(threshold.source == text)
    }

    @Test("invalid expressions give a column and a reason", arguments: [
        ("", "column 1: expected a metric name such as latency.end_to_end.p99"),
        ("latency.e2e.p99 < 5ms", "column 1: unknown metric 'latency.e2e.p99'; see the metric table in scenarios/README.md"),
        ("latncy.end_to_end.p99 < 1ms", "column 1: unknown metric 'latncy.end_to_end.p99'; did you mean 'latency'?"),
        ("delivery.qos1.lots == 0", "column 1: unknown metric 'delivery.qos1.lots'; did you mean 'delivery.qos1.lost'?"),
        ("latency.end_to_end.p99 = 5ms", "column 24: expected an operator (<, <=, >, >=, ==, !=), found '='"),
        ("latency.end_to_end.p99", "column 23: expected an operator (<, <=, >, >=, ==, !=), found end of text"),
        ("latency.end_to_end.p99 <", "column 25: expected a number, found end of text"),
        ("delivery.qos1.lost == zero", "column 23: expected a number, found 'zero'"),
        ("latency.end_to_end.p99 < 5 sec", "column 28: unexpected 'sec' after the value"),
        ("latency.end_to_end.p99 < 5sec", "column 27: unknown time unit 'sec'; expected ns, us, ms, s, m or h"),
        ("latency.end_to_end.p99 < 5", "column 27: latency.end_to_end.p99 is a time; add a unit (ns, us, ms, s, m, h), e.g. 5ms"),
        ("delivery.qos1.lost == 0ms", "column 24: delivery.qos1.lost is a plain number; remove the unit 'ms'"),
        ("connections.failed_ratio < 5ms", "column 29: connections.failed_ratio is a ratio; write a plain number or a percentage such as 0.1%, not 'ms'"),
    ])
    func rejects(text: String, message: String) {
        guard case .failure(let failure) = Threshold.parse(text) else {
            Issue.record("expected '\(text)' to fail")
            return
        }
        #expect(failure.description == message)
    }

    @Test("evaluation compares the looked-up value; a missing metric fails")
    func evaluates() throws {
        let threshold = try Threshold.parse("latency.end_to_end.p99 < 50ms").get()
        #expect(threshold.evaluate { $0 == "latency.end_to_end.p99" ? 40_000_000 : nil }.passed)
        let failing = threshold.evaluate { _ in 60_000_000 }
        #expect(!failing.passed)
        #expect(failing.observed == 60_000_000)
        let missing = threshold.evaluate { _ in nil }
        #expect(!missing.passed)
        #expect(missing.observed == nil)
        let exact = try Threshold.parse("delivery.qos1.lost == 0").get()
        #expect(exact.evaluate { _ in 0 }.passed)
        #expect(!exact.evaluate { _ in 1 }.passed)
    }

    @Test("the metric catalog: one entry per path and per report.json key, every family the README lists")
    func catalog() {
        let paths = MetricCatalog.all.map(\.path)
        #expect(Set(paths).count == paths.count)
        let reportKeys = MetricCatalog.all.compactMap(\.report)
        #expect(Set(reportKeys).count == reportKeys.count)
        #expect(MetricCatalog.families == [
            "latency", "connections", "messages", "delivery", "ack_timeouts", "downgrades", "rates", "requests", "offline",
            "generator",
        ])
        #expect(MetricCatalog.all.filter { $0.threshold && $0.path.hasPrefix("latency.") }.count == 14 * 8)
        #expect(MetricCatalog.unit(of: "latency.request_response.p999") == .time)
        #expect(MetricCatalog.unit(of: "latency.pingresp.p99") == .time)
        #expect(MetricCatalog.unit(of: "delivery.qos2.reordered") == .number)
        #expect(MetricCatalog.unit(of: "connections.peak_connected") == .number)
        #expect(MetricCatalog.unit(of: "delivery.qos3.lost") == nil)
        #expect(MetricCatalog.metric("latency.connack.p99")?.report == "latency_ms.connect.p99")
        #expect(MetricCatalog.metric("latency.end_to_end_actual.p50")?.report == "latency_ms.end_to_end.from_sent.p50")
        #expect(MetricCatalog.metric(reportKey: "connections.failed_by_reason.refused")?.path == "connections.failed_by_reason.*")
        #expect(MetricCatalog.metric(reportKey: "generator.dropped_slots")?.path == "generator.dropped")
    }

    @Test("a metric no run produces is refused with the reason", arguments: [
        ("messages.qos0.acked == 0", "column 1: no run produces messages.qos0.acked: QoS 0 publishes are never acknowledged; did you mean 'messages.qos1.acked'?"),
        ("latency.unsuback.p99 < 5ms", "column 1: no run produces latency.unsuback.p99: fleetbench never unsubscribes; did you mean 'latency.suback.p99'?"),
        ("  ack_timeouts.unsuback == 0", "column 3: no run produces ack_timeouts.unsuback: fleetbench never unsubscribes; did you mean 'ack_timeouts.suback'?"),
        ("generator.send_path == 1", "column 1: unknown metric 'generator.send_path'; see the metric table in scenarios/README.md"),
    ])
    func refusesUnproducible(text: String, message: String) {
        guard case .failure(let failure) = Threshold.parse(text) else {
            Issue.record("expected '\(text)' to fail")
            return
        }
        #expect(failure.description == message)
    }
}
