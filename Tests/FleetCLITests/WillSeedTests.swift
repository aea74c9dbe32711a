import FleetEngine
import FleetScenario
import FleetTransport
import MQTTCodec
import Testing
@testable import FleetCLI

@Suite("scenario mapping: will payloads follow the run's seed")
struct WillSeedTests {
    static func willPayloads(seed: UInt64) throws -> [String] {
        let scenario = try Scenario.load(path: "scenarios/vehicle-telemetry.json", overrides: [
            #"fleets.vehicles.will.payload={"json": {"vehicle": "{client_id}", "token": "{uuid}", "n": "{rand:0..1000000}"}}"#,
        ])
        let configuration = try ScenarioMapping.engineConfiguration(
            scenario, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1883)], seed: seed)
        let fleet = try #require(configuration.fleets.first { $0.name == "vehicles" })
        let perClient = try #require(fleet.sessionSettings)
        return (0..<3).map { index in
            let will = perClient(index, fleet.clientID(index)).will
            return String(decoding: will?.payload ?? [], as: UTF8.self)
        }
    }

    @Test("the same seed gives the same will payloads; another seed other ones; each client its own")
    func seeded() throws {
        let first = try Self.willPayloads(seed: 7)
        #expect(try Self.willPayloads(seed: 7) == first)
        #expect(try Self.willPayloads(seed: 8) != first)
        #expect(Set(first).count == 3)
        #expect(first.allSatisfy { $0.hasPrefix(#"{"vehicle":""#) && $0.contains(#""token":""#) })
    }
}
