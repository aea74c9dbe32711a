@testable import FleetEngine
import FleetTransport
import Foundation
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

@Suite("Engine: default timing wheel tick")
struct EngineTickTests {
    static func configuration(clients: Int, plan: PublishPlan, tick: UInt64 = 0) throws -> EngineConfiguration {
        let stream = EngineStream(topic: { index, _ in "t/\(index)" }, qos: .atMostOnce, plan: plan, payloadSize: 8)
        let fleet = EngineFleet(name: "f", count: clients, clientID: { "c\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 60), streams: [stream])
        return EngineConfiguration(fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1883)],
                                   tickNanoseconds: tick)
    }

    @Test(
        "100 µs while a lane's clients publish 2,000 messages a second or fewer together, else 1 ms",
        arguments: [
            (2_000, PublishPlan.interval(period: 1_000_000_000), 1, UInt64(100_000)),   // exactly 2,000/s
            (2_001, .interval(period: 1_000_000_000), 1, 1_000_000),
            (4_000, .interval(period: 1_000_000_000), 2, 100_000),                     // 2,000/s per lane
            (15_000, .interval(period: 1_000_000_000, jitter: 1_000_000_000), 1, 1_000_000),
            (10, .rate(perSecond: 1e9), 1, 1_000_000),                                 // as fast as it goes
            (100, .poisson(perSecond: 20), 1, 100_000),
            (100, .poisson(perSecond: 21), 1, 1_000_000),
            (50, .bursts(count: 40, every: 1_000_000_000), 1, 100_000),               // 2,000/s in bursts
            (100_000, .onConnect, 1, 100_000),
        ] as [(Int, PublishPlan, Int, UInt64)])
    func tick(clients: Int, plan: PublishPlan, lanes: Int, tick: UInt64) throws {
        let configuration = try Self.configuration(clients: clients, plan: plan)
        #expect(Engine.defaultTickNanoseconds(configuration: configuration, laneCount: lanes) == tick)
    }

    @Test("a tick given in the configuration is kept; 0 is replaced by the default")
    func given() throws {
        var given = try Self.configuration(clients: 10, plan: .interval(period: 1_000_000_000), tick: 250_000)
        given.lanes = 1
        #expect(try Engine(configuration: given).configuration.tickNanoseconds == 250_000)
        var automatic = try Self.configuration(clients: 10, plan: .interval(period: 1_000_000_000))
        automatic.lanes = 1
        #expect(try Engine(configuration: automatic).configuration.tickNanoseconds == 100_000)
    }
}

@Suite("Engine: default source addresses for a local broker")
struct EngineSourceAddressTests {
    static func configuration(clients: Int, brokers: [String], endpoints: [String] = [],
                              sources: [String] = []) throws -> EngineConfiguration {
        var fleet = EngineFleet(name: "f", count: clients, clientID: { "c\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 60))
        fleet.endpoints = try endpoints.map { EngineBrokerEndpoint(address: try SocketAddress(ipAddress: $0, port: 8883)) }
        return EngineConfiguration(
            fleets: [fleet], brokers: try brokers.map { try SocketAddress(ipAddress: $0, port: 1883) },
            sourceAddresses: try sources.map { try SocketAddress(ipAddress: $0, port: 0) })
    }

    static func loopback(_ count: Int) -> [String] { (1...count).map { "127.0.0.\($0)" } }

    @Test(
        "enough of 127.0.0.1, .2, ... that each holds at most 70 % of the even ports, only for a local IPv4 broker",
        arguments: [
            (15_000, ["127.0.0.1"], [], [], 28_232, loopback(2)),
            (9_881, ["127.0.0.1"], [], [], 28_232, []),             // 70 % of 14,116: one address is enough
            (9_882, ["127.0.0.1"], [], [], 28_232, loopback(2)),
            (100_000, ["127.0.0.1"], [], [], 28_232, loopback(11)),
            (2_500, ["127.0.0.1"], [], [], 2_000, loopback(3)),      // a narrow range: 1,000 per address at least
            (10_000_000, ["127.0.0.1"], [], [], 28_232, loopback(254)),
            (15_000, ["127.0.0.5", "127.0.0.1"], [], [], 28_232, loopback(2)),
            (15_000, ["10.0.0.1"], [], [], 28_232, []),              // the network decides what exists there
            (15_000, ["::1"], [], [], 28_232, []),                   // IPv6 has one loopback address
            (15_000, ["127.0.0.1"], ["10.0.0.2"], [], 28_232, []),
            (15_000, ["127.0.0.1"], [], ["127.0.0.9"], 28_232, ["127.0.0.9"]),  // named ones are kept as they are
        ] as [(Int, [String], [String], [String], Int, [String])])
    func sources(clients: Int, brokers: [String], endpoints: [String], sources: [String], ports: Int,
                 expected: [String]) throws {
        let configuration = try Self.configuration(clients: clients, brokers: brokers, endpoints: endpoints,
                                                   sources: sources)
        let chosen = Engine.defaultSourceAddresses(configuration: configuration, ephemeralPorts: ports)
        #expect(chosen.map(\.ipAddress) == expected)
        #expect(chosen.allSatisfy { $0.port == 0 })
    }

    @Test("the engine applies them: 15,000 clients to a local broker are bound to 127.0.0.1 and 127.0.0.2")
    func applied() throws {
        let engine = try Engine(configuration: try Self.configuration(clients: 15_000, brokers: ["127.0.0.1"]))
        let perSource = Engine.ephemeralPortCount() * 7 / 20
        #expect(engine.configuration.sourceAddresses.map(\.ipAddress) == Self.loopback((15_000 + perSource - 1) / perSource))
        let few = try Engine(configuration: try Self.configuration(clients: 100, brokers: ["127.0.0.1"]))
        #expect(few.configuration.sourceAddresses.isEmpty)
    }

    @Test("too many clients from one source address to one broker are named, with the limit and what to do")
    func crowded() throws {
        let remote = try Engine(configuration: try Self.configuration(clients: 15_000, brokers: ["10.0.0.1"]))
        let crowded = remote.crowdedSourceAddresses(ephemeralPorts: 28_232)
        #expect(crowded == [CrowdedSourceAddress(source: nil, broker: try SocketAddress(ipAddress: "10.0.0.1", port: 1883),
                                                 clients: 15_000, limit: 9_881)])
        #expect(crowded.first?.description == "15000 clients would connect to 10.0.0.1:1883 from one source address "
            + "(none named); above 9881 every connect scans the ephemeral port range (net.ipv4.ip_local_port_range) "
            + "and beyond it connects fail: name more source_addresses in the scenario")

        let named = try Engine(configuration: try Self.configuration(
            clients: 25_000, brokers: ["10.0.0.1"], sources: ["10.0.0.100", "10.0.0.101"]))
        #expect(named.crowdedSourceAddresses(ephemeralPorts: 28_232).map(\.clients) == [12_500, 12_500])
        #expect(named.crowdedSourceAddresses(ephemeralPorts: 28_232).map { $0.source?.ipAddress } == ["10.0.0.101", "10.0.0.100"])
        #expect(named.crowdedSourceAddresses(ephemeralPorts: 28_232).first?.description
            .hasPrefix("12500 clients would connect to 10.0.0.1:1883 from source address 10.0.0.101; ") == true)
        #expect(named.crowdedSourceAddresses(ephemeralPorts: 60_000).isEmpty)  // 21,000 per address

        // A local IPv4 broker gets enough loopback source addresses of its own.
        let local = try Engine(configuration: try Self.configuration(clients: 15_000, brokers: ["127.0.0.1"]))
        #expect(local.crowdedSourceAddresses(ephemeralPorts: Engine.ephemeralPortCount()).isEmpty)
        // IPv6 has one loopback address: nothing to spread over.
        let six = try Engine(configuration: try Self.configuration(clients: 10_000, brokers: ["::1"]))
        #expect(six.crowdedSourceAddresses(ephemeralPorts: 28_232).map(\.clients) == [10_000])
    }

    @Test("sources and brokers are both round-robin without pairing up: each (source, broker) pair gets its share",
          arguments: [(2, 2), (2, 4), (3, 2), (4, 2)])
    func sourcesSpreadOverBrokers(sources: Int, brokers: Int) throws {
        let clients = 2_400  // divisible by every product above
        let configuration = try Self.configuration(
            clients: clients, brokers: (1...brokers).map { "10.0.1.\($0)" },
            sources: (1...sources).map { "10.0.2.\($0)" })
        let engine = try Engine(configuration: configuration)
        var pairs: [String: Int] = [:]
        for lane in engine.lanes {
            for client in lane.clients {
                pairs["\(client.source?.ipAddress ?? "-") → \(client.broker.ipAddress)", default: 0] += 1
            }
        }
        #expect(pairs.count == sources * brokers)
        #expect(pairs.values.allSatisfy { $0 == clients / (sources * brokers) }, "\(pairs)")
    }

    @Test("the ephemeral port count is the size of net.ipv4.ip_local_port_range")
    func portRange() throws {
        let text = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        try #require(bounds.count == 2)
        #expect(Engine.ephemeralPortCount() == bounds[1] - bounds[0] + 1)
    }
}
