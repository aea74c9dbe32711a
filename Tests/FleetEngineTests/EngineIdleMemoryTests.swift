import Dispatch
import FleetBroker
import FleetTestSupport
import FleetTransport
import MQTTCodec
@testable import MQTTSession
import Synchronization
import Testing
@testable import FleetEngine

/// What an idle vehicle keeps between its messages (docs/scaling.md, "Per GiB"): no outbound block (the lane
/// lends one per flush) and, with a clean start, no retransmission copy.
@Suite("Engine: what idle publishing vehicles keep between messages", .serialized)
struct EngineIdleMemoryTests {
    struct Held: Sendable, Equatable {
        var lent = 0
        var capacities: [Int] = []
        var storedCapacities: [Int] = []
        var pooled = 0
    }

    @Test("20 vehicles publishing QoS 1 every 300 ms: between messages none holds an outbound block or a stored copy")
    func nothingHeldBetweenMessages() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let clients = 20
        let stream = EngineStream(topic: { _, id in "vehicles/\(id)/telemetry" }, qos: .atLeastOnce,
                                  plan: .interval(period: 300_000_000), payloadSize: 200)
        let fleet = EngineFleet(
            name: "vehicles", count: clients, clientID: { "veh-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 60),
            subscriptions: { _, id in [MQTTSubscription(filter: "vehicles/\(id)/cmd", qos: .atLeastOnce)] },
            streams: [stream])
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: 10_000_000_000)
        let engine = try Engine(configuration: configuration)
        let lane = engine.lanes[0]
        #expect(lane.clients.allSatisfy { $0.outbound.pool === lane.outboundBlocks })
        let held = Mutex<Held?>(nil)
        engine.onPublishStart = {
            // Between messages: once every client has published and the lane has counted as many PUBACKs as
            // messages (nothing written waits, nothing is in flight), seen in one turn-free moment of the lane.
            TestThread.start {
                EventWait.until(seconds: 5, interval: 0.001) {
                    let seen: Held? = lane.queue.sync {
                        let counters = lane.metrics.counters
                        guard counters.published[.atLeastOnce] >= UInt64(clients),
                              counters.acked[.atLeastOnce] == counters.published[.atLeastOnce] else { return nil }
                        return Held(lent: lane.outboundBlocks.lent, capacities: lane.clients.map(\.outbound.capacity),
                                    storedCapacities: lane.clients.map { $0.session.outbound.storedBytes.capacity },
                                    pooled: lane.outboundBlocks.freeCount)
                    }
                    held.withLock { $0 = seen ?? $0 }
                    return seen != nil
                }
            }
        }
        let result = engine.run(duration: 1_000_000_000)
        #expect(result.counters.ackTimeouts.total == 0)
        let seen = try #require(held.withLock { $0 })
        #expect(seen.lent == 0)
        #expect(seen.capacities == Array(repeating: 0, count: clients))
        #expect(seen.storedCapacities == Array(repeating: 0, count: clients))
        // Blocks went round: at most one per client was ever needed at once, and the pool keeps them for reuse.
        #expect((1...clients).contains(seen.pooled))
    }

    @Test("a client's vehicle is kept apart from it: 8 bytes in every client, nothing allocated until its first sample")
    func vehicleIsBoxed() {
        #expect(MemoryLayout<VehicleBox?>.size == 8)
        #expect(MemoryLayout<SimulatedClient>.size == 497)
    }

    static func topicFleets() throws -> [FleetRuntime] {
        let session = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 60)
        let telemetry = EngineStream(topic: { _, id in "v/\(id)/t" }, qos: .atLeastOnce, plan: .interval(period: 1_000_000_000))
        let status = EngineStream(topic: { index, _ in "s/\(index)" }, qos: .atMostOnce, plan: .interval(period: 1_000_000_000))
        let cars = EngineFleet(name: "cars", count: 3, clientID: { "veh-\($0)" }, session: session,
                               subscriptions: { _, _ in [] }, streams: [telemetry, status])
        let bikes = EngineFleet(name: "bikes", count: 2, clientID: { "b-\($0)" }, session: session,
                                subscriptions: { _, _ in [] }, streams: [telemetry])
        return [try FleetRuntime(index: 0, configuration: cars, firstStream: 0),
                try FleetRuntime(index: 1, configuration: bikes, firstStream: 6)]
    }

    @Test("exact filters: only the streams they name are kept, found by rendering every topic once")
    func exactFilterTopics() throws {
        let fleets = try Self.topicFleets()
        // Streams: cars 0..<6 (client k: 2k telemetry, 2k+1 status), bikes 6, 7. Stream 3 (s/1) is untracked.
        var tracked = Array(repeating: true, count: 8)
        tracked[3] = false
        let found = Engine.tracedTopics(fleets: fleets, tracked: tracked,
                                        filters: ["v/veh-1/t", "v/b-1/t", "s/1", "s/2", "nothing/here", "v/veh-1/t"],
                                        hasWildcard: { $0.contains("+") || $0.contains("#") })
        #expect(found.byFilter == ["v/veh-1/t": [2], "v/b-1/t": [7], "s/1": [], "s/2": [5], "nothing/here": []])
        #expect(found.all == nil)
    }

    @Test("a wildcard among the filters keeps every tracked stream's topic, empty for the untracked")
    func wildcardKeepsAllTopics() throws {
        let fleets = try Self.topicFleets()
        var tracked = Array(repeating: true, count: 8)
        tracked[3] = false
        let found = Engine.tracedTopics(fleets: fleets, tracked: tracked, filters: ["v/+/t", "s/0"],
                                        hasWildcard: { $0.contains("+") || $0.contains("#") })
        #expect(found.all == ["v/veh-0/t", "s/0", "v/veh-1/t", "", "v/veh-2/t", "s/2", "v/b-0/t", "v/b-1/t"])
        #expect(found.byFilter == ["s/0": [1]])
        let none = Engine.tracedTopics(fleets: fleets, tracked: tracked, filters: [String](),
                                       hasWildcard: { $0.contains("+") })
        #expect(none.byFilter.isEmpty)
        #expect(none.all == nil)
    }
}
