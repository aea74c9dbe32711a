import Dispatch
import FleetBroker
import FleetMetrics
import FleetTestSupport
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Shared subscriptions (`$share/{group}/{filter}`, 5.0 §4.8.2) against a real mosquitto: a group is accounted as
/// one subscriber, its members' deliveries merged across lanes, each message expected once per group.
@Suite("Engine shared subscriptions against mosquitto", .serialized)
struct EngineSharedSubscriptionTests {
    static let messagesPerPublisher: UInt64 = 300

    static func members(_ name: String, count: Int, group: String, version: MQTTProtocolVersion) -> EngineFleet {
        EngineFleet(
            name: name, count: count, clientID: { "\(name)-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30),
            subscriptions: { _, _ in [MQTTSubscription(filter: "$share/\(group)/bench/+/data", qos: .atLeastOnce)] })
    }

    static func publishers(version: MQTTProtocolVersion, rate: Double = 1000) -> EngineFleet {
        let stream = EngineStream(
            topic: { index, _ in "bench/\(index)/data" }, qos: .atLeastOnce,
            plan: .rate(perSecond: rate), payloadSize: 64, messageLimit: messagesPerPublisher)
        return EngineFleet(
            name: "publishers", count: 2, clientID: { "pub-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30), streams: [stream])
    }

    static func engine(_ fleets: [EngineFleet], port: UInt16) throws -> Engine {
        // Two lanes: clients go to lanes round-robin, so the members of a group sit on both.
        try Engine(configuration: EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: port)], lanes: 2, seed: 11,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000))
    }

    static func run(_ fleets: [EngineFleet], port: UInt16, duration: UInt64 = 1_000_000_000, afterPublished: UInt64 = 0,
                    fault: (@Sendable (Engine) -> Void)? = nil) throws -> EngineResult {
        let engine = try engine(fleets, port: port)
        guard let fault else { return engine.run(duration: duration) }
        return EngineFaultTests.run(engine, duration: duration, afterPublished: afterPublished, fault: fault)
    }

    @Test("3 members of one group receive 2 x 300 QoS 1 messages exactly once between them",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func groupGetsEveryMessageOnce(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let engine = try Self.engine([Self.members("workers", count: 3, group: "g", version: version),
                                      Self.publishers(version: version)], port: broker.port)
        let result = engine.run(duration: 1_000_000_000)
        let total = 2 * Self.messagesPerPublisher
        // Members 0 and 2 are on lane 0, member 1 on lane 1: the group's state was merged across lanes.
        let perLane = engine.lanes.map { lane in lane.queue.sync { lane.metrics.fleets[0].counters.received[.atLeastOnce] } }
        #expect(perLane.allSatisfy { $0 > 0 })
        #expect(perLane.reduce(0, +) == total)
        #expect(result.counters.published[.atLeastOnce] == total)
        #expect(result.counters.acked[.atLeastOnce] == total)
        let workers = try #require(result.fleets["workers"])
        // Every arrival at any member, summed: each message reached exactly one of them.
        #expect(workers.counters.received[.atLeastOnce] == total)
        #expect(workers.delivery[1] == DeliveryCounts(expected: total, received: total, unique: total, duplicated: 0,
                                                       reordered: workers.delivery[1].reordered))
        #expect(workers.delivery[1].lost == 0)
        #expect(workers.delivery[0] == DeliveryCounts())
        #expect(result.delivery[1].expected == total)
        #expect(result.delivery[1].unique == total)
        #expect(result.delivery[1].lost == 0)
        #expect(result.delivery[1].duplicated == 0)
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == total)
    }

    /// One client subscribed to every publisher's topic without a group.
    static func plainSubscriber(version: MQTTProtocolVersion) -> EngineFleet {
        EngineFleet(
            name: "plain", count: 1, clientID: { "plain-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30),
            subscriptions: { _, _ in [MQTTSubscription(filter: "bench/+/data", qos: .atLeastOnce)] })
    }

    @Test("a plain subscriber next to the group keeps its own full accounting",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func plainSubscriberBesideGroup(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let plain = Self.plainSubscriber(version: version)
        let result = try Self.run([Self.members("workers", count: 3, group: "g", version: version), plain,
                                   Self.publishers(version: version)], port: broker.port)
        let total = 2 * Self.messagesPerPublisher
        let workers = try #require(result.fleets["workers"])
        let alone = try #require(result.fleets["plain"])
        #expect(workers.counters.received[.atLeastOnce] == total)
        #expect(alone.counters.received[.atLeastOnce] == total)
        for fleet in [workers, alone] {
            #expect(fleet.delivery[1].expected == total)
            #expect(fleet.delivery[1].received == total)
            #expect(fleet.delivery[1].unique == total)
            #expect(fleet.delivery[1].lost == 0)
            #expect(fleet.delivery[1].duplicated == 0)
        }
        #expect(result.delivery[1].expected == 2 * total)
        #expect(result.delivery[1].unique == 2 * total)
        #expect(result.delivery[1].lost == 0)
    }

    @Test("two fleets with the same group name are one group, counted once for the first fleet")
    func groupAcrossFleets() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let result = try Self.run([Self.members("east", count: 2, group: "shared", version: .v5),
                                   Self.members("west", count: 2, group: "shared", version: .v5),
                                   Self.publishers(version: .v5)], port: broker.port)
        let total = 2 * Self.messagesPerPublisher
        let east = try #require(result.fleets["east"])
        let west = try #require(result.fleets["west"])
        #expect(east.counters.received[.atLeastOnce] + west.counters.received[.atLeastOnce] == total)
        #expect(east.delivery[1].expected == total)
        #expect(east.delivery[1].received == total)
        #expect(east.delivery[1].unique == total)
        #expect(east.delivery[1].lost == 0)
        #expect(east.delivery[1].duplicated == 0)
        #expect(west.delivery[1] == DeliveryCounts())
        #expect(result.delivery[1].expected == total)
    }

    @Test("a member cut mid-stream: the group's loss is exactly the messages no member received",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func memberCutMidStream(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let plain = Self.plainSubscriber(version: version)
        let cut = SharedCount()
        // 300 messages at 500/s per publisher: publishing lasts 0.6 s, the cut comes after 200 of the 600 (about
        // 0.2 s in). The cut
        // member's reconnect policy is `.none`, so it stays down and the other two carry the rest. Whether the
        // broker loses the cut member's in-flight messages depends on timing (on loopback mosquitto noticed the
        // RST first and lost none in every run so far), so the test asserts the identity, not a number: the
        // group's loss is exactly what no member received, counted apart from the tracker.
        let result = try Self.run([Self.members("workers", count: 3, group: "g", version: version), plain,
                                   Self.publishers(version: version, rate: 500)],
                                  port: broker.port, duration: 1_200_000_000, afterPublished: 200) { engine in
            cut.set((try? engine.tunnel(fleet: "workers", fraction: 1.0 / 3.0, outage: 0...0)) ?? -1)
        }
        let total = 2 * Self.messagesPerPublisher
        #expect(cut.value == 1)
        let workers = try #require(result.fleets["workers"])
        let alone = try #require(result.fleets["plain"])
        #expect(workers.counters.disconnects[.tunnel] == 1)
        // Every message was published and reached the plain subscriber: whatever the group lacks was lost to it.
        #expect(result.counters.published[.atLeastOnce] == total)
        #expect(alone.delivery[1].unique == total)
        #expect(alone.delivery[1].lost == 0)
        let group = workers.delivery[1]
        let arrivals = workers.counters.received[.atLeastOnce]
        #expect(group.expected == total)
        #expect(group.received == arrivals)
        #expect(group.duplicated == 0)
        #expect(group.unique == arrivals)
        #expect(group.lost == total - arrivals)
    }
}

/// A group's entitlement: it is owed a message while at least one member is entitled to it (subscribed with a
/// clean session, or keeping a persistent one), not every message of the run.
@Suite("Engine shared-subscription entitlement against mosquitto", .serialized)
struct EngineSharedSubscriptionEntitlementTests {
    static func fleets(memberQoS: MQTTQoS) -> [EngineFleet] {
        let members = EngineFleet(
            name: "workers", count: 2, clientID: { "ent-worker-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30),
            subscriptions: { _, _ in [MQTTSubscription(filter: "$share/g/ent/+/data", qos: memberQoS)] },
            reconnect: .immediateThenInterval(retries: 10, interval: 10_000_000))
        let stream = EngineStream(topic: { index, _ in "ent/\(index)/data" }, qos: .atMostOnce,
                                  plan: .rate(perSecond: 100), payloadSize: 64, messageLimit: 300)
        let publishers = EngineFleet(
            name: "publishers", count: 2, clientID: { "ent-pub-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30), streams: [stream])
        return [members, publishers]
    }

    /// Runs 3.3 s and cuts `fraction` of the workers (the group's members) for 0.4 s once the publishers sent 100
    /// of their 600 messages (0.5 s into publishing at 2 x 100/s on time; the same message on a loaded machine).
    static func runWithWorkersCut(fraction: Double, fleets: [EngineFleet], port: UInt16) throws -> EngineResult {
        let engine = try EngineSharedSubscriptionTests.engine(fleets, port: port)
        return EngineFaultTests.run(engine, duration: 3_300_000_000, afterPublished: 100) { engine in
            _ = try? engine.tunnel(fleet: "workers", fraction: fraction, outage: 400_000_000...400_000_000)
        }
    }

    @Test("every member offline for 0.4 s (clean sessions): the gap is missed while offline, not lost")
    func wholeGroupOffline() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let result = try Self.runWithWorkersCut(fraction: 1, fleets: Self.fleets(memberQoS: .atMostOnce), port: broker.port)
        let workers = try #require(result.fleets["workers"])
        let group = workers.delivery[0]
        #expect(result.counters.published[.atMostOnce] == 600)
        #expect(workers.counters.disconnects[.tunnel] == 2)
        #expect(workers.counters.reconnects == 2)
        // Before: the group expected all 600 and counted the 0.4 s gap (about 80 messages) as lost.
        #expect(group.expected + group.missedWhileOffline == 600)
        // 0.4 s of 2 x 100 msg/s is 80 nominally; a loaded machine publishes fewer in that time (catch-up).
        #expect(group.missedWhileOffline >= 30)
        #expect(group.duplicated == 0)
        #expect(group.unexpected == 0)
        #expect(group.unique + group.lost == group.expected)
        #expect(group.received == workers.counters.received[.atMostOnce])
        // Only what was in a socket when the links were cut can be lost.
        #expect(group.lost <= 2)
        // The members came back and the group is owed again: 0.5 s before the cut and about 2 s after it.
        #expect(group.expected >= 400)
    }

    @Test("one of two members offline: the other is entitled throughout, so the group is owed everything")
    func oneMemberOffline() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let result = try Self.runWithWorkersCut(fraction: 0.5, fleets: Self.fleets(memberQoS: .atMostOnce), port: broker.port)
        let workers = try #require(result.fleets["workers"])
        let group = workers.delivery[0]
        #expect(workers.counters.disconnects[.tunnel] == 1)
        #expect(group.expected == 600)
        #expect(group.missedWhileOffline == 0)
        #expect(group.duplicated == 0)
        #expect(group.unique + group.lost == 600)
        #expect(group.lost <= 1)
    }

    @Test("every member offline for 0.4 s with persistent QoS 1 sessions: the broker queues, the group is owed everything")
    func wholeGroupOfflinePersistent() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var fleets = Self.fleets(memberQoS: .atLeastOnce)
        fleets[0].session = MQTTSessionSettings(version: .v5, cleanStart: false, keepAliveSeconds: 30,
                                                sessionExpiryInterval: 300)
        fleets[1].streams[0].qos = .atLeastOnce
        let result = try Self.runWithWorkersCut(fraction: 1, fleets: fleets, port: broker.port)
        let workers = try #require(result.fleets["workers"])
        let group = workers.delivery[1]
        #expect(result.counters.published[.atLeastOnce] == 600)
        #expect(workers.counters.disconnects[.tunnel] == 2)
        #expect(workers.counters.reconnects == 2)
        #expect(group.expected == 600)
        #expect(group.missedWhileOffline == 0)
        #expect(group.unique == 600)
        #expect(group.lost == 0)
    }

    @Test("deliveries to a group held in a frozen broker past the end of publishing: the drain waits for them")
    func drainWaitsForGroup() throws {
        let broker = try MosquittoBroker()
        let pid = try #require(broker.pid)
        defer {
            kill(pid, SIGCONT)
            broker.stop()
        }
        var fleets = Self.fleets(memberQoS: .atMostOnce)
        fleets[1].count = 1
        fleets[1].streams[0].plan = .rate(perSecond: 1000)
        fleets[1].streams[0].messageLimit = 100
        // Two lanes: the members sit on both, so what the group is owed is counted across lanes.
        let engine = try EngineSharedSubscriptionTests.engine(fleets, port: broker.port)
        engine.onPublishStart = {
            kill(pid, SIGSTOP)
            TestThread.after(.milliseconds(700)) { kill(pid, SIGCONT) }
        }
        let result = engine.run(duration: 300_000_000)
        let group = try #require(result.fleets["workers"]).delivery[0]
        #expect(result.counters.published[.atMostOnce] == 100)
        // No ack is awaited at QoS 0: the drain used to end 100 ms after the last arrival and count all 100 lost.
        #expect(group.expected == 100)
        #expect(group.unique == 100)
        #expect(group.lost == 0)
        let drain = result.phases.drainEnd &- result.phases.publishEnd
        #expect(drain >= 300_000_000)
        #expect(drain < 1_000_000_000)
    }

    @Test("the union of members' windows: overlapping and touching windows merge, empty ones drop")
    func windowUnion() {
        let windows = [EntitlementWindow(start: 10, end: 20), EntitlementWindow(start: 0, end: 5),
                       EntitlementWindow(start: 15, end: 30), EntitlementWindow(start: 30, end: 31),
                       EntitlementWindow(start: 40, end: 40), EntitlementWindow(start: 50, end: 60)]
        #expect(Engine.union(windows) == [EntitlementWindow(start: 0, end: 5), EntitlementWindow(start: 10, end: 31),
                                          EntitlementWindow(start: 50, end: 60)])
        #expect(Engine.union([]) == [])
    }
}

/// Which clients are accounted as a shared group (no broker needed).
@Suite("Engine: shared-subscription group of a client")
struct SharedGroupOfClientTests {
    static func subscriptions(_ filters: [String]) -> [MQTTSubscription] {
        filters.map { MQTTSubscription(filter: $0, qos: .atLeastOnce) }
    }

    @Test("only clients whose subscriptions are all shared, of one group, belong to a group")
    func membership() {
        let both = Engine.sharedGroup(of: Self.subscriptions(["$share/g/a/+", "$share/g/b/#"]))
        #expect(both?.group == "g")
        #expect(both?.filters == ["a/+", "b/#"])
        #expect(Engine.sharedGroup(of: Self.subscriptions(["$share/g/a/+", "a/plain"])) == nil)
        #expect(Engine.sharedGroup(of: Self.subscriptions(["$share/g/a/+", "$share/h/a/+"])) == nil)
        #expect(Engine.sharedGroup(of: Self.subscriptions(["a/+"])) == nil)
        #expect(Engine.sharedGroup(of: []) == nil)
        // Not a valid shared filter (empty group): a plain filter to the engine, accounted per client.
        #expect(Engine.sharedGroup(of: Self.subscriptions(["$share//a"])) == nil)
    }

    @Test("group keys never equal a client's key")
    func keySpaces() {
        #expect(Engine.groupDeliveryKey(0) == UInt64(1) << 63)
        #expect(Engine.groupDeliveryKey(5) == UInt64(1) << 63 | UInt64(5) << 32)
        #expect(Engine.subscriberDeliveryKey(5) == UInt64(5) << 32)
        #expect(Engine.subscriberDeliveryKey(Int(Int32.max)) & Engine.groupKeyTag == 0)
    }
}
