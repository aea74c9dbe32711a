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
