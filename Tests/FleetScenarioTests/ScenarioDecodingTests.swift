import FleetJSON
import MQTTCodec
import Testing
@testable import FleetScenario

@Suite("Decoding scenarios")
struct ScenarioDecodingTests {
    static let fullFixture = """
        {
          "name": "fixture",
          "description": "all the keys",
          "duration": "1m30s",
          "seed": 42,
          "brokers": [
            "mqtt://127.0.0.1:1883",
            {
              "url": "wss://broker.example.com/mqtt-ws",
              "tls": {"ca_file": "ca.pem", "alpn": ["mqtt"], "sni": "edge.example.com"},
              "websocket": {"subprotocol": "mqttv3.1", "headers": {"X-Tenant": "acme"}}
            }
          ],
          "fleets": [
            {
              "name": "cars", "count": 3, "client_id": "car-{i:03}", "protocol": "5", "keepalive": "2s",
              "clean_start": false, "session_expiry": "1h",
              "will": {"topic": "cars/{client_id}/status", "payload": "offline", "qos": 1, "retain": true, "delay": "5s",
                       "properties": {"content_type": "text/plain", "user_properties": {"k": "v"}}},
              "credentials": {"username": "car-${FB_USER}", "password": "${FB_PASS}"},
              "tls": {"client_cert": "certs/{client_id}.pem", "client_key": "certs/{client_id}.key"},
              "source_addresses": ["127.0.0.2-127.0.0.4", "::1"],
              "connect_rate": 50, "max_connects_in_flight": 10,
              "reconnect": {"type": "exponential", "base": "100ms", "cap": "5s", "max_attempts": 7},
              "ack_timeouts": {"puback": "2s", "connect": "3s"},
              "inflight_window": 8,
              "subscriptions": ["cars/{client_id}/cmd", {"filter": "broadcast/#", "qos": 2, "no_local": true, "retain_handling": 2}],
              "publish": [{"topic": "cars/{client_id}/t", "qos": 1, "schedule": {"type": "rate", "per_second": 2},
                           "payload": {"size": 64}, "behind_schedule": "drop", "limit": 100}],
              "heartbeat": {"topic": "cars/{client_id}/online", "interval": "30s", "payload": {"text": "{client_id} online"}}
            }
          ],
          "stages": [
            {"type": "ramp_up", "fleet": "cars", "over": "10s"},
            {"type": "steady", "duration": "20s"},
            {"type": "churn", "fleet": "cars", "rate": 0.5, "duration": "30s"}
          ],
          "thresholds": ["latency.end_to_end.p99 < 50ms", "connections.failed_ratio < 0.1%"]
        }
        """

    @Test("a fixture using most keys decodes to exact values")
    func fullFixtureDecodes() throws {
        let scenario = try decodeFixture(Self.fullFixture, environment: ["FB_USER": "alice", "FB_PASS": "s3cret"]).get()
        #expect(scenario.name == "fixture")
        #expect(scenario.description == "all the keys")
        #expect(scenario.duration == .seconds(90))
        #expect(scenario.seed == 42)
        #expect(scenario.brokers == [
            BrokerEndpoint(url: "mqtt://127.0.0.1:1883", transport: .tcp, host: "127.0.0.1", port: 1883, tls: nil, webSocket: nil),
            BrokerEndpoint(
                url: "wss://broker.example.com/mqtt-ws", transport: .secureWebSocket, host: "broker.example.com", port: 443,
                tls: TLSOptions(caFile: "ca.pem", insecureSkipVerify: false, clientCertificate: nil, clientKey: nil,
                                alpn: ["mqtt"], serverName: "edge.example.com"),
                webSocket: WebSocketOptions(path: "/mqtt-ws", subprotocol: "mqttv3.1", headers: [HTTPHeader(name: "X-Tenant", value: "acme")])),
        ])
        var expected = Fleet(name: "cars", count: 3, clientID: pattern("car-{i:03}"))
        expected.protocolVersion = .v5
        expected.keepalive = .seconds(2)
        expected.cleanStart = false
        expected.sessionExpiry = .seconds(3600)
        expected.will = Will(
            topic: pattern("cars/{client_id}/status"),
            payload: PayloadTemplate(segments: [.literal(Array("offline".utf8))], isJSON: false),
            qos: .atLeastOnce, retain: true, delay: .seconds(5),
            properties: WillProperties(contentType: "text/plain", userProperties: [HTTPHeader(name: "k", value: "v")]))
        expected.credentials = Credentials(
            username: SecretText(resolved: "car-alice", redacted: "car-${FB_USER}"),
            password: SecretText(resolved: "s3cret", redacted: "${FB_PASS}"))
        expected.clientCertificate = pattern("certs/{client_id}.pem")
        expected.clientKey = pattern("certs/{client_id}.key")
        expected.sourceAddresses = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "::1"]
        expected.connectRate = 50
        expected.maxConnectsInFlight = 10
        expected.reconnect = .exponential(base: .milliseconds(100), cap: .seconds(5), maxAttempts: 7)
        expected.ackTimeouts.puback = .seconds(2)
        expected.ackTimeouts.connect = .seconds(3)
        expected.inflightWindow = 8
        expected.subscriptions = [
            Subscription(filter: pattern("cars/{client_id}/cmd")),
            Subscription(filter: pattern("broadcast/#"), qos: .exactlyOnce, noLocal: true, retainAsPublished: false, retainHandling: 2),
        ]
        expected.publishes = [
            PublishStream(name: "cars.publish[0]", topic: pattern("cars/{client_id}/t"), qos: .atLeastOnce, retain: false,
                          schedule: .rate(perSecond: 2), payload: .filler(size: 64), behindSchedule: .drop, limit: 100),
        ]
        expected.heartbeat = Heartbeat(
            topic: pattern("cars/{client_id}/online"), interval: .seconds(30),
            payload: .template(PayloadTemplate(segments: [.generator(.clientID, inJSONString: false), .literal(Array(" online".utf8))], isJSON: false)))
        #expect(scenario.fleets == [expected])
        #expect(scenario.stages == [
            Stage(kind: .rampUp(fleet: "cars", rate: nil), duration: .seconds(10)),
            Stage(kind: .steady, duration: .seconds(20)),
            Stage(kind: .churn(fleet: "cars", rate: 0.5), duration: .seconds(30)),
        ])
        #expect(scenario.thresholds.map { $0.metric } == ["latency.end_to_end.p99", "connections.failed_ratio"])
        #expect(scenario.thresholds.map { $0.value } == [50_000_000, 0.001])
    }

    @Test("credentials print only their redacted form")
    func credentialsRedacted() throws {
        let scenario = try decodeFixture(Self.fullFixture, environment: ["FB_USER": "alice", "FB_PASS": "s3cret"]).get()
        let password = try #require(scenario.fleets[0].credentials?.password)
        #expect("\(password)" == "${FB_PASS}")
        #expect(!String(describing: scenario).contains("s3cret"))
        let literal = try decodeFixture(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "credentials": {"password": "hunter2"}}]}"#).get()
        #expect(literal.fleets[0].credentials?.password?.redacted == "********")
        #expect(literal.fleets[0].credentials?.password?.resolved == "hunter2")
    }

    @Test("a missing environment variable is an error at its place in the string")
    func missingEnvironment() {
        #expect(errorText(Self.fullFixture, environment: ["FB_USER": "alice"])
            == "t.json:20:66: fleets[0].credentials.password: environment variable 'FB_PASS' is not set")
    }

    static let brokenFixture = """
        {
          "description": "broken",
          "duraton": "30s",
          "fleets": [
            {
              "name": "cars",
              "count": "5",
              "client_id": "car-{id}",
              "protocol": "5.0",
              "keepalive": 30,
              "clean_session": true,
              "publish": [
                {"topic": "cars/+/t", "qos": 3, "schedule": {"type": "interval", "every": "1 s"}, "payload": {"json": {"v": "{rnd:0..9}"}}}
              ]
            }
          ],
          "thresholds": ["latency.end_to_end.p99 < 50", "delivery.qos1.lots == 0"]
        }
        """

    @Test("every error of a file is reported at once, in file order, with line, column and path")
    func allErrorsAtOnce() {
        #expect(errorText(Self.brokenFixture) == """
            t.json:1:1: $: missing required key 'duration' (a duration such as "30s"; or give stages)
            t.json:3:3: duraton: unknown key 'duraton'; did you mean 'duration'?
            t.json:7:16: fleets[0].count: expected an integer from 1 to 10000000, got string "5"
            t.json:8:25: fleets[0].client_id: unknown placeholder '{id}'; did you mean '{i}'?
            t.json:9:19: fleets[0].protocol: expected one of "3.1", "3.1.1", "5" (or the number 3.1, 4 or 5), got string "5.0"
            t.json:10:20: fleets[0].keepalive: expected a duration such as "250ms", "30s" or "5m", got integer 30
            t.json:13:25: fleets[0].publish[0].topic: a topic to publish to cannot contain the wildcards + or #
            t.json:13:38: fleets[0].publish[0].qos: expected a QoS of 0, 1 or 2, got integer 3
            t.json:13:83: fleets[0].publish[0].schedule.every: expected a duration such as "250ms", "30s" or "5m", got string "1 s" (missing unit after '1')
            t.json:13:118: fleets[0].publish[0].payload.json.v: unknown generator '{rnd}'; did you mean '{rand}'?
            t.json:17:46: thresholds[0]: latency.end_to_end.p99 is a time; add a unit (ns, us, ms, s, m, h), e.g. 50ms
            t.json:17:50: thresholds[1]: unknown metric 'delivery.qos1.lots'; did you mean 'delivery.qos1.lost'?
            """)
    }

    @Test("invalid fixtures give their exact message", arguments: [
        (#"[1]"#, "t.json:1:1: $: expected a scenario object, got array"),
        (#"{"duration": "1s", "fleets": []}"#, "t.json:1:30: fleets: expected at least one fleet, got an empty array"),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 2, "client_id": "same"}]}"#,
         "t.json:1:70: fleets[0].client_id: with count 2 the client_id pattern must contain {i} so client ids are unique"),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 1}, {"name": "a", "count": 1}]}"#,
         "t.json:1:67: fleets[1].name: duplicate fleet name 'a'"),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "qos": 1}]}"#,
         "t.json:1:57: fleets[0].qos: unknown key 'qos'; expected one of: name, count, client_id, protocol, transport, keepalive, clean_session, clean_start, session_expiry, will, credentials, tls, source_addresses, connect_rate, max_connects_in_flight, reconnect, ack_timeouts, inflight_window, subscriptions, publish, requests, respond, heartbeat, vehicle, identities, network"),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "protocol": "3.1.1", "clean_start": true}]}"#,
         "t.json:1:78: fleets[0].clean_start: clean_start is MQTT 5; with protocol \"3.1.1\" use clean_session"),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "subscriptions": [{"filter": "a/#/b", "no_local": true}]}]}"#,
         "t.json:1:89: fleets[0].subscriptions[0].filter: '#' must be a whole level and the last one\nt.json:1:95: fleets[0].subscriptions[0].no_local: no_local is an MQTT 5 subscription option; it needs protocol \"5\""),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 1}], "brokers": ["tcp://h:1883", "mqtt://h:0", "ws://:80"]}"#,
         "t.json:1:71: brokers[0]: unsupported scheme 'tcp'; expected mqtt, mqtts, ws or wss\nt.json:1:87: brokers[1]: invalid port '0'; expected 1 to 65535\nt.json:1:101: brokers[2]: missing host in 'ws://:80'"),
        (#"{"duration": "5s", "brokers": ["mqtt://h"], "fleets": [{"name": "a", "count": 1}], "stages": [{"type": "restart", "duration": "5s"}]}"#,
         "t.json:1:104: stages[0].type: a broker restart needs the embedded broker; this scenario names brokers"),
        (#"{"fleets": [{"name": "a", "count": 1}], "stages": [{"type": "tunnel", "fleet": "b", "fraction": 1.5, "outage": ["9s", "2s"], "duration": "5s"}]}"#,
         "t.json:1:80: stages[0].fleet: no fleet named 'b'\nt.json:1:97: stages[0].fraction: expected a fraction from 0 to 1 or a percentage such as \"20%\", got number 1.5\nt.json:1:112: stages[0].outage: the outage range must be [shortest, longest], got [9s, 2s]"),
        (#"{"fleets": [{"name": "a", "count": 1}], "stages": [{"type": "tunnel", "fleet": "a", "fraction": 0.5, "outage": "3s", "duration": "5s"}]}"#,
         "t.json:1:80: stages[0].fleet: fleet 'a' has reconnect \"none\", so cut clients would never come back; give it a reconnect policy"),
        (#"{"duration": "5s", "fleets": [{"name": "a", "count": 1}], "stages": [{"type": "steady", "duration": "10s"}]}"#,
         "t.json:1:14: duration: the stages last 10s, longer than the duration 5s"),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "reconnect": {"type": "exponentail", "base": "1s"}}]}"#,
         "t.json:1:79: fleets[0].reconnect.type: expected one of \"none\", \"immediate_then_interval\", \"exponential\", got string \"exponentail\"; did you mean 'exponential'?"),
        (#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "publish": [{"topic": "t", "schedule": {"type": "rate"}, "payload": {"text": "x", "size": 3}}]}]}"#,
         "t.json:1:96: fleets[0].publish[0].schedule: missing required key 'per_second' (messages per second per client)\nt.json:1:125: fleets[0].publish[0].payload: a payload takes only one of \"text\", \"size\", \"json\"; found \"text\" and \"size\""),
        (#"{"duration": "1s", "fleets": [{"name": "b", "count": 1, "requests": [{"target_fleet": "a", "topic": "x/{target_client_id}", "schedule": {"type": "on_connect"}, "payload": "go", "response_topic": "r/+"}]}, {"name": "a", "count": 1, "respond": {"topic": "x/{client_id}"}}]}"#,
         "t.json:1:70: fleets[0].requests[0]: an MQTT 3.1.1 requester has no Response Topic; give fleet 'a' a respond.reply_topic"),
        ("{\"duration\": \"1s\",\n \"fleets\": [{\"name\": \"a\", \"count\": 1}],\n \"duration\": \"2s\"}",
         "t.json:3:2: duplicate key 'duration' (each key may appear only once in an object)"),
    ])
    func invalidFixtures(text: String, expected: String) {
        #expect(errorText(text) == expected)
    }

    @Test("a library-style fixture without a name takes the default name and the embedded broker")
    func defaults() throws {
        let scenario = try decodeFixture(#"{"duration": "30s", "fleets": [{"name": "a", "count": 2}]}"#).get()
        #expect(scenario.name == "t")
        #expect(scenario.usesEmbeddedBroker)
        let fleet = scenario.fleets[0]
        #expect(fleet.clientID.render(index: 1, fleet: "a") == "a-1")
        #expect(fleet.protocolVersion == MQTTProtocolVersion.v3_1_1)
        #expect(fleet.keepalive == .seconds(60))
        #expect(fleet.cleanStart)
        #expect(fleet.reconnect == .none)
        #expect(fleet.ackTimeouts.connect == .seconds(12))
        #expect(fleet.ackTimeouts.connack == .seconds(12))
        #expect(fleet.ackTimeouts.puback == .seconds(15))
        #expect(fleet.ackTimeouts.pingresp == .seconds(15))
        #expect(fleet.inflightWindow == 32)
    }

    @Test("ramp-up at a rate lasts as long as connecting the fleet takes")
    func rampAtRate() throws {
        let scenario = try decodeFixture(#"{"fleets": [{"name": "a", "count": 2500}], "stages": [{"type": "ramp_up", "rate": 1000}]}"#).get()
        #expect(scenario.stages == [Stage(kind: .rampUp(fleet: nil, rate: 1000), duration: .seconds(3))])
        #expect(scenario.duration == .seconds(3))
    }
}

@Suite("Redacting scenarios for reports")
struct ScenarioRedactionTests {
    @Test("literal passwords are masked, variable references and everything else kept")
    func redacts() throws {
        let document = try JSONDocument.parse(text: """
            {"fleets": [{"name": "a", "credentials": {"username": "u", "password": "hunter2"}},
                        {"name": "b", "credentials": {"password": "${FB_PASS}"}},
                        {"name": "c", "credentials": {"password": "x${FB_PASS}"}}]}
            """, file: "t")
        #expect(JSONWriter.string(from: ScenarioRedaction.redact(document.root), style: .compact)
            == #"{"fleets":[{"name":"a","credentials":{"username":"u","password":"********"}},{"name":"b","credentials":{"password":"${FB_PASS}"}},{"name":"c","credentials":{"password":"********"}}]}"#)
    }

    @Test("protocol given unquoted on the command line: --set ...protocol=3.1, =4 (MQTT's level for 3.1.1), =5", arguments: [
        ("3.1", MQTTProtocolVersion.v3_1), ("4", .v3_1_1), ("5", .v5), ("3.1.1", .v3_1_1), ("\"3.1\"", .v3_1), ("5.0", .v5),
    ])
    func protocolFromSet(value: String, version: MQTTProtocolVersion) throws {
        let scenario = try decodeFixture(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "protocol": "3.1.1"}]}"#,
                                         overrides: ["fleets.a.protocol=" + value]).get()
        #expect(scenario.fleets[0].protocolVersion == version)
    }

    @Test("protocol as a JSON number in a file: 3.1, 4 and 5", arguments: [
        ("3.1", MQTTProtocolVersion.v3_1), ("4", .v3_1_1), ("5", .v5), ("\"4\"", .v3_1_1),
    ])
    func protocolNumberInFile(value: String, version: MQTTProtocolVersion) throws {
        let scenario = try decodeFixture(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "protocol": "# + value + "}]}").get()
        #expect(scenario.fleets[0].protocolVersion == version)
    }

    @Test("a protocol number that is no MQTT version is refused, naming the accepted spellings")
    func protocolNumberRefused() {
        #expect(errorText(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "protocol": 3}]}"#)
            == #"t.json:1:69: fleets[0].protocol: expected one of "3.1", "3.1.1", "5" (or the number 3.1, 4 or 5), got integer 3; 3 is ambiguous: "3.1" (protocol level 3, what the one-liners' -V 3 means) or "3.1.1" (level 4)?"#)
        #expect(errorText(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1}]}"#, overrides: ["fleets.a.protocol=3"])
            == #"--set fleets.a.protocol=3: fleets[0].protocol: expected one of "3.1", "3.1.1", "5" (or the number 3.1, 4 or 5), got integer 3; 3 is ambiguous: "3.1" (protocol level 3, what the one-liners' -V 3 means) or "3.1.1" (level 4)?"#)
        #expect(errorText(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1}]}"#, overrides: ["fleets.a.protocol=3.11"])
            == #"--set fleets.a.protocol=3.11: fleets[0].protocol: expected one of "3.1", "3.1.1", "5" (or the number 3.1, 4 or 5), got number 3.11"#)
    }

    @Test("a --set value that reads as a number or boolean is taken as the text typed where the key expects a string")
    func setCoercedToString() throws {
        let fixture = #"{"duration": "1s", "fleets": [{"name": "a", "count": 1, "publish": [{"topic": "t", "schedule": {"type": "interval", "every": "1s"}, "payload": {"json": {"v": 1}}}]}]}"#
        let scenario = try decodeFixture(fixture, overrides: ["name=2024", "description=true", "fleets.a.publish.0.topic=42"]).get()
        #expect(scenario.name == "2024")
        #expect(scenario.description == "true")
        #expect(scenario.fleets[0].publishes[0].topic.source == "42")
        // In a file, a number where a string belongs is still an error: only the command line has no quotes to spare.
        #expect(errorText(#"{"name": 2024, "duration": "1s", "fleets": [{"name": "a", "count": 1}]}"#)
            == #"t.json:1:10: name: expected a string, got integer 2024"#)
        // A number where a number belongs is untouched.
        #expect(try decodeFixture(fixture, overrides: ["fleets.a.count=7"]).get().fleets[0].count == 7)
    }

    @Test("protocol 5 may be given as a number, as --set produces")
    func protocolNumber() throws {
        let scenario = try decodeFixture(#"{"duration": "1s", "fleets": [{"name": "a", "count": 1}]}"#,
                                         overrides: ["fleets.a.protocol=5", "fleets.a.clean_start=false"]).get()
        #expect(scenario.fleets[0].protocolVersion == .v5)
        #expect(scenario.fleets[0].cleanStart == false)
    }
}
