import FleetJSON
import Testing
@testable import FleetScenario

@Suite("--set overrides")
struct ScenarioOverrideTests {
    static let base = #"{"duration": "10s", "fleets": [{"name": "vehicles", "count": 10}, {"name": "backend", "count": 1}]}"#

    @Test("overrides address arrays by name or index, parse JSON values and fall back to strings")
    func applies() throws {
        let scenario = try decodeFixture(Self.base, overrides: [
            "fleets.vehicles.count=5000", "duration=1m", "fleets.1.count=3", "seed=7",
            #"fleets.vehicles.reconnect={"type": "immediate_then_interval", "immediate": 5, "interval": "4s"}"#,
            "fleets.backend.client_id=backend-{i}",
        ]).get()
        #expect(scenario.fleets[0].count == 5000)
        #expect(scenario.duration == .seconds(60))
        #expect(scenario.fleets[1].count == 3)
        #expect(scenario.fleets[1].clientID.source == "backend-{i}")
        #expect(scenario.seed == 7)
        #expect(scenario.fleets[0].reconnect == .immediateThenInterval(immediate: 5, interval: .seconds(4), maxAttempts: nil))
    }

    @Test("bad overrides give the argument, the path and the reason", arguments: [
        ("fleets.vehicle.count=5", "--set fleets.vehicle.count=5: fleets.vehicle: no element named 'vehicle' in fleets; did you mean 'vehicles'?"),
        ("fleets.vehicles.count", "--set fleets.vehicles.count: $: expected path=value, e.g. fleets.vehicles.count=5000"),
        ("fleets..count=1", "--set fleets..count=1: $: expected a dotted path before '=', e.g. fleets.vehicles.count=5000"),
        ("duration.x=1", "--set duration.x=1: duration.x: duration is string \"10s\", not an object or array, so it has no 'x'"),
        ("flets.vehicles.count=1", "--set flets.vehicles.count=1: flets: no key 'flets' at $; did you mean 'fleets'?"),
        ("fleets.7.count=1", "--set fleets.7.count=1: fleets.7: no element named '7' in fleets (names: vehicles, backend)"),
        ("fleets.vehicles.count=abc", "--set fleets.vehicles.count=abc: fleets[0].count: expected an integer from 1 to 10000000, got string \"abc\""),
        ("fleets.vehicles.cont=5", "--set fleets.vehicles.cont=5: fleets[0].cont: unknown key 'cont'; did you mean 'count'?"),
    ])
    func rejects(argument: String, message: String) {
        #expect(errorText(Self.base, overrides: [argument]) == message)
    }

    @Test("file errors come first, then override errors")
    func ordering() {
        let text = #"{"duration": "10s", "fleets": [{"name": "vehicles", "count": 0}]}"#
        #expect(errorText(text, overrides: ["fleets.x.count=1"]) == """
            t.json:1:62: fleets[0].count: expected an integer from 1 to 10000000, got integer 0
            --set fleets.x.count=1: fleets.x: no element named 'x' in fleets (names: vehicles)
            """)
    }
}
