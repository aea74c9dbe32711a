import FleetBroker
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Synchronization
import Testing
@testable import FleetEngine

/// Snapshots once a second, the merged timeline, per-fleet results and phase times, against a real mosquitto.
@Suite("Engine timeline and per-fleet results", .serialized)
struct EngineTimelineTests {
    final class Collected: Sendable {
        let snapshots = Mutex<[EngineSnapshot]>([])
    }

    static func fleets(version: MQTTProtocolVersion) -> [EngineFleet] {
        let settings = MQTTSessionSettings(version: version, keepAliveSeconds: 30)
        let subscribers = EngineFleet(
            name: "subscribers", count: 1, clientID: { "sub-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "timeline/+/data", qos: .atLeastOnce)] })
        let stream = EngineStream(topic: { index, _ in "timeline/\(index)/data" }, qos: .atLeastOnce,
                                  plan: .rate(perSecond: 100), payloadSize: 64, messageLimit: 150)
        let publishers = EngineFleet(name: "publishers", count: 2, clientID: { "pub-\($0)" }, session: settings,
                                     streams: [stream])
        return [subscribers, publishers]
    }

    @Test("the timeline's last snapshot matches the totals; fleets are counted apart",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func timelineMatchesTotals(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let configuration = EngineConfiguration(
            fleets: Self.fleets(version: version),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        let engine = try Engine(configuration: configuration)
        let collected = Collected()
        engine.onSnapshot = { snapshot in collected.snapshots.withLock { $0.append(snapshot) } }
        let result = engine.run(duration: 2_000_000_000)
        let live = collected.snapshots.withLock { $0 }

        // The callback saw exactly what the result keeps, in order.
        #expect(live.map(\.t) == result.timeline.map(\.t))
        #expect(result.timeline.count == result.intervals.count)
        // Publishing lasted 2 s, so at least two whole seconds passed.
        #expect(result.timeline.count >= 3)
        #expect(zip(result.timeline, result.timeline.dropFirst()).allSatisfy { $0.t < $1.t })
        guard let last = result.timeline.last else { return }
        #expect(last.published == 300)
        #expect(last.received == 300)
        #expect(last.acked == 300)
        #expect(last.ackTimeouts == 0)
        #expect(last.connected == 0)
        #expect(last.counters == result.counters)
        #expect(last.fleets.map(\.name) == ["subscribers", "publishers"])
        #expect(last.fleets.map { $0.counters.published.total } == [0, 300])
        #expect(result.timeline.map(\.connected).max() == 3)

        // Interval latencies add up to the run's total: every message once.
        var endToEnd: UInt64 = 0
        for interval in result.intervals { endToEnd += interval.latencies.histogram(.endToEnd, from: .intended).totalCount }
        #expect(endToEnd == 300)
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == 300)
        #expect(result.latency.histogram(.puback, from: .intended).totalCount == 300)

        // Per fleet.
        let publishers = try #require(result.fleets["publishers"])
        let subscribers = try #require(result.fleets["subscribers"])
        #expect(publishers.counters.published[.atLeastOnce] == 300)
        #expect(publishers.counters.acked[.atLeastOnce] == 300)
        #expect(publishers.counters.received.total == 0)
        #expect(publishers.counters.connectsSucceeded == 2)
        #expect(publishers.latency.histogram(.puback, from: .intended).totalCount == 300)
        #expect(publishers.latency.histogram(.endToEnd, from: .intended).totalCount == 0)
        #expect(subscribers.counters.received[.atLeastOnce] == 300)
        #expect(subscribers.counters.published.total == 0)
        #expect(subscribers.latency.histogram(.endToEnd, from: .intended).totalCount == 300)
        #expect(subscribers.latency.histogram(.subscribe, from: .sent).totalCount == 1)
        #expect(subscribers.delivery[1].expected == 300)
        #expect(subscribers.delivery[1].unique == 300)
        #expect(subscribers.delivery[1].lost == 0)
        #expect(publishers.delivery[1].expected == 0)

        // Phases in order.
        let phases = result.phases
        let ready = try #require(phases.allReady)
        #expect(phases.connectStart == result.origin)
        #expect(phases.connectStart <= ready)
        #expect(ready <= phases.publishStart)
        #expect(phases.publishStart < phases.publishEnd)
        #expect(phases.publishEnd <= phases.drainEnd)
        #expect(phases.drainEnd <= phases.disconnectEnd)
    }

    @Test("without kept interval latencies the callback still gets them and the totals stay whole")
    func intervalsNotKept() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = EngineConfiguration(
            fleets: Self.fleets(version: .v5),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        configuration.keepsIntervalLatencies = false
        let engine = try Engine(configuration: configuration)
        let collected = Collected()
        engine.onSnapshot = { snapshot in collected.snapshots.withLock { $0.append(snapshot) } }
        let result = engine.run(duration: 2_000_000_000)
        let live = collected.snapshots.withLock { $0 }
        var seen: UInt64 = 0
        for snapshot in live { seen += snapshot.latency.histogram(.endToEnd, from: .intended).totalCount }
        #expect(seen == 300)
        #expect(result.intervals.isEmpty)
        #expect(result.timeline.count == live.count)
        #expect(result.timeline.allSatisfy { $0.latency.kindsWithSamples.isEmpty })
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == 300)
    }

    @Test("without a kept timeline the callback gets every second and the result holds none")
    func timelineNotKept() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = EngineConfiguration(
            fleets: Self.fleets(version: .v3_1_1),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        configuration.keepsIntervalLatencies = false
        configuration.keepsTimeline = false
        let engine = try Engine(configuration: configuration)
        let collected = Collected()
        engine.onSnapshot = { snapshot in collected.snapshots.withLock { $0.append(snapshot) } }
        let result = engine.run(duration: 2_000_000_000)
        let live = collected.snapshots.withLock { $0 }
        #expect(result.timeline.isEmpty)
        #expect(result.intervals.isEmpty)
        #expect(live.count >= 3)
        #expect(live.last?.published == 300)
        #expect(live.last?.received == 300)
        var seen = LatencyRecorder()
        for snapshot in live { seen.add(snapshot.latency) }
        #expect(seen.histogram(.endToEnd, from: .intended).recordedValues() == result.latency.histogram(.endToEnd, from: .intended).recordedValues())
        #expect(seen.histogram(.puback, from: .intended).recordedValues() == result.latency.histogram(.puback, from: .intended).recordedValues())
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == 300)
    }

    @Test("a ramp spreads a fleet's first connects from its start offset")
    func rampSchedule() throws {
        let settings = MQTTSessionSettings(version: .v5, keepAliveSeconds: 30)
        var ramped = EngineFleet(name: "ramped", count: 10, clientID: { "r-\($0)" }, session: settings)
        ramped.startOffset = 500_000_000
        ramped.ramp = .over(duration: 1_000_000_000)
        var rated = EngineFleet(name: "rated", count: 4, clientID: { "q-\($0)" }, session: settings)
        rated.ramp = .rate(perSecond: 8)
        var late = EngineFleet(name: "late", count: 2, clientID: { "l-\($0)" }, session: settings)
        late.startOffset = 2_000_000_000
        let configuration = EngineConfiguration(
            fleets: [ramped, rated, late], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1)], lanes: 3)
        let engine = try Engine(configuration: configuration)
        var times: [String: [UInt64]] = [:]
        for lane in engine.lanes {
            for client in lane.clients.indices {
                let fleet = engine.fleets[lane.clients[client].fleet].configuration.name
                let at = lane.firstConnectTime(client, origin: 1_000)
                times[fleet, default: []].append(at)
            }
        }
        let rampedExpected: [UInt64] = (0..<10).map { (position: UInt64) -> UInt64 in 500_001_000 + position * 100_000_000 }
        let ratedExpected: [UInt64] = (0..<4).map { (position: UInt64) -> UInt64 in 1_000 + position * 125_000_000 }
        let lateExpected: [UInt64] = [2_000_001_000, 2_000_001_000]
        #expect(times["ramped"]?.sorted() == rampedExpected)
        #expect(times["rated"]?.sorted() == ratedExpected)
        #expect(times["late"] == lateExpected)
    }

    @Test("a ramped fleet connects in full without the start barrier; nothing connects before its offset")
    func rampedRun() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var fleet = EngineFleet(name: "ramped", count: 10, clientID: { "ramp-\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30))
        fleet.startOffset = 1_200_000_000
        fleet.ramp = .over(duration: 500_000_000)
        var configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            drainTimeout: 1_000_000_000)
        configuration.waitForReady = false
        let engine = try Engine(configuration: configuration)
        let result = engine.run(duration: 2_500_000_000)
        #expect(result.counters.connectsSucceeded == 10)
        // The first second ended before the offset: nobody may have connected by then.
        let first = try #require(result.timeline.first)
        #expect(first.t == 1.0)
        #expect(first.connected == 0)
        #expect(first.counters.connectsAttempted == 0)
        #expect(result.timeline.map(\.connected).max() == 10)
    }
}
