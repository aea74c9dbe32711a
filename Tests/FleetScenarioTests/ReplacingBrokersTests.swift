import Testing
@testable import FleetScenario

@Suite("--broker replacing the scenario's brokers")
struct ReplacingBrokersTests {
    @Test("valid URLs replace the brokers")
    func replaces() throws {
        let scenario = try decodeFixture(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1}]}"#).get()
        let replaced = try scenario.replacingBrokers(with: ["mqtt://10.0.0.1", "wss://h:8443/ws"]).get()
        #expect(replaced.brokers.map(\.port) == [1883, 8443])
        #expect(replaced.brokers[1].webSocket?.path == "/ws")
        #expect(replaced.brokers[1].tls == TLSOptions())
        #expect(!replaced.usesEmbeddedBroker)
    }

    @Test("bad URLs, restart stages and unmatched transports are reported against --broker")
    func rejects() throws {
        let scenario = try decodeFixture("""
            {"fleets": [{"name": "a", "count": 1, "transport": "ws"}], "stages": [{"type": "restart", "duration": "5s"}]}
            """).get()
        guard case .failure(let error) = scenario.replacingBrokers(with: ["mqtt://h", "http://x"]) else {
            Issue.record("expected failure")
            return
        }
        #expect(error.description == """
            --broker http://x: brokers[1]: unsupported scheme 'http'; expected mqtt, mqtts, ws or wss
            --broker mqtt://h,http://x: stages[0].type: a broker restart needs the embedded broker; drop --broker to use it
            --broker mqtt://h,http://x: fleets[0].transport: no broker with a ws:// URL for this fleet; brokers are: mqtt://h
            """)
    }
}
