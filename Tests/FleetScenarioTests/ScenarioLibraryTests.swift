import Testing
@testable import FleetScenario

/// The folder of library scenarios, found from this file's location (Tests/FleetScenarioTests/ -> scenarios/).
let scenariosFolder: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/") + "/scenarios"
}()

@Suite("The scenario library in scenarios/")
struct ScenarioLibraryTests {
    static let files = [
        "quickstart.json", "vehicle-telemetry.json", "command-and-control.json", "chat-room.json",
        "ota-broadcast.json", "tunnel-reconnect-storm.json", "connection-soak.json", "city-commute.json",
    ]

    @Test("every library scenario decodes without errors and has a description", arguments: files)
    func decodes(file: String) throws {
        let scenario = try Scenario.load(path: scenariosFolder + "/" + file)
        #expect(scenario.name + ".json" == file)
        #expect(!scenario.description.isEmpty)
        #expect(!scenario.fleets.isEmpty)
        #expect(!scenario.thresholds.isEmpty)
    }

    @Test("city-commute: the shipped route with its tunnel, one identity per car, offline buffering; validate says so")
    func cityCommute() throws {
        let scenario = try Scenario.load(path: scenariosFolder + "/city-commute.json")
        let commuters = scenario.fleets[0]
        #expect(commuters.vehicle?.route == .geoJSON(path: scenariosFolder + "/routes/munich.geojson"))
        #expect((commuters.vehicle?.network?.tunnelLength ?? 0) > 1_000)
        #expect(commuters.identities?.records.count == commuters.count)
        #expect(Set(commuters.identities?.records.map(\.username) ?? []).count == commuters.count)
        #expect(commuters.publishes[0].offline == OfflineBuffering(buffer: 300, overflow: .dropOldest))
        #expect(scenario.usesEmbeddedBroker)
        let plan = ScenarioPlan(scenario).render()
        #expect(plan.contains("    vehicle: \(scenariosFolder)/routes/munich.geojson (15.2 km of road, 1.1 km in tunnels)"), "\(plan)")
        #expect(plan.contains("    identities: \(scenariosFolder)/identities/city-commute.csv (200 rows, 200 used)"), "\(plan)")
        #expect(plan.contains("; offline buffer 300, drop_oldest"), "\(plan)")
    }

    @Test("quickstart finishes within 15 seconds and stays small")
    func quickstartIsSmall() throws {
        let scenario = try Scenario.load(path: scenariosFolder + "/quickstart.json")
        #expect(scenario.duration == .seconds(10))
        #expect(scenario.fleets.reduce(0) { $0 + $1.count } == 11)
        #expect(scenario.usesEmbeddedBroker)
    }

    @Test("the WebSocket variant of vehicle-telemetry is one --set away")
    func vehicleTelemetryWebSocket() throws {
        let scenario = try Scenario.load(path: scenariosFolder + "/vehicle-telemetry.json",
                                         overrides: ["fleets.vehicles.transport=ws"])
        #expect(scenario.fleets[0].transport == .webSocket)
        #expect(scenario.fleets[0].will?.retain == true)
        #expect(scenario.fleets[0].subscriptions.map(\.filter.source) == ["vehicles/{client_id}/cmd"])
    }

    @Test("tunnel-reconnect-storm uses 5 immediate retries then every 4 s with persistent sessions")
    func tunnelStormPolicy() throws {
        let scenario = try Scenario.load(path: scenariosFolder + "/tunnel-reconnect-storm.json")
        let vehicles = scenario.fleets[0]
        #expect(vehicles.reconnect == .immediateThenInterval(immediate: 5, interval: .seconds(4), maxAttempts: nil))
        #expect(vehicles.cleanStart == false)
        #expect(scenario.stages[3].kind == .tunnel(fleet: "vehicles", fraction: 0.3, outage: .seconds(5)...(.seconds(20))))
        // 1 s + 2000 clients at 500/s (4 s) + 15 s + 40 s + 30 s.
        #expect(scenario.duration == .seconds(90))
    }
}
