import FleetBroker
import FleetMetrics
import FleetTestSupport
import Glibc
@testable import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Reads through io_uring (`EngineConfiguration.ringReceives`: multishot receives into provided buffers) and through
/// epoll + recv(2): the same exact counts either way, and epoll wherever the kernel refuses io_uring.
@Suite("Engine receive paths", .serialized)
struct EngineReceiveRingTests {
    static let ringAvailable = (try? ReceiveRing(entries: 8, buffers: 8, bufferSize: 256)) != nil

    @Test("both receive paths, io_uring and epoll + recv, deliver every message exactly once",
          arguments: [true, false], [
              (MQTTProtocolVersion.v3_1_1, MQTTQoS.atMostOnce), (.v3_1_1, .atLeastOnce), (.v5, .exactlyOnce),
          ])
    func roundTripOnEitherReceivePath(ring: Bool, variant: (MQTTProtocolVersion, MQTTQoS)) throws {
        let (version, qos) = variant
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = EngineConfiguration(
            fleets: EngineTests.fleets(version: version, qos: qos, publishers: 3, messages: 200, subscribers: 2),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            drainTimeout: 3_000_000_000)
        configuration.ringReceives = ring
        let engine = try Engine(configuration: configuration)
        #expect(engine.lanes.allSatisfy { ($0.receiveRing != nil) == (ring && Self.ringAvailable) })
        let result = engine.run(duration: 1_000_000_000)
        EngineTests.expectExactRoundTrip(result, qos: qos)
        #expect(result.counters.ackTimeouts.total == 0)
        #expect(result.counters.connectFailures.isEmpty)
        #expect(result.counters.disconnects == [.clientInitiated: 5])
        #expect(result.receivePath == (ring && Self.ringAvailable ? .ioUring : .epoll))
        #expect(result.receiveRingUnavailable == nil)
        if ring && Self.ringAvailable {
            // Every byte the clients read came through the ring: the lanes' completions carried them all.
            let received = engine.lanes.reduce(0) { $0 + ($1.receiveRing?.receivedBytes ?? 0) }
            #expect(received == result.counters.bytesIn)
        }
    }

    /// The dispatch-source driver has no thread of its own to wait in io_uring_enter: it reads with epoll.
    @Test("the dispatch-source lane driver reads with epoll even when the ring is asked for")
    func dispatchSourceDriverReadsWithEpoll() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = EngineConfiguration(
            fleets: EngineTests.fleets(version: .v3_1_1, qos: .atLeastOnce, publishers: 3, messages: 200, subscribers: 2),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            drainTimeout: 3_000_000_000)
        configuration.ringReceives = true
        configuration.laneDriver = .dispatchSource
        let engine = try Engine(configuration: configuration)
        #expect(engine.lanes.allSatisfy { $0.receiveRing == nil && $0.receiveRingError == nil })
        let result = engine.run(duration: 1_000_000_000)
        EngineTests.expectExactRoundTrip(result, qos: .atLeastOnce)
        #expect(result.receivePath == .epoll)
    }

    @Test("where the kernel forbids io_uring or has none, the engine reads with epoll + recv, says why, and loses nothing",
          arguments: [
              (EPERM, "io_uring_setup failed: Operation not permitted (errno 1)"),
              (ENOSYS, "io_uring_setup failed: Function not implemented (errno 38)"),
          ])
    func unavailableRingFallsBackToEpoll(code: Int32, reason: String) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = EngineConfiguration(
            fleets: EngineTests.fleets(version: .v5, qos: .exactlyOnce, publishers: 3, messages: 200, subscribers: 2),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            drainTimeout: 3_000_000_000)
        configuration.ringReceives = true
        let (engine, filteredThreadsLeft) = try ThreadWithoutIOURing.run(failingWith: code) {
            try Engine(configuration: configuration)
        }
        #expect(filteredThreadsLeft == 0)
        #expect(engine.lanes.allSatisfy {
            $0.receiveRing == nil && $0.receiveRingError == SystemError(call: "io_uring_setup", errno: code)
        })
        let result = engine.run(duration: 1_000_000_000)
        EngineTests.expectExactRoundTrip(result, qos: .exactlyOnce)
        #expect(result.counters.connectFailures.isEmpty)
        #expect(result.counters.disconnects == [.clientInitiated: 5])
        #expect(result.receivePath == .epoll)
        #expect(result.receiveRingUnavailable == reason)
    }

    /// A broker that writes every packet one byte at a time (CONNACK, SUBACK, then five QoS 1 PUBLISH packets with
    /// this run's end-to-end header): each receive completion may hold a piece of a packet, and the client must
    /// keep the pieces until a packet is whole, on either receive path.
    @Test("packets split at every byte are put back together on either receive path", arguments: [true, false])
    func packetsSplitAtEveryByte(ring: Bool) throws {
        let runID: UInt64 = 0x5EED_0018
        let messages = 5
        let topic = "cmd/0"
        // Everything the broker sends, one byte per send(2).
        let fakeBroker = try FakeBroker(behaviour: { _, packet, version in
            let answer: [UInt8]
            switch packet {
            case .connect:
                answer = MQTTPacket.connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success)).encoded(version: version)
            case .subscribe(let subscribe):
                answer = MQTTPacket.subAck(MQTTSubAck(packetID: subscribe.packetID, reasonCodes: [.grantedQoS1]))
                    .encoded(version: version)
            default:
                return FakeBroker.standardResponse(0, packet, version)
            }
            var actions: [FakeBrokerAction] = []
            for byte in answer { actions.append(.sendBytes([byte])) }
            return actions
        })
        defer { fakeBroker.stop() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0)
        let fleet = EngineFleet(name: "vehicles", count: 1, clientID: { "car-\($0)" }, session: settings,
                                subscriptions: { _, _ in [MQTTSubscription(filter: topic, qos: .atLeastOnce)] })
        var configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: fakeBroker.port)], lanes: 1,
            readyTimeout: 5_000_000_000, drainTimeout: 1_000_000_000)
        configuration.runID = runID
        configuration.ringReceives = ring
        let engine = try Engine(configuration: configuration)
        var bytes: [UInt8] = []
        for sequence in 0..<messages {
            var payload: [UInt8] = []
            EndToEndHeader(streamID: 9, sequence: UInt64(sequence), intendedTime: MonotonicClock.now(), runID: runID)
                .appendBinary(to: &payload)
            payload += Array(repeating: UInt8(0x41 + sequence), count: 12)
            let publish = MQTTPublish(topic: topic, payload: payload, qos: .atLeastOnce, packetID: UInt16(sequence + 1))
            bytes += MQTTPacket.publish(publish).encoded(version: .v3_1_1)
        }
        let toSend = bytes
        // Each byte once the lane has read the one before (its bytes-in count moved): every byte its own read.
        engine.onPublishStart = {
            TestThread.start {
                let lane = engine.lanes[0]
                let bytesIn = { lane.queue.sync { lane.metrics.counters.bytesIn } }
                for byte in toSend {
                    let before = bytesIn()
                    _ = fakeBroker.send(.sendBytes([byte]), toConnection: 0)
                    EventWait.until(seconds: 5, interval: 0.0002) { bytesIn() > before }
                }
            }
        }
        let pubAcks: @Sendable () -> Int = { fakeBroker.receivedPackets.filter { if case .pubAck = $0.packet { true } else { false } }.count }
        let result = engine.run(duration: 5_000_000_000, shouldStop: { pubAcks() == messages })
        #expect(result.counters.received.qos1 == UInt64(messages))
        // Each once, timed: an untracked stream (no publisher of this run) counts no delivery, only latency.
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == UInt64(messages))
        let acked = fakeBroker.receivedPackets.compactMap { entry -> UInt16? in
            if case .pubAck(let ack) = entry.packet { return ack.packetID } else { return nil }
        }
        #expect(acked == [1, 2, 3, 4, 5])
        #expect(result.counters.disconnects[.protocolError] == nil)
        #expect(result.receivePath == (ring && Self.ringAvailable ? .ioUring : .epoll))
        if ring && Self.ringAvailable {
            // More completions than packets (7): pieces of packets arrived apart and were joined.
            let completions = engine.lanes[0].receiveRing?.receiveCompletions ?? 0
            #expect(completions > 7)
        }
    }

    /// The end of a run closes every connection the ring reads, seen by the peer while the engine is still held:
    /// a receive keeps its socket open in the kernel until the receive ends, and on a deferred ring the cancels of
    /// the engine's stop end the receives only in task work the lane's thread runs. Before that thread ran it on
    /// its way out, the peer waited its 10 s for an end that came only when the lane was released.
    @Test("the end of a run closes the ring's connections at the peer at once, deferred task work or not",
          .enabled(if: ringAvailable), arguments: [false, true])
    func runEndClosesRingConnections(deferred: Bool) throws {
        let peer = try StallingPeer(connections: 4)
        peer.release()
        let fleet = EngineFleet(name: "idle", count: 4, clientID: { "end-\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30))
        var configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: peer.port)], lanes: 1,
            drainTimeout: 500_000_000)
        configuration.ringReceives = true
        configuration.ringDeferredTaskRun = deferred
        let engine = try Engine(configuration: configuration)
        #expect(engine.lanes.allSatisfy { $0.receiveRing?.ring.isDeferred == deferred })
        let result = engine.run(duration: 300_000_000)
        let outcome = try #require(peer.outcome())
        #expect(outcome.problems == [])
        #expect(outcome.disconnects == 4)
        #expect(result.counters.disconnects == [.clientInitiated: 4])
        #expect(result.receivePath == .ioUring)
        withExtendedLifetime(engine) {}
    }

    /// Resets of connections the ring reads, all at once on one lane: each reset socket shows EPOLLERR | EPOLLHUP in
    /// the lane's epoll set until its receive's completion ends it. A deferred ring posts that completion only when
    /// the lane's thread enters the kernel for it; a thread that ran turn after turn on those epoll events never did,
    /// and the resets that came while it was busy were seen only at the end of the run (3-4 of 5 cars reconnected).
    @Test("connections the ring reads, reset together: every reset seen at once and every car reconnects, deferred task work or not",
          .enabled(if: ringAvailable), arguments: [false, true])
    func resetsSeenThroughRing(deferred: Bool) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let proxy = try FaultProxy(upstreamPort: broker.port)
        defer { proxy.stop() }
        let cars = EngineFleet(
            name: "cars", count: 20, clientID: { "ring-rst-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30),
            reconnect: .immediateThenInterval(retries: 5, interval: 4_000_000_000))
        var configuration = EngineConfiguration(
            fleets: [cars], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: proxy.port)], lanes: 1,
            seed: 3, readyTimeout: 5_000_000_000, drainTimeout: 1_000_000_000)
        configuration.ringReceives = true
        configuration.ringDeferredTaskRun = deferred
        let engine = try Engine(configuration: configuration)
        #expect(engine.lanes.allSatisfy { $0.receiveRing?.ring.isDeferred == deferred })
        let resets = SharedCount()
        let result = EngineProxyFaultTests.run(engine, duration: 1_500_000_000) {
            resets.set(proxy.reset { id in Int(id.dropFirst("ring-rst-".count)).map { $0 % 2 == 0 } == true })
        }
        #expect(resets.value == 10)
        #expect(result.counters.disconnects == [.socketError(errno: ECONNRESET): 10, .clientInitiated: 20],
                "\(result.counters.disconnects)")
        #expect(result.counters.reconnects == 10)
        #expect(result.counters.connectsSucceeded == 30)
        #expect(proxy.accepted == 30)
        #expect(result.receivePath == .ioUring)
    }
}
