import FleetMetrics
import Testing
@testable import FleetScenario

/// Thresholds on metrics the scenario's runs cannot produce (they would fail every run "not observed") are
/// refused when the scenario is read, at the threshold's position.
@Suite("Thresholds a run of the scenario can produce")
struct ThresholdProducibleTests {
    static let fixture = """
        {
          "duration": "10s",
          "brokers": ["mqtt://127.0.0.1:1883"],
          "fleets": [
            {"name": "cars", "count": 2,
             "publish": [{"topic": "t/{client_id}", "qos": 0, "schedule": {"type": "rate", "per_second": 1}, "payload": "x"}]}
          ],
          "thresholds": [
            "latency.puback.p99 < 5ms",
            "latency.pingresp.p99 < 5ms",
            "latency.tls_handshake.max < 1s",
            "latency.end_to_end.p99 < 50ms",
            "rates.arrived > 0",
            "messages.qos0.acked == 0",
            "delivery.qos0.lost == 0",
            "latency.connack.p99 < 1s"
          ]
        }
        """

    @Test("each unproducible threshold is an error with file:line:column and what the metric needs")
    func refused() {
        #expect(errorText(Self.fixture) == """
            t.json:9:6: thresholds[0]: no run of this scenario produces latency.puback.p99: it needs a fleet that publishes at QoS 1
            t.json:10:6: thresholds[1]: no run of this scenario produces latency.pingresp.p99: it needs a fleet whose keepalive is on and shorter than the run (an idle client then pings)
            t.json:11:6: thresholds[2]: no run of this scenario produces latency.tls_handshake.max: it needs a TLS broker or fleet (mqtts://, wss://, "transport": "mqtts")
            t.json:12:6: thresholds[3]: no run of this scenario produces latency.end_to_end.p99: it needs a fleet that publishes and a fleet that subscribes
            t.json:13:6: thresholds[4]: no run of this scenario produces rates.arrived: it needs a fleet that subscribes
            t.json:14:6: thresholds[5]: no run produces messages.qos0.acked: QoS 0 publishes are never acknowledged; did you mean 'messages.qos1.acked'?
            """)
    }

    @Test("the same thresholds are accepted once the scenario does what they need")
    func accepted() throws {
        let producing = Self.fixture
            .replacingOccurrences(of: #""qos": 0"#, with: #""qos": 1"#)
            .replacingOccurrences(of: "mqtt://127.0.0.1:1883", with: "mqtts://127.0.0.1:8883")
            .replacingOccurrences(of: #""count": 2,"#, with: #""count": 2, "keepalive": "5s", "subscriptions": ["t/#"],"#)
            .replacingOccurrences(of: #""messages.qos0.acked == 0","#, with: #""messages.qos1.acked > 0","#)
        let scenario = try decodeFixture(producing).get()
        #expect(scenario.thresholds.count == 8)
        #expect(scenario.activities == [.publishes, .qos1Publishes, .subscribes, .deliveries, .tls, .keepAlive])
    }

    @Test("without brokers of its own a scenario may be run against TLS or WebSocket brokers (--broker)")
    func embeddedAllowsTransports() throws {
        let scenario = try decodeFixture("""
            {"duration": "5s", "fleets": [{"name": "idle", "count": 1}],
             "thresholds": ["latency.tls_handshake.p99 < 1s", "latency.ws_upgrade.p99 < 1s"]}
            """).get()
        #expect(scenario.activities == [.tls, .webSocket])
    }
}
