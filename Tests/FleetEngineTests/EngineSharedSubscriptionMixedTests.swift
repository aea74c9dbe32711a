import FleetBroker
import FleetMetrics
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Members that mix a shared subscription with a plain one, against a real mosquitto: each worker shares
/// `bench/+/data` in group `g` and also subscribes to its own `cmd/worker-{i}`. What the group brings is accounted
/// for the group (once per group, merged across members and lanes), what the plain filter brings for the worker.
@Suite("Engine shared subscriptions: members that also subscribe plain filters", .serialized)
struct EngineSharedSubscriptionMixedTests {
    static let groupMessages = 2 * EngineSharedSubscriptionTests.messagesPerPublisher
    static let commandsPerWorker: UInt64 = 50

    static func workers(version: MQTTProtocolVersion) -> EngineFleet {
        EngineFleet(
            name: "workers", count: 3, clientID: { "worker-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30),
            subscriptions: { index, _ in
                [MQTTSubscription(filter: "$share/g/bench/+/data", qos: .atLeastOnce),
                 MQTTSubscription(filter: "cmd/worker-\(index)", qos: .atLeastOnce)]
            })
    }

    /// Commander i sends `count` QoS 1 messages to worker i's command topic.
    static func commanders(version: MQTTProtocolVersion, count: UInt64 = commandsPerWorker,
                           rate: Double = 200) -> EngineFleet {
        let stream = EngineStream(
            topic: { index, _ in "cmd/worker-\(index)" }, qos: .atLeastOnce,
            plan: .rate(perSecond: rate), payloadSize: 64, messageLimit: count)
        return EngineFleet(
            name: "commanders", count: 3, clientID: { "commander-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30), streams: [stream])
    }

    static func engine(_ fleets: [EngineFleet], port: UInt16, lanes: Int) throws -> Engine {
        try Engine(configuration: EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: port)], lanes: lanes, seed: 11,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000))
    }

    /// The accounting recorded under `key` for `stream`, merged over every lane (as the engine merges a group).
    static func counts(_ engine: Engine, key: UInt64, stream: Int, expected: UInt64) -> DeliveryCounts {
        var merged = DeliveryTracker()
        for lane in engine.lanes {
            let metrics = lane.queue.sync { lane.metrics }
            if let dense = metrics.deliveryKeys[key | UInt64(stream)] {
                merged.merge(stream: 0, from: metrics.delivery, stream: dense)
            }
        }
        return merged.counts(stream: 0, expected: expected)
    }

    /// Whether any lane recorded an arrival under `key` for `stream`.
    static func recorded(_ engine: Engine, key: UInt64, stream: Int) -> Bool {
        engine.lanes.contains { lane in lane.queue.sync { lane.metrics.deliveryKeys[key | UInt64(stream)] != nil } }
    }

    static func streamID(_ engine: Engine, topic: String) throws -> Int {
        try #require(engine.streamTopics.firstIndex(of: topic))
    }

    @Test("3 workers share 2 x 300 messages once per group and each gets its own 50 commands, on 1 and 2 lanes",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5], [1, 2])
    func groupAndCommandsAccountedApart(version: MQTTProtocolVersion, lanes: Int) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let engine = try Self.engine([Self.workers(version: version),
                                      EngineSharedSubscriptionTests.publishers(version: version),
                                      Self.commanders(version: version)], port: broker.port, lanes: lanes)
        // Mixed members join the group with their shared filter only; their plain filter stays theirs.
        #expect(engine.shareGroups.map(\.name) == ["g"])
        #expect(engine.shareGroups.map(\.filters) == [["bench/+/data"]])
        #expect(engine.plainSubscribers == [0, 1, 2])
        // The plain filters, made again from the fleet's patterns (the engine keeps only who has them).
        #expect(engine.plainSubscribers.map { global in
            Engine.splitSharedSubscriptions(engine.fleets[0].subscriptions(of: Int(global))).plain.map(\.filter)
        } == [["cmd/worker-0"], ["cmd/worker-1"], ["cmd/worker-2"]])
        let result = engine.run(duration: 1_000_000_000)
        let group = Self.groupMessages
        let commands = Self.commandsPerWorker
        let total = group + 3 * commands
        #expect(result.counters.published[.atLeastOnce] == total)
        #expect(result.counters.acked[.atLeastOnce] == total)
        let workers = try #require(result.fleets["workers"])
        // Every arrival at any worker: each group message once, plus each worker's own commands.
        #expect(workers.counters.received[.atLeastOnce] == total)
        if lanes == 2 {
            // Workers 0 and 2 sit on lane 0, worker 1 on lane 1: the group's state was merged across lanes.
            let perLane = engine.lanes.map { lane in
                lane.queue.sync { lane.metrics.fleets[0].counters.received[.atLeastOnce] }
            }
            #expect(perLane.allSatisfy { $0 > 0 })
        }
        var groupTotal = DeliveryCounts()
        for publisher in 0..<2 {
            let stream = try Self.streamID(engine, topic: "bench/\(publisher)/data")
            let counts = Self.counts(engine, key: Engine.groupDeliveryKey(0), stream: stream,
                                     expected: EngineSharedSubscriptionTests.messagesPerPublisher)
            #expect(counts.expected == EngineSharedSubscriptionTests.messagesPerPublisher)
            #expect(counts.received == EngineSharedSubscriptionTests.messagesPerPublisher)
            #expect(counts.unique == EngineSharedSubscriptionTests.messagesPerPublisher)
            #expect(counts.lost == 0)
            #expect(counts.duplicated == 0)
            groupTotal.add(counts)
            for worker in 0..<3 {
                #expect(!Self.recorded(engine, key: Engine.subscriberDeliveryKey(worker), stream: stream))
            }
        }
        #expect(groupTotal.unique == group)
        for worker in 0..<3 {
            let stream = try Self.streamID(engine, topic: "cmd/worker-\(worker)")
            let own = Self.counts(engine, key: Engine.subscriberDeliveryKey(worker), stream: stream, expected: commands)
            #expect(own == DeliveryCounts(expected: commands, received: commands, unique: commands, duplicated: 0,
                                          reordered: own.reordered))
            #expect(own.lost == 0)
            #expect(!Self.recorded(engine, key: Engine.groupDeliveryKey(0), stream: stream))
        }
        // The fleet's accounting: the group once (600) plus three command streams of 50.
        #expect(workers.delivery[1].expected == total)
        #expect(workers.delivery[1].received == total)
        #expect(workers.delivery[1].unique == total)
        #expect(workers.delivery[1].lost == 0)
        #expect(workers.delivery[1].duplicated == 0)
        #expect(workers.delivery[0] == DeliveryCounts())
        #expect(result.delivery[1].expected == total)
        #expect(result.delivery[1].unique == total)
        #expect(result.delivery[1].lost == 0)
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == total)
    }

    /// Subscribes every group topic and every command topic without a group: proves what reached the broker.
    static func observer(version: MQTTProtocolVersion) -> EngineFleet {
        EngineFleet(
            name: "observer", count: 1, clientID: { "observer-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30),
            subscriptions: { _, _ in
                [MQTTSubscription(filter: "bench/+/data", qos: .atLeastOnce),
                 MQTTSubscription(filter: "cmd/+", qos: .atLeastOnce)]
            })
    }

    @Test("a worker cut mid-stream: the group loses exactly what no worker got, the cut worker exactly its missed commands",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func workerCutMidStream(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        // Commands: 100 per worker at 50/s, so they run about 2 s; the cut comes once 200 messages were published (about 0.2 s in) and the cut
        // worker (reconnect policy `.none`) stays down, missing the rest of its commands. The long command window
        // leaves room for a fault thread that starts late on a loaded machine (at 100/s over 1 s, one loaded
        // parallel run failed as a cut after the last command would). The group's loss depends on what the broker had in flight to the cut
        // worker, so it is asserted as an identity, not a number.
        let commands: UInt64 = 100
        let cut = SharedCount()
        let engine = try Self.engine([Self.workers(version: version), Self.observer(version: version),
                                      EngineSharedSubscriptionTests.publishers(version: version, rate: 500),
                                      Self.commanders(version: version, count: commands, rate: 50)],
                                     port: broker.port, lanes: 2)
        let result = EngineFaultTests.run(engine, duration: 2_500_000_000, afterPublished: 200) { engine in
            cut.set((try? engine.tunnel(fleet: "workers", fraction: 1.0 / 3.0, outage: 0...0)) ?? -1)
        }
        let group = Self.groupMessages
        let total = group + 3 * commands
        #expect(cut.value == 1)
        let workers = try #require(result.fleets["workers"])
        let observer = try #require(result.fleets["observer"])
        #expect(workers.counters.disconnects[.tunnel] == 1)
        // Everything was published and reached the observer: whatever a worker or the group lacks was lost to it.
        #expect(result.counters.published[.atLeastOnce] == total)
        #expect(observer.delivery[1].expected == total)
        #expect(observer.delivery[1].unique == total)
        #expect(observer.delivery[1].lost == 0)
        var groupCounts = DeliveryCounts()
        for publisher in 0..<2 {
            let stream = try Self.streamID(engine, topic: "bench/\(publisher)/data")
            groupCounts.add(Self.counts(engine, key: Engine.groupDeliveryKey(0), stream: stream,
                                        expected: EngineSharedSubscriptionTests.messagesPerPublisher))
        }
        #expect(groupCounts.expected == group)
        #expect(groupCounts.duplicated == 0)
        #expect(groupCounts.unique == groupCounts.received)
        #expect(groupCounts.lost == group - groupCounts.unique)
        var ownCounts: [DeliveryCounts] = []
        for worker in 0..<3 {
            let stream = try Self.streamID(engine, topic: "cmd/worker-\(worker)")
            let own = Self.counts(engine, key: Engine.subscriberDeliveryKey(worker), stream: stream, expected: commands)
            #expect(own.expected == commands)
            #expect(own.duplicated == 0)
            #expect(own.unique == own.received)
            #expect(own.lost == commands - own.unique)
            ownCounts.append(own)
        }
        // Only the cut worker misses commands; the other two got all of theirs.
        #expect(ownCounts.filter { $0.lost > 0 }.count == 1)
        #expect(ownCounts.filter { $0.lost == 0 }.count == 2)
        let commandsReceived = ownCounts.reduce(0) { $0 + $1.received }
        let commandsLost = ownCounts.reduce(0) { $0 + $1.lost }
        // Every arrival at a worker is in exactly one of the two accountings, and the fleet's loss is their sum.
        #expect(workers.counters.received[.atLeastOnce] == groupCounts.received + commandsReceived)
        // The cut worker is owed only the commands published before its cut: the later ones are missed while
        // offline, not lost; together they are what it lacks.
        let missed = workers.delivery[1].missedWhileOffline
        #expect(missed >= 50)
        #expect(workers.delivery[1].expected + missed == total)
        #expect(workers.delivery[1].received == groupCounts.received + commandsReceived)
        #expect(workers.delivery[1].lost + missed == groupCounts.lost + commandsLost)
        #expect(workers.delivery[1].duplicated == 0)
    }

    @Test("a stream matched by a plain and a shared filter of one client, or by two of its groups, is refused by name",
          arguments: [
            (["$share/g/bench/+/data", "bench/0/data"],
             "client 'overlap-0' of fleet 'overlap' would receive topic 'bench/0/data' through both its filter "
                + "'bench/0/data' and its shared subscription '$share/g/bench/+/data': the copies cannot be told apart, "
                + "so its deliveries would be mis-counted; make each published topic match one subscription per client "
                + "(narrow the plain filter, or subscribe the group from other clients)"),
            (["$share/g/bench/+/data", "$share/h/bench/1/#"],
             "client 'overlap-0' of fleet 'overlap' would receive topic 'bench/1/data' through both its shared "
                + "subscription '$share/g/bench/+/data' and its shared subscription '$share/h/bench/1/#': the copies "
                + "cannot be told apart, so its deliveries would be mis-counted; make each published topic match one "
                + "subscription per client (narrow the plain filter, or subscribe the group from other clients)"),
          ])
    func ambiguousRoutesRefused(filters: [String], message: String) throws {
        let overlap = EngineFleet(
            name: "overlap", count: 1, clientID: { "overlap-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30),
            subscriptions: { _, _ in filters.map { MQTTSubscription(filter: $0, qos: .atLeastOnce) } })
        let configuration = EngineConfiguration(
            fleets: [overlap, EngineSharedSubscriptionTests.publishers(version: .v5)],
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1883)], lanes: 1)
        #expect(throws: EngineConfigurationError(message: message, fleet: "overlap")) { try Engine(configuration: configuration) }
        // The same check, without building an engine (what `fleetbench validate` runs).
        #expect(throws: EngineConfigurationError(message: message, fleet: "overlap")) {
            try Engine.refuseAmbiguousRoutes(configuration)
        }
    }

    @Test("a plain and a shared filter of one client that never match the same stream are accepted")
    func disjointRoutesAccepted() throws {
        let mixed = EngineFleet(
            name: "mixed", count: 1, clientID: { "mixed-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30),
            subscriptions: { _, _ in
                [MQTTSubscription(filter: "$share/g/bench/0/data", qos: .atLeastOnce),
                 MQTTSubscription(filter: "bench/1/data", qos: .atLeastOnce)]
            })
        let configuration = EngineConfiguration(
            fleets: [mixed, EngineSharedSubscriptionTests.publishers(version: .v5)],
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1883)], lanes: 1)
        _ = try Engine(configuration: configuration)
    }
}

/// How a mixed client's arrivals are keyed (no broker needed).
@Suite("Engine shared subscriptions: delivery routes of a mixed client")
struct EngineSharedSubscriptionRoutesTests {
    static func topic(_ name: String, _ body: (UnsafeRawBufferPointer) -> UInt64) -> UInt64 {
        Array(name.utf8).withUnsafeBytes(body)
    }

    @Test("plain filters first, then the first matching group; unmatched topics fall back to the client's key")
    func routeOrder() {
        let own = Engine.subscriberDeliveryKey(7)
        let routes = DeliveryRoutes(
            plainFilters: ["cmd/worker-7", "bench/0/data"],
            sharedFilters: [(filter: "bench/+/data", key: Engine.groupDeliveryKey(0)),
                            (filter: "bench/#", key: Engine.groupDeliveryKey(1))],
            ownKey: own)
        #expect(Self.topic("cmd/worker-7") { routes.key(topic: $0) } == own)
        // Matched by a plain and a shared filter: the plain key wins (see `Engine.sharedGroup(of:)`).
        #expect(Self.topic("bench/0/data") { routes.key(topic: $0) } == own)
        #expect(Self.topic("bench/1/data") { routes.key(topic: $0) } == Engine.groupDeliveryKey(0))
        #expect(Self.topic("bench/1/other") { routes.key(topic: $0) } == Engine.groupDeliveryKey(1))
        #expect(Self.topic("elsewhere") { routes.key(topic: $0) } == own)
    }

    @Test("subscriptions split into plain filters and (group, filter) pairs in order")
    func split() {
        let split = Engine.splitSharedSubscriptions(SharedGroupOfClientTests.subscriptions(
            ["$share/g/a/+", "a/plain", "$share/h/b/#", "$share//a"]))
        #expect(split.plain.map(\.filter) == ["a/plain", "$share//a"])
        #expect(split.shared.map(\.group) == ["g", "h"])
        #expect(split.shared.map(\.filter) == ["a/+", "b/#"])
    }
}
