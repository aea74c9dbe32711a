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

/// Network faults between the clients and a real mosquitto, made by a relaying proxy (`FaultProxy`): connections
/// reset by the network, and connections that go silent without FIN (half-open). Exact counts.
@Suite("Engine through a faulty network", .serialized)
struct EngineProxyFaultTests {
    static func run(_ engine: Engine, duration: UInt64, fault: @escaping @Sendable () -> Void) -> EngineResult {
        let faulted = DispatchGroup()
        faulted.enter()
        TestThread.start {
            if EngineWillTests.waitUntilReady(engine) { fault() }
            faulted.leave()
        }
        let result = engine.run(duration: duration)
        _ = faulted.wait(timeout: .now() + .seconds(10))
        return result
    }

    @Test("a network that resets every second car of 10: exactly 5 resets seen, 5 reconnects, 5 wills")
    func resetFraction() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let proxy = try FaultProxy(upstreamPort: broker.port)
        defer { proxy.stop() }
        let will = MQTTWill(topic: "wills/car", payload: Array("offline".utf8), qos: .atLeastOnce)
        let cars = EngineFleet(
            name: "cars", count: 10, clientID: { "rst-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30, will: will),
            reconnect: .immediateThenInterval(retries: 5, interval: 4_000_000_000))
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "rst-backend-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30),
            subscriptions: { _, _ in [MQTTSubscription(filter: "wills/#", qos: .atLeastOnce)] })
        let configuration = EngineConfiguration(
            fleets: [backend, cars], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: proxy.port)],
            lanes: 2, seed: 11, readyTimeout: 5_000_000_000, drainTimeout: 1_000_000_000)
        let engine = try Engine(configuration: configuration)
        let resets = SharedCount()
        let result = Self.run(engine, duration: 1_500_000_000) {
            // Every second car: rst-0, rst-2, ... rst-8.
            resets.set(proxy.reset { id in id.hasPrefix("rst-") && Int(id.dropFirst(4)).map { $0 % 2 == 0 } == true })
        }
        #expect(resets.value == 5)
        let carResult = try #require(result.fleets["cars"])
        let backendResult = try #require(result.fleets["backend"])
        #expect(carResult.counters.disconnects == [.socketError(errno: ECONNRESET): 5, .clientInitiated: 10],
                "\(carResult.counters.disconnects)")
        #expect(carResult.counters.reconnects == 5)
        #expect(carResult.counters.connectsSucceeded == 15)
        #expect(carResult.counters.connectsFailed == 0)
        #expect(backendResult.counters.disconnects == [.clientInitiated: 1])
        // mosquitto saw 5 connections end without DISCONNECT: 5 wills. No fleetbench header: they arrived,
        // as foreign, and are not this run's messages received.
        #expect(backendResult.counters.arrived[.atLeastOnce] == 5)
        #expect(backendResult.counters.foreignMessages == 5)
        #expect(backendResult.counters.received.total == 0)
        #expect(proxy.accepted == 16)
    }

    @Test("half-open connections (silent, no FIN) are found by keepalive within 1.5 x keepalive and reconnect")
    func halfOpen() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let proxy = try FaultProxy(upstreamPort: broker.port)
        defer { proxy.stop() }
        // Keepalive 2 s, PINGRESP deadline 0.8 s: a silent peer is noticed at most 2 s + 0.8 s after it went
        // silent (the next PINGREQ is due at most one keepalive later), under 1.5 x keepalive = 3 s.
        let settings = MQTTSessionSettings(
            version: .v5, keepAliveSeconds: 2, timeouts: MQTTAckTimeouts(pingResp: 800_000_000))
        let fleet = EngineFleet(name: "idle", count: 6, clientID: { "half-\($0)" }, session: settings,
                                reconnect: .immediateThenInterval(retries: 5, interval: 1_000_000_000))
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: proxy.port)],
            lanes: 2, seed: 5, readyTimeout: 5_000_000_000, drainTimeout: 500_000_000)
        let engine = try Engine(configuration: configuration)
        let silenced = SharedCount()
        let result = Self.run(engine, duration: 4_500_000_000) { silenced.set(proxy.silence(3)) }
        #expect(silenced.value == 3)
        let counters = result.counters
        #expect(counters.ackTimeouts[.pingresp] == 3)
        #expect(counters.disconnects == [.ackTimeout(.pingresp): 3, .clientInitiated: 6], "\(counters.disconnects)")
        #expect(counters.reconnects == 3)
        #expect(counters.connectsSucceeded == 9)
        let detected = proxy.silentUntilClientClosed
        #expect(detected.count == 3)
        for nanoseconds in detected {
            let seconds = Double(try #require(nanoseconds, "a silent connection was never given up")) / 1e9
            #expect(seconds >= 0.8, "given up \(seconds) s after going silent: before its PINGRESP deadline")
            #expect(seconds < 3.0, "given up \(seconds) s after going silent: beyond 1.5 x keepalive")
        }
    }
    @Test("a broker that closes every connection right after CONNACK (4 times): 4 closed by peer, 4 reconnects")
    func closedAfterConnack() throws {
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .connect = packet, connection < 4 { return [.send(.connAck(MQTTConnAck())), .close] }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let fleet = EngineFleet(name: "dropped", count: 2, clientID: { "dropped-\($0)" },
                                session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30),
                                reconnect: .immediateThenInterval(retries: 5, interval: 100_000_000))
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 2, readyTimeout: 3_000_000_000, drainTimeout: 0)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        let counters = result.counters
        #expect(broker.connectionCount == 6)
        #expect(counters.connectsAttempted == 6)
        #expect(counters.connectsSucceeded == 6)
        #expect(counters.connectsFailed == 0)
        #expect(counters.disconnects == [.closedByPeer: 4, .clientInitiated: 2], "\(counters.disconnects)")
        #expect(counters.reconnects == 4)
    }

    @Test("a slow network (each chunk 50 ms late both ways): every message arrives, no timeout, latencies >= 100 ms")
    func slowNetwork() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let proxy = try FaultProxy(upstreamPort: broker.port, delay: 50_000_000)
        defer { proxy.stop() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        let subscriber = EngineFleet(
            name: "backend", count: 1, clientID: { "slow-sub-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "slow/+", qos: .atLeastOnce)] })
        let stream = EngineStream(topic: { index, _ in "slow/\(index)" }, qos: .atLeastOnce,
                                  plan: .rate(perSecond: 10), payloadSize: 64, messageLimit: 15)
        let publishers = EngineFleet(name: "cars", count: 2, clientID: { "slow-pub-\($0)" }, session: settings,
                                     streams: [stream])
        let configuration = EngineConfiguration(
            fleets: [subscriber, publishers], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: proxy.port)],
            lanes: 2, readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 2_000_000_000)
        let counters = result.counters
        #expect(counters.published.total == 30)
        #expect(counters.received.total == 30)
        #expect(counters.acked.total == 30)
        #expect(counters.ackTimeouts.total == 0)
        #expect(counters.connectsSucceeded == 3)
        #expect(counters.disconnects == [.clientInitiated: 3])
        // CONNECT out and CONNACK back, PUBLISH out and PUBACK back, PUBLISH to the broker and on to the
        // subscriber: each crosses the proxy twice.
        for (kind, origin) in [(LatencyKind.connect, LatencyOrigin.sent), (.puback, .sent), (.endToEnd, .sent)] {
            let histogram = result.latency.histogram(kind, from: origin)
            #expect(histogram.totalCount > 0, "\(kind)")
            #expect(histogram.min >= 99_000, "\(kind): min \(histogram.min) µs")
        }
    }
}
