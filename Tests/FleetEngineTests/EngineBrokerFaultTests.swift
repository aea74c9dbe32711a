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

/// The engine against a real mosquitto that dies and comes back, and connect pacing.
@Suite("Engine against a failing mosquitto", .serialized)
struct EngineBrokerFaultTests {
    /// Kills the broker `killAfter` ns from now on another thread, restarts it `downFor` ns later.
    static func killAndRestart(_ broker: MosquittoBroker, killAfter: UInt64, downFor: UInt64) -> DispatchGroup {
        let group = DispatchGroup()
        group.enter()
        TestThread.after(.nanoseconds(Int(killAfter))) {
            broker.kill()
            usleep(UInt32(downFor / 1000))
            try? broker.restart()
            group.leave()
        }
        return group
    }

    /// Policy "5 immediate retries, then every T". The broker is down for 0.5 s: each client's 5 immediate
    /// retries are refused within milliseconds (nothing listens), the 6th attempt, T later, finds the restarted
    /// broker. Per client: 1 first connect + 6 reconnect attempts, 5 of them refused, 2 succeeded.
    ///
    /// The subscriber retries every 1 s, the publishers every 1.5 s, so the subscriber is back (and has
    /// subscribed again) before any publisher resumes: publishers send nothing while disconnected (the slots
    /// that fell due wait in the schedule and are caught up on reconnect), so nothing published can be lost.
    @Test("clients reconnect with 5 immediate retries then every T after mosquitto is killed and restarted",
          arguments: [false, true])
    func reconnectAfterBrokerRestart(persistentSession: Bool) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let publishers = 3
        let settings = MQTTSessionSettings(version: .v3_1_1, cleanStart: !persistentSession, keepAliveSeconds: 30)
        let stream = EngineStream(topic: { index, _ in "restart/\(index)" }, qos: .atLeastOnce,
                                  plan: .rate(perSecond: 20))
        let subscriber = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "restart/+", qos: .atLeastOnce)] },
            reconnect: .immediateThenInterval(retries: 5, interval: 1_000_000_000))
        let fleet = EngineFleet(name: "mobile", count: publishers, clientID: { "mobile-\($0)" }, session: settings,
                                streams: [stream],
                                reconnect: .immediateThenInterval(retries: 5, interval: 1_500_000_000))
        let configuration = EngineConfiguration(
            fleets: [subscriber, fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 2, readyTimeout: 3_000_000_000, drainTimeout: 2_000_000_000)
        let engine = try Engine(configuration: configuration)
        // The connect phase is quick on loopback; the kill lands about 1 s into publishing.
        let killer = Self.killAndRestart(broker, killAfter: 1_000_000_000, downFor: 500_000_000)
        let result = engine.run(duration: 3_500_000_000)
        #expect(killer.wait(timeout: .now() + .seconds(10)) == .success)

        let counters = result.counters
        let n = UInt64(publishers + 1)
        #expect(counters.connectsAttempted == 7 * n)
        #expect(counters.connectsSucceeded == 2 * n)
        #expect(counters.reconnects == 6 * n)
        // Refused, except that an immediate retry racing mosquitto's death may still land in the listen backlog
        // while the process is torn down: the kernel then resets it (ECONNRESET) instead of refusing it.
        #expect(counters.connectsFailed == 5 * n)
        let refusedOrReset = (counters.connectFailures[.refused] ?? 0)
            + (counters.connectFailures[.socketError(errno: ECONNRESET)] ?? 0)
        #expect(refusedOrReset == 5 * n, "failures: \(counters.connectFailures)")
        // The kill surfaces as end of stream (FIN) or as a reset when mosquitto had unread bytes; either way
        // once per client. At the end every client is connected again and leaves with DISCONNECT.
        let lost = counters.disconnects.filter { $0.key != .clientInitiated }.values.reduce(0, +)
        #expect(lost == n)
        #expect(counters.disconnects[.clientInitiated] == n)
        #expect(counters.ackTimeouts.total == 0)
        // Subscribe latency is measured for the first subscription only. mosquitto runs without persistence, so
        // even a persistent session is gone after the restart (CONNACK: session not present) and
        // the lane subscribes again (its sessions keep no subscriptions): without that, every message after the
        // restart would count as lost below.
        #expect(result.latency.histogram(.subscribe, from: .sent).totalCount == 1)
        // A QoS 1 message in flight at the kill is abandoned (no session to retransmit it in); every other
        // message, including those that fell due during the outage, is acked and delivered exactly once.
        let published = counters.published[.atLeastOnce]
        #expect(counters.acked[.atLeastOnce] + result.counters.abandonedPublishes == published)
        let delivery = result.delivery[1]
        // The subscriber is owed what was published while it was subscribed. A PUBLISH written in the instant
        // between the subscriber's lane seeing the kill and the publisher's seeing it is owed to nobody (it is
        // missed_while_offline) and can only be one the kill abandoned.
        #expect(delivery.expected <= published)
        #expect(published - delivery.expected <= result.counters.abandonedPublishes,
                "published \(published), expected \(delivery.expected), abandoned \(result.counters.abandonedPublishes)")
        #expect(delivery.duplicated == 0)
        #expect(delivery.unique + delivery.lost == delivery.expected)
        #expect(delivery.lost <= result.counters.abandonedPublishes)
    }

    /// 200 clients at 100 connects/s (50/s on each of 2 lanes): the last connect starts 99 intervals of 20 ms
    /// after the first, so the connect phase takes at least 1.98 s. Only the lower bound is asserted.
    @Test("connect pacing: 200 clients at 100 connects/s take at least 1.9 s to connect")
    func connectPacing() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let settings = MQTTSessionSettings(version: .v5, keepAliveSeconds: 30)
        let fleet = EngineFleet(name: "paced", count: 200, clientID: { "paced-\($0)" }, session: settings,
                                connectRate: 100)
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 20_000_000_000, drainTimeout: 0)
        let engine = try Engine(configuration: configuration)
        let started = MonotonicClock.now()
        let result = engine.run(duration: 0)
        let elapsed = MonotonicClock.now() - started
        #expect(result.counters.connectsAttempted == 200)
        #expect(result.counters.connectsSucceeded == 200)
        #expect(result.latency.histogram(.connect, from: .sent).totalCount == 200)
        #expect(result.peakConnected == 200)
        #expect(elapsed >= 1_900_000_000, "connect phase took \(elapsed / 1_000_000) ms")
    }
}
