import FleetJSON
import Testing
@testable import FleetScenario

/// The fleet key `network`: presets, objects, overrides of a preset, and errors with file:line:column.
@Suite("Scenario network conditions")
struct NetworkConditionsTests {
    static func fleet(_ network: String) -> String {
        #"{"duration": "1s", "fleets": [{"name": "a", "count": 10, "network": "# + network + "}]}"
    }

    static func decoded(_ network: String) throws -> NetworkConditions? {
        try decodeFixture(Self.fleet(network)).get().fleets[0].network
    }

    @Test("every preset parses by name and carries its figures", arguments: NetworkConditions.presetNames)
    func presets(name: String) throws {
        let network = try #require(try Self.decoded("\"\(name)\""))
        #expect(network == NetworkConditions.presets[name])
        #expect(network.name == name)
        #expect(network.preset == name)
        guard case .distribution(let p50, let p99) = network.latencyUp else {
            Issue.record("preset \(name) has a fixed latency")
            return
        }
        #expect(p50 < p99)
        #expect(network.bandwidthUp != nil && network.bandwidthDown != nil)
        #expect(network.loss != nil)
    }

    @Test("the lte preset: one-way p50 30 ms, p99 120 ms, 5/17 Mbit, 0.5 % loss in bursts of 3, a drop every 2 h")
    func lteFigures() throws {
        let lte = try #require(NetworkConditions.presets["lte"])
        #expect(lte.summary == "latency p50 30ms, p99 120ms each way; bandwidth up 5Mbit, down 17Mbit; loss 0.5% in bursts of 3, a link drop every 2h on average")
    }

    @Test("an object: latency as a distribution, jitter, bandwidth, loss, outages and a fraction")
    func object() throws {
        let network = try #require(try Self.decoded("""
            {"fraction": "25%", "latency_up": {"p50": "45ms", "p99": "180ms"}, "latency_down": "20ms", "jitter": "5ms",
             "bandwidth_up": "256kbit", "bandwidth_down": "2Mbit",
             "loss": {"rate": 0.02, "burst": 3, "drop_interval": "30m"},
             "outages": {"every": "10m", "duration": ["5s", "30s"]}}
            """))
        var expected = NetworkConditions()
        expected.fraction = 0.25
        expected.latencyUp = .distribution(p50: .milliseconds(45), p99: .milliseconds(180))
        expected.latencyDown = .fixed(.milliseconds(20))
        expected.jitter = .milliseconds(5)
        expected.bandwidthUp = 256_000
        expected.bandwidthDown = 2_000_000
        expected.loss = NetworkConditions.Loss(rate: 0.02, burst: 3, dropInterval: .seconds(1800))
        expected.outages = NetworkConditions.Outages(meanInterval: .seconds(600), minimum: .seconds(5), maximum: .seconds(30))
        #expect(network == expected)
        #expect(network.name == "custom")
    }

    @Test("a preset with keys changed is named with a +; only the changed figures differ")
    func presetOverride() throws {
        let network = try #require(try Self.decoded(#"{"preset": "nb-iot", "fraction": 0.5, "bandwidth_up": "9600bit"}"#))
        var expected = try #require(NetworkConditions.presets["nb-iot"])
        expected.fraction = 0.5
        expected.bandwidthUp = 9600
        #expect(network == expected)
        #expect(network.name == "nb-iot+")
        let onlyFraction = try #require(try Self.decoded(#"{"preset": "lte", "fraction": 0.5}"#))
        #expect(onlyFraction.name == "lte")
    }

    @Test("validate's plan names each fleet's link and how many clients are on it")
    func plan() throws {
        let scenario = try decodeFixture(Self.fleet(#"{"preset": "nb-iot", "fraction": "30%"}"#)).get()
        let text = ScenarioPlan(scenario).render()
        #expect(text.contains("\n    network nb-iot on 3 clients (latency p50 800ms, p99 5s each way; bandwidth up 20kbit, down 20kbit; loss 2% in bursts of 3, a link drop every 30m on average)"), "\(text)")
    }

    @Test("rates: units from bit to Gbit")
    func rates() {
        #expect(NetworkConditions.parseRate("256kbit") == 256_000)
        #expect(NetworkConditions.parseRate("1.5Mbit") == 1_500_000)
        #expect(NetworkConditions.parseRate("1Gbit") == 1_000_000_000)
        #expect(NetworkConditions.parseRate("20Mbps") == 20_000_000)
        #expect(NetworkConditions.parseRate("9600bit") == 9600)
        #expect(NetworkConditions.parseRate("256") == nil)
        #expect(NetworkConditions.parseRate("0kbit") == nil)
        #expect(NetworkConditions.parseRate("fastkbit") == nil)
    }

    @Test("several profiles: an array of objects, each with its fraction; the plan counts clients per profile")
    func severalProfiles() throws {
        let scenario = try decodeFixture(Self.fleet("""
            [{"preset": "lte", "fraction": 0.7}, {"preset": "nb-iot", "fraction": "30%", "jitter": "10ms"}]
            """)).get()
        let networks = scenario.fleets[0].networks
        #expect(networks.map(\.name) == ["lte", "nb-iot+"])
        #expect(networks.map(\.fraction) == [0.7, 0.3])
        #expect(networks[1].jitter == .milliseconds(10))
        #expect(scenario.fleets[0].network == networks[0])
        #expect(NetworkConditions.clientCounts(count: 10, profiles: networks) == [7, 3])
        #expect(NetworkConditions.clientCounts(count: 9, profiles: networks) == [6, 3])
        let plan = ScenarioPlan(scenario)
        #expect(plan.fleets[0].network == "lte on 7 clients (\(networks[0].summary)); nb-iot+ on 3 clients (\(networks[1].summary))")
        // One profile in an array is the same as the profile alone.
        let single = try decodeFixture(Self.fleet(#"["3g"]"#)).get().fleets[0].networks
        #expect(single == [NetworkConditions.presets["3g"]!])
    }

    @Test("several profiles: errors name the file, line and column", arguments: [
        (#"[{"preset": "lte", "fraction": 0.7}, {"preset": "nb-iot", "fraction": 0.4}]"#,
         "t.json:1:69: fleets[0].network: the network profiles' fractions add up to 1.1, more than the whole fleet (1)"),
        (#"[{"preset": "lte", "fraction": 0.7}, {"preset": "nb-iot"}]"#,
         #"t.json:1:106: fleets[0].network[1]: each of several network profiles needs its "fraction" of the fleet"#),
        (#"["lte", "nb-iot"]"#,
         #"t.json:1:70: fleets[0].network[0]: each of several network profiles needs its "fraction" of the fleet: write {"preset": ..., "fraction": ...}"#),
        ("[]", "t.json:1:69: fleets[0].network: a list of network profiles needs at least one profile"),
    ])
    func severalProfilesErrors(network: String, expected: String) {
        #expect(errorText(Self.fleet(network)) == expected)
    }

    @Test("bad values name the file, line and column", arguments: [
        (#""4g""#, #"t.json:1:69: fleets[0].network: expected one of "wifi", "lte", "3g", "edge", "lte-m", "nb-iot", "satellite", got string "4g"; did you mean '3g'?"#),
        (#"{"latency": {"p50": "90ms", "p99": "40ms"}}"#, "t.json:1:104: fleets[0].network.latency.p99: p99 (40ms) must be at least p50 (90ms)"),
        (#"{"bandwidth_up": 256000}"#, #"t.json:1:86: fleets[0].network.bandwidth_up: expected a bandwidth such as "256kbit", "2Mbit" or "1Gbit", got integer 256000"#),
        (#"{"loss": {"rate": 1.0}}"#, "t.json:1:87: fleets[0].network.loss.rate: a loss rate must be below 1 (100%): TCP would never get anything through"),
        (#"{"loss": {"rate": 0.1, "burst": 0.5}}"#, "t.json:1:101: fleets[0].network.loss.burst: expected a mean burst length of at least 1, got number 0.5"),
        (#"{"outages": {"every": "10m", "duration": ["30s", "5s"]}}"#, "t.json:1:118: fleets[0].network.outages.duration[1]: the longest outage (5s) must be at least the shortest (30s)"),
        (#"{"latncy": "10ms"}"#, "t.json:1:70: fleets[0].network.latncy: unknown key 'latncy'; did you mean 'latency'?"),
        (#"{"fraction": 2}"#, #"t.json:1:82: fleets[0].network.fraction: expected a fraction from 0 to 1 or a percentage such as "20%", got integer 2"#),
    ])
    func errors(network: String, expected: String) {
        #expect(errorText(Self.fleet(network)) == expected)
    }
}
