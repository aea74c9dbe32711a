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

/// Payload kinds, on-connect messages on every connection, and retained messages, against a real mosquitto.
@Suite("Engine payloads against mosquitto", .serialized)
struct EnginePayloadTests {
    static func address(_ broker: MosquittoBroker) throws -> [SocketAddress] {
        [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)]
    }

    @Test("JSON templates carry the text header, other templates the binary one, fixed text none",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func payloadKinds(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let settings = MQTTSessionSettings(version: version, keepAliveSeconds: 30)
        let json = try PayloadTemplate(#"{"vin":"{client_id}","speed":{rand:0..180},"seq":{seq},"ts":{ts_ms}}"#)
        let plain = try PayloadTemplate("car {client_id} position {rand:0..99}")
        #expect(json.headerForm == .text)
        #expect(plain.headerForm == .binary)
        let streams = [
            EngineStream(topic: { i, _ in "cars/\(i)/telemetry" }, qos: .atLeastOnce, plan: .rate(perSecond: 50),
                         payload: .template(json), messageLimit: 20),
            EngineStream(topic: { i, _ in "cars/\(i)/position" }, qos: .atMostOnce, plan: .rate(perSecond: 50),
                         payload: .template(plain), messageLimit: 10),
            EngineStream(topic: { i, _ in "cars/\(i)/heartbeat" }, qos: .atLeastOnce,
                         plan: .interval(period: 100_000_000), payload: .text("online"), messageLimit: 5),
        ]
        let cars = EngineFleet(name: "cars", count: 3, clientID: { "car-\($0)" }, session: settings, streams: streams)
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "cars/#", qos: .atLeastOnce)] })
        let configuration = EngineConfiguration(
            fleets: [cars, backend], brokers: try Self.address(broker), lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 2_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)

        let received = try #require(result.fleets["backend"])
        #expect(result.fleets["cars"]?.counters.published == PerQoSCounts(qos0: 30, qos1: 75))
        // 60 JSON and 30 plain messages had their header read back: received; the 15 heartbeats arrived too,
        // as foreign.
        #expect(received.counters.received == PerQoSCounts(qos0: 30, qos1: 60))
        #expect(received.counters.arrived == PerQoSCounts(qos0: 30, qos1: 75))
        #expect(received.counters.foreignMessages == 15)
        #expect(received.latency.histogram(.endToEnd, from: .intended).totalCount == 90)
        // Send-time latency: the binary-header messages carry the actual send time, JSON ones fall back to
        // the intended time; both count every message.
        #expect(received.latency.histogram(.endToEnd, from: .sent).totalCount == 90)
        #expect(received.delivery[1] == DeliveryCounts(expected: 60, received: 60, unique: 60, duplicated: 0, reordered: 0))
        #expect(received.delivery[0] == DeliveryCounts(expected: 30, received: 30, unique: 30, duplicated: 0, reordered: 0))
    }

    @Test("an on-connect stream sends one message per connection, numbered on across reconnects")
    func onConnectEveryConnection() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let settings = MQTTSessionSettings(version: .v5, keepAliveSeconds: 30)
        let online = try PayloadTemplate(#"{"state":"online","vin":"{client_id}"}"#)
        let cars = EngineFleet(
            name: "cars", count: 4, clientID: { "car-\($0)" }, session: settings,
            streams: [EngineStream(topic: { i, _ in "status/\(i)" }, qos: .atLeastOnce, plan: .onConnect,
                                   payload: .template(online))],
            reconnect: .immediateThenInterval(retries: 5, interval: 4_000_000_000))
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "status/+", qos: .atLeastOnce)] })
        let configuration = EngineConfiguration(
            fleets: [cars, backend], brokers: try Self.address(broker), lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 2_000_000_000)
        let engine = try Engine(configuration: configuration)
        let cut = SharedCount()
        let faulted = DispatchGroup()
        faulted.enter()
        TestThread.start {
            // Once the first four notices arrived, every car loses its connection and comes back.
            if Self.waitForReceived(engine, fleet: 1, count: 4) {
                cut.set((try? engine.tunnel(fleet: "cars", fraction: 1, outage: 50_000_000...50_000_000)) ?? -1)
            }
            faulted.leave()
        }
        let result = engine.run(duration: 2_000_000_000)
        _ = faulted.wait(timeout: .now() + .seconds(10))
        #expect(cut.value == 4)
        #expect(result.fleets["cars"]?.counters.published[.atLeastOnce] == 8)
        #expect(result.fleets["cars"]?.counters.reconnects == 4)
        let backendResult = try #require(result.fleets["backend"])
        #expect(backendResult.counters.received[.atLeastOnce] == 8)
        #expect(backendResult.delivery[1] == DeliveryCounts(expected: 8, received: 8, unique: 8, duplicated: 0, reordered: 0))
    }

    @Test("a retained on-connect message reaches a subscriber that connects a second later, as retained on subscribe")
    func retainedReachesLateSubscriber() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        let cars = EngineFleet(
            name: "cars", count: 2, clientID: { "car-\($0)" }, session: settings,
            streams: [EngineStream(topic: { i, _ in "retained/\(i)" }, qos: .atLeastOnce, retain: true,
                                   plan: .onConnect, payloadSize: 40)])
        var late = EngineFleet(
            name: "late", count: 1, clientID: { "late-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "retained/+", qos: .atLeastOnce)] })
        late.startOffset = 1_000_000_000
        var configuration = EngineConfiguration(
            fleets: [cars, late], brokers: try Self.address(broker), lanes: 1, drainTimeout: 2_000_000_000)
        configuration.waitForReady = false
        let result = try Engine(configuration: configuration).run(duration: 2_000_000_000)
        #expect(result.fleets["cars"]?.counters.published[.atLeastOnce] == 2)
        let subscriber = try #require(result.fleets["late"])
        #expect(subscriber.counters.arrived[.atLeastOnce] == 2)
        #expect(subscriber.counters.received[.atLeastOnce] == 0)
        // Both were published before the subscriber existed: handed over from the retained store, not owed.
        #expect(subscriber.counters.retainedOnSubscribe == 2)
        #expect(subscriber.delivery[1] == DeliveryCounts(expected: 0, received: 0, unique: 0, duplicated: 0, reordered: 0,
                                                         missedWhileOffline: 2))
        #expect(subscriber.latency.histogram(.endToEnd, from: .intended).totalCount == 0)
    }

    /// Polls (every 20 ms, at most 5 s) until the fleet's clients received `count` messages in all.
    static func waitForReceived(_ engine: Engine, fleet: Int, count: UInt64) -> Bool {
        for _ in 0..<250 {
            var received: UInt64 = 0
            for lane in engine.lanes { received += lane.queue.sync { lane.metrics.fleets[fleet].counters.received.total } }
            if received >= count { return true }
            usleep(20_000)
        }
        return false
    }
}
