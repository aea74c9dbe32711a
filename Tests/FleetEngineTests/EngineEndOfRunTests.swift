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

/// The end of a run against a real mosquitto frozen with SIGSTOP: what was due but never sent, what was sent and
/// never acknowledged, and acks that time out during the drain, each in exactly one counter.
@Suite("Engine end of run: drain, unacked and unsent at end", .serialized)
struct EngineEndOfRunTests {
    /// `publishers` clients, each with a window of `window` and `slots` QoS `qos` messages due within the first
    /// `slots` ms of publishing (1,000 a second).
    static func publishers(_ publishers: Int, qos: MQTTQoS, window: UInt16, slots: UInt64, payloadSize: Int = 64,
                           pubAck: UInt64, policy: MQTTAckTimeoutPolicy = .close) -> EngineFleet {
        let settings = MQTTSessionSettings(
            version: .v3_1_1, keepAliveSeconds: 0, inFlightWindow: window,
            timeouts: MQTTAckTimeouts(pubAck: pubAck, pubRec: pubAck, pubComp: pubAck), onAckTimeout: policy)
        let stream = EngineStream(topic: { index, _ in "frozen/\(index)" }, qos: qos, plan: .rate(perSecond: 1000),
                                  payloadSize: payloadSize, messageLimit: slots)
        return EngineFleet(name: "publishers", count: publishers, clientID: { "frozen-\($0)" }, session: settings,
                           streams: [stream])
    }

    /// Runs `fleet` against a mosquitto that is stopped (SIGSTOP) the moment publishing starts, and continued
    /// `resumeAfter` ns later (nil: after the run).
    static func runFrozen(_ fleet: EngineFleet, duration: UInt64, drain: UInt64,
                          resumeAfter: UInt64? = nil) throws -> EngineResult {
        let broker = try MosquittoBroker()
        let pid = try #require(broker.pid)
        defer {
            kill(pid, SIGCONT)
            broker.stop()
        }
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: 5_000_000_000, drainTimeout: drain)
        let engine = try Engine(configuration: configuration)
        engine.onPublishStart = {
            kill(pid, SIGSTOP)
            if let resumeAfter {
                TestThread.after(.nanoseconds(Int(resumeAfter))) { kill(pid, SIGCONT) }
            }
        }
        return engine.run(duration: duration)
    }

    @Test("a broker frozen while publishing: each window's messages are unacked at the end, the other due slots unsent")
    func frozenBrokerUnackedAndUnsent() throws {
        // 3 clients x 20 slots due within 20 ms; a window of 8 each; PUBACK deadline 10 s, drain 500 ms.
        let fleet = Self.publishers(3, qos: .atLeastOnce, window: 8, slots: 20, pubAck: 10_000_000_000)
        let result = try Self.runFrozen(fleet, duration: 300_000_000, drain: 500_000_000)
        #expect(result.counters.published.qos1 == 24)
        #expect(result.counters.acked.qos1 == 0)
        #expect(result.counters.ackTimeouts.total == 0)
        #expect(result.counters.unackedAtEnd == PerQoSCounts(qos1: 24))
        #expect(result.counters.unsentAtEnd == 3 * (20 - 8))
        #expect(result.fleets["publishers"]?.counters.unackedAtEnd == PerQoSCounts(qos1: 24))
        #expect(result.fleets["publishers"]?.counters.unsentAtEnd == 36)
        // Something was outstanding all along: the drain took its whole time.
        #expect(result.phases.drainEnd - result.phases.publishEnd >= 500_000_000)
    }

    @Test("deliveries held in a frozen broker past the end of publishing: the drain waits until every owed one arrived")
    func drainWaitsForOwedDeliveries() throws {
        let broker = try MosquittoBroker()
        let pid = try #require(broker.pid)
        defer {
            kill(pid, SIGCONT)
            broker.stop()
        }
        let session = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0)
        let stream = EngineStream(topic: { _, _ in "owed/0" }, qos: .atMostOnce, plan: .rate(perSecond: 1000),
                                  payloadSize: 64, messageLimit: 100)
        let publishers = EngineFleet(name: "publishers", count: 1, clientID: { "owed-pub-\($0)" }, session: session,
                                     streams: [stream])
        let subscribers = EngineFleet(name: "subscribers", count: 1, clientID: { "owed-sub-\($0)" }, session: session,
                                      subscriptions: { _, _ in [MQTTSubscription(filter: "owed/#", qos: .atMostOnce)] })
        let engine = try Engine(configuration: EngineConfiguration(
            fleets: [subscribers, publishers], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 1, readyTimeout: 5_000_000_000, drainTimeout: 5_000_000_000))
        // QoS 0: no ack is outstanding, and for 0.7 s nothing arrives. The drain used to end after 100 ms without
        // an arrival and count all 100 messages lost.
        engine.onPublishStart = {
            kill(pid, SIGSTOP)
            TestThread.after(.milliseconds(700)) { kill(pid, SIGCONT) }
        }
        let result = engine.run(duration: 300_000_000)
        #expect(result.counters.published[.atMostOnce] == 100)
        #expect(result.delivery[0].expected == 100)
        #expect(result.delivery[0].unique == 100)
        #expect(result.delivery[0].lost == 0)
        let drain = result.phases.drainEnd &- result.phases.publishEnd
        // It ended once the last one arrived, not after a quiet second or at its 5 s limit.
        #expect(drain >= 300_000_000)
        #expect(drain < 1_000_000_000)
    }

    @Test("QoS 2 in flight at the end counts as unacked at QoS 2")
    func frozenBrokerQoS2() throws {
        let fleet = Self.publishers(2, qos: .exactlyOnce, window: 5, slots: 9, pubAck: 10_000_000_000)
        let result = try Self.runFrozen(fleet, duration: 300_000_000, drain: 300_000_000)
        #expect(result.counters.published.qos2 == 10)
        #expect(result.counters.unackedAtEnd == PerQoSCounts(qos2: 10))
        #expect(result.counters.unsentAtEnd == 2 * (9 - 5))
    }

    @Test("acks whose deadline passes during the drain are ack timeouts, not unacked at end; the drain then stops early")
    func timeoutsDuringDrain() throws {
        let fleet = Self.publishers(3, qos: .atLeastOnce, window: 8, slots: 20, pubAck: 300_000_000, policy: .keepWaiting)
        let result = try Self.runFrozen(fleet, duration: 200_000_000, drain: 5_000_000_000)
        #expect(result.counters.published.qos1 == 24)
        #expect(result.counters.ackTimeouts.puback == 24)
        #expect(result.counters.ackTimeouts.total == 24)
        #expect(result.counters.unackedAtEnd == PerQoSCounts())
        #expect(result.counters.unsentAtEnd == 36)
        // Nothing was outstanding once every deadline had passed: the drain did not wait its 5 s.
        #expect(result.phases.drainEnd - result.phases.publishEnd < 4_000_000_000)
    }

    @Test("QoS 0 against a frozen broker: what the socket did not take is unsent at end, every slot accounted for")
    func frozenBrokerQoS0Unsent() throws {
        // 400 slots of 64 KiB (25.6 MB) due within 400 ms: far more than the loopback socket buffers hold.
        let fleet = Self.publishers(1, qos: .atMostOnce, window: 32, slots: 400, payloadSize: 65_536,
                                    pubAck: 10_000_000_000)
        let result = try Self.runFrozen(fleet, duration: 700_000_000, drain: 200_000_000)
        let published = result.counters.published.qos0
        #expect(published + result.counters.unsentAtEnd == 400)
        #expect(result.counters.unsentAtEnd > 0)
        #expect(result.counters.droppedSlots == 0)
        #expect(result.counters.unackedAtEnd == PerQoSCounts())
    }

    @Test("a message refused by a full window records its schedule lag at its actual send")
    func lagAtActualSend() throws {
        // Window 1: message 0 goes out, message 1 (due 1 ms later) waits for PUBACK 0, which the frozen broker
        // sends only once it is continued 500 ms later.
        let fleet = Self.publishers(1, qos: .atLeastOnce, window: 1, slots: 2, pubAck: 10_000_000_000)
        let result = try Self.runFrozen(fleet, duration: 1_000_000_000, drain: 2_000_000_000, resumeAfter: 500_000_000)
        #expect(result.counters.published.qos1 == 2)
        #expect(result.counters.acked.qos1 == 2)
        let lag = result.latency.histogram(.scheduleLag, from: .intended)
        #expect(lag.totalCount == 2)
        // Message 1 could not leave before the broker was continued: at least 500 ms - 1 ms after its slot.
        #expect(lag.max >= 400_000)
    }

    @Test("a client still not connected when publishing starts: its due slots are unsent at end, not in no counter")
    func neverConnectedSlotsUnsent() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        // Client 1 connects to a peer that never answers CONNECT: publishing starts at the ready timeout without
        // it, and its 20 slots (due within 20 ms) are never sent. Client 0 sends its 20.
        let silent = try TCPListener.listen(on: try SocketAddress(ipAddress: "127.0.0.1", port: 0), backlog: 4)
        defer { try? silent.close() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0)
        let stream = EngineStream(topic: { index, _ in "absent/\(index)" }, qos: .atMostOnce, plan: .rate(perSecond: 1000),
                                  payloadSize: 64, messageLimit: 20)
        let onConnect = EngineStream(topic: { index, _ in "absent/\(index)/hello" }, qos: .atMostOnce, plan: .onConnect,
                                     payloadSize: 64)
        let fleet = EngineFleet(name: "publishers", count: 2, clientID: { "absent-\($0)" }, session: settings,
                                streams: [stream, onConnect])
        let configuration = EngineConfiguration(
            fleets: [fleet],
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port),
                      try SocketAddress(ipAddress: "127.0.0.1", port: try silent.localAddress().port)],
            lanes: 1, readyTimeout: 300_000_000, drainTimeout: 100_000_000)
        let result = try Engine(configuration: configuration).run(duration: 300_000_000)
        // Client 0: 20 scheduled and its one on-connect message; client 1: nothing sent, 20 due and unsent (its
        // on-connect message was never due: it never connected).
        #expect(result.counters.published.qos0 == 21)
        #expect(result.counters.unsentAtEnd == 20)
        #expect(result.fleets["publishers"]?.counters.unsentAtEnd == 20)
        #expect(result.counters.droppedSlots == 0)
    }

    @Test("publishing starts from a fresh clock: an idle lane's first message has no stale lag")
    func freshClockAtPublishStart() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        // Client 1 connects to a peer that never answers CONNECT, so the start barrier waits for the ready
        // timeout (900 ms) while the lane has nothing to do after client 0's connect: no turn, no clock read.
        let silent = try TCPListener.listen(on: try SocketAddress(ipAddress: "127.0.0.1", port: 0), backlog: 4)
        defer { try? silent.close() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0)
        let stream = EngineStream(topic: { index, _ in "fresh/\(index)" }, qos: .atMostOnce, plan: .rate(perSecond: 1000),
                                  payloadSize: 64, messageLimit: 1)
        let fleet = EngineFleet(name: "publishers", count: 2, clientID: { "fresh-\($0)" }, session: settings,
                                streams: [stream])
        let configuration = EngineConfiguration(
            fleets: [fleet],
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port),
                      try SocketAddress(ipAddress: "127.0.0.1", port: try silent.localAddress().port)],
            lanes: 1, readyTimeout: 900_000_000, drainTimeout: 100_000_000)
        let result = try Engine(configuration: configuration).run(duration: 200_000_000)
        #expect(result.counters.published.qos0 == 1)
        let lag = result.latency.histogram(.scheduleLag, from: .intended)
        #expect(lag.totalCount == 1)
        // From the stale clock the message was due ~900 ms before publishing began.
        #expect(lag.max < 450_000)
    }
}
