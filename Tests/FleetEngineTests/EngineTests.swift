import FleetBroker
import FleetMetrics
import FleetTestSupport
import Glibc
@testable import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// The engine against a real mosquitto: exact counts for every QoS and version.
@Suite("Engine against mosquitto", .serialized)
struct EngineTests {
    static func fleets(version: MQTTProtocolVersion, qos: MQTTQoS, publishers: Int, messages: UInt64,
                       subscribers: Int, window: UInt16 = 32) -> [EngineFleet] {
        let settings = MQTTSessionSettings(version: version, keepAliveSeconds: 30, inFlightWindow: window)
        let subscriberFleet = EngineFleet(
            name: "subscribers", count: subscribers, clientID: { "sub-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "bench/+/data", qos: .exactlyOnce)] })
        let stream = EngineStream(
            topic: { index, _ in "bench/\(index)/data" }, qos: qos,
            plan: .rate(perSecond: 1000), payloadSize: 64, messageLimit: messages)
        let publisherFleet = EngineFleet(
            name: "publishers", count: publishers, clientID: { "pub-\($0)" }, session: settings, streams: [stream])
        return [subscriberFleet, publisherFleet]
    }

    /// What a run of `fleets(publishers: 3, messages: 200, subscribers: 2)` must show on any transport: 5 clients
    /// connected, 600 messages published (and acked at QoS 1/2), each received by both subscribers exactly once.
    static func expectExactRoundTrip(_ result: EngineResult, qos: MQTTQoS) {
        let level = qos
        #expect(result.counters.connectsAttempted == 5)
        #expect(result.counters.connectsSucceeded == 5)
        #expect(result.counters.published[level] == 600)
        #expect(result.counters.received[level] == 1200)
        if qos != .atMostOnce { #expect(result.counters.acked[level] == 600) }
        let delivery = result.delivery[Int(qos.rawValue)]
        #expect(delivery.expected == 1200)
        #expect(delivery.unique == 1200)
        #expect(delivery.lost == 0)
        #expect(delivery.duplicated == 0)
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == 1200)
    }

    @Test("QoS round trips deliver every message exactly once", arguments: [
        (MQTTProtocolVersion.v3_1_1, MQTTQoS.atMostOnce), (.v3_1_1, .atLeastOnce), (.v3_1_1, .exactlyOnce),
        (.v5, .atMostOnce), (.v5, .atLeastOnce), (.v5, .exactlyOnce),
    ])
    func roundTrip(version: MQTTProtocolVersion, qos: MQTTQoS) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let configuration = EngineConfiguration(
            fleets: Self.fleets(version: version, qos: qos, publishers: 3, messages: 200, subscribers: 2),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            drainTimeout: 3_000_000_000)
        let engine = try Engine(configuration: configuration)
        let result = engine.run(duration: 1_000_000_000)
        Self.expectExactRoundTrip(result, qos: qos)
        #expect(result.latency.histogram(.connect, from: .sent).totalCount == 5)
        #expect(result.latency.histogram(.subscribe, from: .sent).totalCount == 2)
        #expect(result.counters.ackTimeouts.total == 0)
    }

    /// The end-of-turn writes go out through the lane's io_uring (`batchedSends`, when more than one connection
    /// is dirty in a turn) or one send(2) per connection: the same exact counts either way. One lane holds all 5
    /// clients, so publishers and acking subscribers are dirty in the same turns and the ring carries batches.
    @Test("both write paths, io_uring batches and send(2), deliver every message exactly once",
          arguments: [true, false], [MQTTQoS.atMostOnce, .atLeastOnce, .exactlyOnce])
    func roundTripOnEitherWritePath(batchedSends: Bool, qos: MQTTQoS) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = try Self.roundTripConfiguration(broker, qos: qos, lanes: 1)
        configuration.batchedSends = batchedSends
        let engine = try Engine(configuration: configuration)
        // The ring exists only when asked for and the kernel allows it.
        let rings = engine.lanes.map(\.sendRing)
        #expect(rings.allSatisfy { ($0 != nil) == (batchedSends && Self.ioUringAvailable) })
        let result = engine.run(duration: 1_000_000_000)
        Self.expectExactRoundTrip(result, qos: qos)
        #expect(result.counters.ackTimeouts.total == 0)
        #expect(result.counters.disconnects == [.clientInitiated: 5])
        // No submission failed: a failed one would have closed the ring and sent the rest with send(2).
        #expect(rings.allSatisfy { $0?.isUsable ?? true })
        #expect(result.sendPath == (batchedSends && Self.ioUringAvailable ? .ioUring : .send))
        #expect(result.sendRingUnavailable == nil)
    }

    /// A ring the kernel stops taking (here: its descriptor gone) must lose nothing: the refused sends go out by
    /// send(2), the lane keeps writing that way, and the result says both paths were used.
    @Test("a refused io_uring submission falls back to send(2) and loses nothing",
          .enabled(if: ioUringAvailable), arguments: [MQTTQoS.atMostOnce, .exactlyOnce])
    func refusedSubmissionFallsBack(qos: MQTTQoS) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let engine = try Engine(configuration: try Self.roundTripConfiguration(broker, qos: qos, lanes: 1))
        let ring = try #require(engine.lanes[0].sendRing)
        ring.simulateKernelRefusal()  // before the first turn: the CONNECTs are the first batch refused
        let result = engine.run(duration: 1_000_000_000)
        Self.expectExactRoundTrip(result, qos: qos)
        #expect(result.counters.connectFailures.isEmpty)
        #expect(result.counters.disconnects == [.clientInitiated: 5])
        #expect(!ring.isUsable)
        #expect(result.sendPath == .mixed)
    }

    /// An engine built where io_uring_setup fails (a container's seccomp profile: EPERM; an old kernel: ENOSYS) has
    /// no rings: every lane writes with send(2), the result names the kernel's refusal, and nothing is lost.
    @Test("where the kernel forbids io_uring or has none, the engine writes with send(2), says why, and loses nothing",
          arguments: [
              (EPERM, "io_uring_setup failed: Operation not permitted (errno 1)"),
              (ENOSYS, "io_uring_setup failed: Function not implemented (errno 38)"),
          ])
    func unavailableRingFallsBack(code: Int32, reason: String) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let configuration = try Self.roundTripConfiguration(broker, qos: .exactlyOnce, lanes: 2)
        #expect(configuration.batchedSends)
        // Built on a thread without io_uring (the lanes open their rings in the engine's initializer), run here.
        let (engine, filteredThreadsLeft) = try ThreadWithoutIOURing.run(failingWith: code) {
            try Engine(configuration: configuration)
        }
        #expect(filteredThreadsLeft == 0)
        #expect(engine.lanes.count == 2)
        #expect(engine.lanes.allSatisfy { $0.sendRing == nil && $0.sendRingError == SystemError(call: "io_uring_setup", errno: code) })
        let result = engine.run(duration: 1_000_000_000)
        Self.expectExactRoundTrip(result, qos: .exactlyOnce)
        #expect(result.counters.connectFailures.isEmpty)
        #expect(result.counters.disconnects == [.clientInitiated: 5])
        #expect(result.sendPath == .send)
        #expect(result.sendRingUnavailable == reason)
    }

    static let ioUringAvailable = (try? SendRing(capacity: 2)) != nil

    /// 3 publishers × 200 messages at `qos` and 2 subscribers over MQTT 5: the round trip `expectExactRoundTrip`
    /// checks.
    static func roundTripConfiguration(_ broker: MosquittoBroker, qos: MQTTQoS, lanes: Int) throws -> EngineConfiguration {
        EngineConfiguration(
            fleets: fleets(version: .v5, qos: qos, publishers: 3, messages: 200, subscribers: 2),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: lanes,
            drainTimeout: 3_000_000_000)
    }
}
