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
/// lends one per flush), no in-flight slot array (lent likewise), no subscription (made again at each SUBSCRIBE)
/// and, with a clean start, no retransmission copy.
@Suite("Engine: what idle publishing vehicles keep between messages", .serialized)
struct EngineIdleMemoryTests {
    struct Held: Sendable, Equatable {
        var lent = 0
        var capacities: [Int] = []
        var storedCapacities: [Int] = []
        var pooled = 0
        var subscriptionCapacities: [Int] = []
        var windowCapacities: [Int] = []
        var idleWindows = 0
        var withExtras = 0
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
                                    pooled: lane.outboundBlocks.freeCount,
                                    subscriptionCapacities: lane.clients.map { $0.session.subscriptionGroups.capacity },
                                    windowCapacities: lane.clients.map { $0.session.outbound.slots.capacity },
                                    idleWindows: lane.windowStorage.freeCount,
                                    withExtras: lane.clients.filter { $0.extras != nil }.count)
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
        // Plain TCP, no network profile, delivery routes or vehicle model: no client made its extras.
        #expect(seen.withExtras == 0)
        // No in-flight slot array either: each went back to the lane's pool with its last PUBACK.
        #expect(seen.windowCapacities == Array(repeating: 0, count: clients))
        #expect((1...clients).contains(seen.idleWindows))
        // Subscribed (every client was ready before publishing began), and its session keeps nothing of it.
        #expect(seen.subscriptionCapacities == Array(repeating: 0, count: clients))
        #expect(result.counters.connectsSucceeded == UInt64(clients))
        #expect(result.latency.histogram(.subscribe, from: .sent).totalCount == UInt64(clients))
        // Blocks went round: at most one per client was ever needed at once, and the pool keeps them for reuse.
        #expect((1...clients).contains(seen.pooled))
    }

    @Test("subscriptions are made again at each SUBSCRIBE: after a lost session the lane asks again for what was not refused")
    func subscriptionsMadeAgain() throws {
        // Connection 0: "x" refused, "y" granted, then the broker closes; connection 1 (no session) grants all.
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if connection == 0, case .subscribe(let subscribe) = packet {
                return [.send(.subAck(MQTTSubAck(packetID: subscribe.packetID, reasonCodes: [.unspecifiedError, .grantedQoS1]))),
                        .close]
            }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let fleet = EngineFleet(
            name: "vehicles", count: 1, clientID: { "veh-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30),
            subscriptions: { _, id in
                [MQTTSubscription(filter: "x/\(id)", qos: .atLeastOnce), MQTTSubscription(filter: "y/\(id)", qos: .atLeastOnce)]
            },
            reconnect: .immediateThenInterval(retries: 5, interval: 1_000_000_000))
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: 3_000_000_000, drainTimeout: 0)
        let engine = try Engine(configuration: configuration)
        let result = engine.run(duration: 300_000_000)
        let subscribes = broker.receivedPackets.compactMap { received -> String? in
            guard case .subscribe(let subscribe) = received.packet else { return nil }
            return "\(received.connection): \(subscribe.packetID) " + subscribe.subscriptions.map(\.filter).joined(separator: ",")
        }
        #expect(subscribes == ["0: 1 x/veh-0,y/veh-0", "1: 2 y/veh-0"])
        #expect(result.counters.subscriptionsRefused == 1)
        #expect(result.counters.subscriptionsDowngraded == 0)
        #expect(result.counters.connectsSucceeded == 2)
        #expect(engine.lanes[0].refusedFilters == [0: ["x/veh-0"]])
        #expect(engine.lanes[0].clients[0].session.subscriptionGroups.capacity == 0)
    }

    @Test("the connect timer and the connect timeout share one wheel entry: a CONNACK that never comes times out, the reconnect timer then fires")
    func connectTimersShareAnEntry() throws {
        // Connection 0 gets no CONNACK; connection 1 is answered.
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if connection == 0, case .connect = packet { return [] }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let short: UInt64 = 200_000_000
        let fleet = EngineFleet(
            name: "vehicles", count: 1, clientID: { "veh-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30,
                                         timeouts: MQTTAckTimeouts(connAck: short, subAck: short)),
            reconnect: .immediateThenInterval(retries: 5, interval: 1_000_000_000))
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: 3_000_000_000, drainTimeout: 0)
        let engine = try Engine(configuration: configuration)
        #expect(engine.lanes[0].wheel.kindsPerClient == 4)
        #expect(TimerKind.connectTimeout.wheelIndex == TimerKind.connect.wheelIndex)
        #expect(TimerKind.allCases.filter { $0 != .connectTimeout }.map(\.wheelIndex) == Array(0..<8))
        let result = engine.run(duration: 100_000_000)
        #expect(result.counters.connectsAttempted == 2)
        #expect(result.counters.reconnects == 0)  // the retry of a first connect is no reconnect
        #expect(result.counters.connectsSucceeded == 1)
        #expect(result.counters.connectFailures == [.connackTimeout: 1])
        #expect(result.counters.ackTimeouts[.connack] == 1)
        #expect(broker.connectionCount == 2)
    }

    @Test("a client's vehicle is kept apart from it: 8 bytes in every client, nothing allocated until its first sample")
    func vehicleIsBoxed() {
        #expect(MemoryLayout<VehicleBox?>.size == 8)
        // 497 before: indexes in 32 bits, the entitlement windows boxed, the small fields packed together; 424
        // before its subscriptions array (8) gave way to two flags in the padding before `ackBatching` and the
        // fields only some clients use went into `ClientExtras` (6 × 8 bytes → 8).
        #expect(MemoryLayout<SimulatedClient>.size == 376)
        #expect(MemoryLayout<MQTTClientSession>.size == 176)  // with the window's pool reference (8) in its padding
        #expect(MemoryLayout<EntitlementState?>.size == 8)
    }

    @Test("a stream's state without the schedule's shared part: 156 bytes, 232 before")
    func streamStateSize() {
        #expect(MemoryLayout<PublishSchedule>.size == 85)
        #expect(MemoryLayout<PublishSchedule?>.size == 85)  // the shape reference's spare bits say nil
        #expect(MemoryLayout<StreamState>.size == 156)
    }

    @Test("clients of one fleet stream share one schedule shape")
    func scheduleShapeShared() throws {
        let fleets = try Self.topicFleets()
        #expect(fleets[0].scheduleShapes.count == 2)
        let first = try PublishSchedule(shape: fleets[0].scheduleShapes[0], start: 5, random: SeededRandom(seed: 1, stream: 1))
        let second = try PublishSchedule(shape: fleets[0].scheduleShapes[0], start: 9, random: SeededRandom(seed: 1, stream: 2))
        #expect(first.shape === second.shape)
        #expect(first.plan == .interval(period: 1_000_000_000))
        #expect(first.maxPerTurn == 256)
        #expect(first.behind == .catchUp)
        #expect(first.nextIntendedTime == 5 && second.nextIntendedTime == 9)
    }

    @Test("stream counts only for the segment's own streams, in the order the engine numbers them")
    func progressSlotsOfSegment() {
        // Two fleets: 5 clients with 2 streams (streams 0..<10), then 4 clients with 1 stream (streams 10..<14);
        // segment 1 of 3 holds global clients 1, 4 (fleet 0) and 7 (fleet 1).
        let progress = StreamProgress(fleets: [(0, 2, 5), (10, 1, 4)], segmentIndex: 1, segmentCount: 3)
        #expect(progress.count == 5)
        #expect((0..<14).map { progress.slot($0) } == [nil, nil, 0, 1, nil, nil, nil, nil, 2, 3, nil, nil, 4, nil])
        progress.setPublished(slot: 3, 7)
        progress.setPublished(slot: 4, 2)
        #expect(progress.published(9) == 7)
        #expect(progress.published(12) == 2)
        #expect(progress.published(0) == 0)  // another segment's stream: never published here
        #expect(progress.published(99) == 0)
        #expect(progress.total == 9)
        let whole = StreamProgress(streams: 4)
        #expect(whole.count == 4 && (0..<4).map { whole.slot($0) } == [0, 1, 2, 3])
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
        // Filters naming no tracked stream ("s/1" is untracked, "nothing/here" no topic) have no entry.
        #expect(found.byFilter == ["v/veh-1/t": [2], "v/b-1/t": [7], "s/2": [5]])
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
