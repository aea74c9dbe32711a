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

    @Test("credentials in a broker URL are refused, and the password is not repeated in the message")
    func refusesCredentialsInURL() throws {
        let scenario = try decodeFixture(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1}]}"#).get()
        guard case .failure(let error) = scenario.replacingBrokers(with: ["mqtt://fleet:Secret-1@h", "mqtt://fleet:Secret-2@h:1883/"]) else {
            Issue.record("expected failure")
            return
        }
        let message = "a broker URL cannot carry credentials (user:password@host): they would show in reports and "
            + #"messages; give them in the fleet's "credentials", e.g. {"password": "${FB_PASS}"}"#
        #expect(error.description == """
            --broker mqtt://fleet:***@h: brokers[0]: \(message)
            --broker mqtt://fleet:***@h:1883/: brokers[1]: \(message)
            """)
        #expect(!error.description.contains("Secret"))
    }

    @Test("credentials in a scenario's broker URL are refused at their line, the password not repeated")
    func refusesCredentialsInScenarioURL() {
        let text = errorText(
            #"{"duration": "1s", "brokers": ["mqtt://u:Secret-3@broker.example"], "fleets": [{"name": "a", "count": 1}]}"#)
        #expect(text == "t.json:1:32: brokers[0]: a broker URL cannot carry credentials (user:password@host): they would "
            + #"show in reports and messages; give them in the fleet's "credentials", e.g. {"password": "${FB_PASS}"}"#)
    }
}
