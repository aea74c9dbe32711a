@testable import FleetEngine
import FleetTransport
import Foundation
import MQTTCodec
import MQTTSession
import Testing

/// `EngineConfiguration.segmentIndex`/`segmentCount`: the union of the N segments' clients is the unsegmented
/// run's clients, each with the same identity, broker, topics, stream ids, subscriptions, entitlements and random
/// state, whatever the lane count.
@Suite("Engine: deterministic segments")
struct EngineSegmentTests {
    struct ClientFacts: Equatable, CustomStringConvertible {
        var clientID: String
        var fleet: Int
        var indexInFleet: Int
        var broker: String
        var source: String
        var topics: [String]
        var streamIDs: [UInt32]
        var subscriptions: [String]
        var deliveryKey: UInt64
        var entitled: [UInt32]
        var random: [UInt64]
        var description: String { "\(clientID) \(topics) \(streamIDs) \(subscriptions) \(entitled)" }
    }

    static func configuration(segment: Int, of count: Int, lanes: Int) throws -> EngineConfiguration {
        let telemetry = EngineStream(topic: { _, id in "tel/\(id)" }, qos: .atLeastOnce, plan: .poisson(perSecond: 3), payloadSize: 16)
        let events = EngineStream(topic: { index, _ in "ev/\(index % 3)" }, qos: .exactlyOnce,
                                  plan: .interval(period: 1_000_000_000, jitter: 200_000_000), payloadSize: 8)
        let settings = MQTTSessionSettings(version: .v5, keepAliveSeconds: 60)
        let cars = EngineFleet(name: "cars", count: 11, clientID: { "car-\($0)" }, session: settings,
                               subscriptions: { _, id in [MQTTSubscription(filter: "cmd/\(id)", qos: .atLeastOnce)] },
                               streams: [telemetry, events])
        let commands = EngineStream(topic: { index, _ in "cmd/car-\(index)" }, qos: .atLeastOnce, plan: .interval(period: 500_000_000), payloadSize: 8)
        let ops = EngineFleet(name: "ops", count: 4, clientID: { "ops-\($0)" }, session: settings,
                              subscriptions: { _, _ in [MQTTSubscription(filter: "tel/+", qos: .atLeastOnce),
                                                        MQTTSubscription(filter: "$share/g/ev/#", qos: .exactlyOnce)] },
                              streams: [commands])
        var configuration = EngineConfiguration(
            fleets: [cars, ops],
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1883), try SocketAddress(ipAddress: "127.0.0.1", port: 1884)],
            sourceAddresses: [try SocketAddress(ipAddress: "127.0.0.1", port: 0), try SocketAddress(ipAddress: "127.0.0.2", port: 0),
                              try SocketAddress(ipAddress: "127.0.0.3", port: 0)],
            lanes: lanes, seed: 99)
        configuration.segmentIndex = segment
        configuration.segmentCount = count
        configuration.runID = 0x5e9
        return configuration
    }

    static func facts(_ engine: Engine) -> [Int: ClientFacts] {
        var facts: [Int: ClientFacts] = [:]
        for lane in engine.lanes {
            lane.queue.sync {
                for client in lane.clients {
                    var random = client.random
                    facts[client.globalIndex] = ClientFacts(
                        clientID: client.session.clientID, fleet: client.fleet, indexInFleet: client.indexInFleet,
                        broker: "\(client.broker)", source: client.source.map { "\($0)" } ?? "",
                        topics: client.publisher.streams.map(\.topic.name),
                        streamIDs: client.publisher.streams.map(\.streamID), subscriptions: lane.fleets[client.fleet].subscriptions(of: client.indexInFleet).map(\.filter),
                        deliveryKey: client.deliveryKey, entitled: client.entitledStreams,
                        random: (0..<4).map { _ in random.next() })
                }
            }
        }
        return facts
    }

    @Test("N segments (N = 1...4, uneven fleets of 11 and 4) hold every client once, each as in the unsegmented run",
          arguments: [1, 2, 3, 4])
    func unionIsTheSingleRun(segments: Int) throws {
        let singleEngine = try Engine(configuration: Self.configuration(segment: 0, of: 1, lanes: 1))
        let single = Self.facts(singleEngine)
        #expect(single.count == 15)
        var union: [Int: ClientFacts] = [:]
        for index in 0..<segments {
            // Another lane count per segment: the layout must not matter.
            let engine = try Engine(configuration: Self.configuration(segment: index, of: segments, lanes: 1 + index % 3))
            #expect(engine.shareGroups.map(\.name) == ["g"])
            let mine = Self.facts(engine)
            for (global, facts) in mine {
                #expect(global % segments == index, "client \(global) in segment \(index) of \(segments)")
                #expect(union[global] == nil, "client \(global) in two segments")
                union[global] = facts
            }
            // Every stream is numbered in every segment; the local ones are exactly this segment's clients' streams.
            #expect(engine.streamTopics == singleEngine.streamTopics)
            #expect(engine.streamLocal.indices.filter { engine.streamLocal[$0] }.map { UInt32($0) }
                == mine.values.flatMap(\.streamIDs).sorted())
        }
        #expect(union.count == single.count)
        for (global, facts) in single {
            #expect(union[global] == facts, "client \(global)")
        }
    }
}
