import Dispatch
import FleetTestSupport
import Glibc
import FleetBroker
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Synchronization
import Testing
@testable import FleetEngine

/// Only this run's messages count, and a subscriber is owed only what was published while it was entitled:
/// other runs on the same broker, retained leftovers, late subscribers and offline gaps, against a real mosquitto.
@Suite("Run identity and entitlement against mosquitto", .serialized)
struct EngineRunIdentityTests {
    static func configuration(
        _ broker: MosquittoBroker, prefix: String, runID: UInt64, retain: Bool = false, qos: MQTTQoS = .atLeastOnce,
        messages: UInt64, perSecond: Double = 200, subscriberSession: MQTTSessionSettings? = nil,
        subscriberStart: UInt64 = 0, subscriptionQoS: MQTTQoS = .atLeastOnce
    ) throws -> EngineConfiguration {
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        var subscribers = EngineFleet(
            name: "subscribers", count: 1, clientID: { "\(prefix)-sub-\($0)" }, session: subscriberSession ?? settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "identity/+/data", qos: subscriptionQoS)] },
            reconnect: .immediateThenInterval(retries: 10, interval: 10_000_000))
        subscribers.startOffset = subscriberStart
        let stream = EngineStream(
            topic: { index, _ in "identity/\(index)/data" }, qos: qos, retain: retain,
            plan: .rate(perSecond: perSecond), payloadSize: 64, messageLimit: messages)
        let publishers = EngineFleet(
            name: "publishers", count: 2, clientID: { "\(prefix)-pub-\($0)" }, session: settings, streams: [stream])
        var configuration = EngineConfiguration(
            fleets: [subscribers, publishers], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 2, drainTimeout: 2_000_000_000)
        configuration.runID = runID
        return configuration
    }

    @Test("two runs at once on one broker: each counts only its own messages, the other's are foreign")
    func twoRunsAtOnce() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let first = try Engine(configuration: Self.configuration(broker, prefix: "a", runID: 0xA, messages: 100))
        let second = try Engine(configuration: Self.configuration(broker, prefix: "b", runID: 0xB, messages: 100))
        #expect(first.runID == 0xA)
        // The second run starts once the first one's subscriber is subscribed, and the first outlives it, so the
        // first run's subscriber sees every message of the second run.
        let secondResult = Mutex<EngineResult?>(nil)
        let secondDone = DispatchSemaphore(value: 0)
        first.onPublishStart = {
            TestThread.start {
                let result = second.run(duration: 700_000_000)
                secondResult.withLock { $0 = result }
                secondDone.signal()
            }
        }
        let firstResult = first.run(duration: 2_500_000_000)
        secondDone.wait()
        let other = try #require(secondResult.withLock { $0 })
        for result in [firstResult, other] {
            #expect(result.counters.published[.atLeastOnce] == 200)
            #expect(result.delivery[1].expected == 200)
            #expect(result.delivery[1].unique == 200)
            #expect(result.delivery[1].lost == 0)
            #expect(result.delivery[1].duplicated == 0)
            #expect(result.delivery[1].unexpected == 0)
            #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == 200)
        }
        #expect(firstResult.counters.foreignMessages == 200)
        // Received is the run's own messages; every arrival, the other run's too, is arrived.
        #expect(firstResult.counters.received[.atLeastOnce] == 200)
        #expect(firstResult.counters.arrived[.atLeastOnce] == 400)
        #expect(other.counters.received[.atLeastOnce] == 200)
        #expect(other.counters.arrived[.atLeastOnce] == 200 + other.counters.foreignMessages)
    }

    @Test("a retained stream run twice: the first run's retained messages are retained on subscribe, not duplicates")
    func retainedTwice() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let first = try Engine(configuration: Self.configuration(broker, prefix: "r", runID: 1, retain: true, messages: 5))
        let firstResult = first.run(duration: 300_000_000)
        #expect(firstResult.counters.retainedOnSubscribe == 0)
        #expect(firstResult.delivery[1].unique == 10)
        let second = try Engine(configuration: Self.configuration(broker, prefix: "r", runID: 2, retain: true, messages: 5))
        let result = second.run(duration: 300_000_000)
        // One retained message per topic, the first run's last, handed over on subscribe.
        #expect(result.counters.retainedOnSubscribe == 2)
        #expect(result.counters.foreignMessages == 0)
        #expect(result.counters.received[.atLeastOnce] == 10)
        #expect(result.counters.arrived[.atLeastOnce] == 12)
        #expect(result.delivery[1].expected == 10)
        #expect(result.delivery[1].unique == 10)
        #expect(result.delivery[1].duplicated == 0)
        #expect(result.delivery[1].lost == 0)
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == 10)
    }

    @Test("a late subscriber is owed what was published after its SUBACK; the start is missed, not lost")
    func lateSubscriber() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = try Self.configuration(broker, prefix: "late", runID: 3, messages: 100, perSecond: 100,
                                                   subscriberStart: 400_000_000)
        configuration.waitForReady = false
        let result = try Engine(configuration: configuration).run(duration: 1_300_000_000)
        let delivery = result.delivery[1]
        #expect(result.counters.published[.atLeastOnce] == 200)
        #expect(delivery.lost == 0)
        #expect(delivery.duplicated == 0)
        #expect(delivery.unexpected == 0)
        #expect(delivery.unique == delivery.expected)
        #expect(delivery.expected + delivery.missedWhileOffline == 200)
        // About 0.4 s of two streams at 100/s went by before the subscription.
        #expect(delivery.missedWhileOffline >= 40)
        #expect(delivery.expected >= 60)
    }

    @Test("an offline gap with a clean session: what was published meanwhile is missed while offline")
    func offlineGapCleanSession() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let engine = try Engine(configuration: Self.configuration(
            broker, prefix: "gap", runID: 4, qos: .atMostOnce, messages: 150, perSecond: 100,
            subscriptionQoS: .atMostOnce))
        // After 100 messages (0.5 s of two streams at 100/s), however loaded the machine.
        let result = EngineFaultTests.run(engine, duration: 1_800_000_000, afterPublished: 100) { engine in
            _ = try? engine.tunnel(fleet: "subscribers", fraction: 1, outage: 400_000_000...400_000_000)
        }
        let delivery = result.delivery[0]
        #expect(result.counters.published[.atMostOnce] == 300)
        #expect(result.counters.disconnects[.tunnel] == 1)
        #expect(delivery.expected + delivery.missedWhileOffline == 300)
        // 0.4 s offline at 2 x 100 msg/s.
        #expect(delivery.missedWhileOffline >= 60)
        #expect(delivery.duplicated == 0)
        #expect(delivery.unexpected == 0)
        #expect(delivery.unique + delivery.lost == delivery.expected)
        // Only a message that was in the socket when it was cut can be lost.
        #expect(delivery.lost <= 1)
    }

    @Test("an offline gap with a persistent QoS 1 session: the broker queues, nothing is missed or lost")
    func offlineGapPersistentSession() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let persistent = MQTTSessionSettings(version: .v3_1_1, cleanStart: false, keepAliveSeconds: 30)
        let engine = try Engine(configuration: Self.configuration(
            broker, prefix: "keep", runID: 5, messages: 150, perSecond: 100, subscriberSession: persistent))
        // After 100 messages (0.5 s of two streams at 100/s), however loaded the machine.
        let result = EngineFaultTests.run(engine, duration: 1_800_000_000, afterPublished: 100) { engine in
            _ = try? engine.tunnel(fleet: "subscribers", fraction: 1, outage: 400_000_000...400_000_000)
        }
        let delivery = result.delivery[1]
        #expect(result.counters.published[.atLeastOnce] == 300)
        #expect(result.counters.disconnects[.tunnel] == 1)
        #expect(delivery.expected == 300)
        #expect(delivery.unique == 300)
        #expect(delivery.missedWhileOffline == 0)
        #expect(delivery.lost == 0)
    }

    @Test("the actual send time is in every header form: JSON and 24-byte binary payloads measure from it when sends lag")
    func actualSendTimeInEveryForm() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        // A burst of 30 at once through a window of 1: each message waits for the previous PUBACK, so it leaves
        // later than intended and the latency from the actual send is smaller than from the intended time.
        let narrow = MQTTSessionSettings(version: .v5, keepAliveSeconds: 30, inFlightWindow: 1)
        let json = try PayloadTemplate(#"{"speed":{rand:0..180},"seq":{seq}}"#)
        let payloads: [(name: String, payload: EnginePayload)] = [("json", .template(json)), ("short", .binary(size: 24))]
        var fleets: [EngineFleet] = []
        for (name, payload) in payloads {
            fleets.append(EngineFleet(
                name: "\(name)-publisher", count: 1, clientID: { "\(name)-pub-\($0)" }, session: narrow,
                streams: [EngineStream(topic: { _, _ in "lag/\(name)" }, qos: .atLeastOnce,
                                       plan: .bursts(count: 30, every: 300_000_000), payload: payload, messageLimit: 30)]))
            fleets.append(EngineFleet(
                name: "\(name)-subscriber", count: 1, clientID: { "\(name)-sub-\($0)" }, session: narrow,
                subscriptions: { _, _ in [MQTTSubscription(filter: "lag/\(name)", qos: .atLeastOnce)] }))
        }
        let configuration = EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            drainTimeout: 2_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        for (name, _) in payloads {
            let subscriber = try #require(result.fleets["\(name)-subscriber"])
            #expect(subscriber.delivery[1].unique == 30, "\(name)")
            let intended = subscriber.latency.histogram(.endToEnd, from: .intended)
            let sent = subscriber.latency.histogram(.endToEnd, from: .sent)
            #expect(intended.totalCount == 30, "\(name)")
            #expect(sent.totalCount == 30, "\(name)")
            // The last of the burst waited for 29 round trips before it left: from its intended time it took far
            // longer than from its actual send.
            #expect(sent.max < intended.max, "\(name)")
            #expect(sent.mean < intended.mean, "\(name)")
        }
    }
}
