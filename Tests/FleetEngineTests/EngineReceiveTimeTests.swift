import FleetBroker
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Receive times are read after each socket read, not once at the start of the lane's turn.
@Suite("Engine receive times", .serialized)
struct EngineReceiveTimeTests {
    @Test("no delivery arrives before its actual send time: latency from the send is never clamped at 0")
    func noNegativeLatencyFromSent() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        // Client 0 (the subscriber) runs on lane 0, the publishers on lane 1: a message can be sent after the
        // subscriber's lane began its turn and still be read within that turn.
        let subscriber = EngineFleet(
            name: "subscriber", count: 1, clientID: { "rt-sub-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "rt/+", qos: .atMostOnce)] })
        let stream = EngineStream(topic: { index, _ in "rt/\(index)" }, qos: .atMostOnce, plan: .rate(perSecond: 5000),
                                  payloadSize: 64, messageLimit: 3000)
        let publishers = EngineFleet(name: "publishers", count: 4, clientID: { "rt-pub-\($0)" }, session: settings,
                                     streams: [stream])
        var configuration = EngineConfiguration(
            fleets: [subscriber, publishers], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 2, readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        configuration.receiveCoalescing = 0
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        #expect(result.counters.published.qos0 == 12_000)
        let fromSent = result.latency.histogram(.endToEnd, from: .sent)
        #expect(fromSent.totalCount == result.counters.received.qos0)
        #expect(fromSent.clampedLowCount == 0)
    }
}
