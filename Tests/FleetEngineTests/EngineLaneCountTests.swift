import FleetEngine
import FleetTransport
import MQTTSession
import Testing

@Suite("Engine: default lane count")
struct EngineLaneCountTests {
    static func configuration(brokers: [String], endpoints: [String] = []) throws -> EngineConfiguration {
        var fleet = EngineFleet(name: "f", count: 1, clientID: { "c\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 60))
        fleet.endpoints = try endpoints.map { EngineBrokerEndpoint(address: try SocketAddress(ipAddress: $0, port: 8883)) }
        return EngineConfiguration(fleets: [fleet], brokers: try brokers.map { try SocketAddress(ipAddress: $0, port: 1883) })
    }

    @Test(
        "one lane per core, one fewer (at least one) when every broker address is on this machine",
        arguments: [
            (["127.0.0.1"], [], 2, 1),
            (["127.0.0.1"], [], 8, 7),
            (["127.0.0.1"], [], 1, 1),
            (["::1", "127.0.0.2"], [], 4, 3),
            (["10.0.0.1"], [], 2, 2),
            (["127.0.0.1", "10.0.0.1"], [], 4, 4),
            (["127.0.0.1"], ["10.0.0.2"], 4, 4),
            (["127.0.0.1"], ["127.0.0.1"], 4, 3),
        ] as [([String], [String], Int, Int)])
    func laneCount(brokers: [String], endpoints: [String], cores: Int, lanes: Int) throws {
        let configuration = try Self.configuration(brokers: brokers, endpoints: endpoints)
        #expect(Engine.defaultLaneCount(cores: cores, configuration: configuration) == lanes)
    }
}
