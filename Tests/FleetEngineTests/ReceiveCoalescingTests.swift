@testable import FleetEngine
import FleetBroker
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing

@Suite("Engine: receive coalescing under heavy inbound traffic")
struct ReceiveCoalescingTests {
    @Test(
        "a lane pauses only while it receives 64,000 messages a second or more, two a turn at least",
        arguments: [
            // messages, ns since the previous turn began, pauses
            (64, 1_000_000, true),      // exactly 64,000/s
            (63, 1_000_000, false),
            (9, 70_000, true),          // eager reads of a heavy stream: 9 per 70 µs = 128,571/s
            (1, 10_000, false),         // a reply right after its request: one message is no rate
            (2, 31_250, true),          // 2 per 31.25 µs = 64,000/s
            (2, 31_251, false),
            (100, 0, true),             // two turns within the same nanosecond
            // Products beyond 64 bits compare right.
            (Int(Int32.max), UInt64.max, false),   // 2^31 x 1e9 < 64,000 x (2^64 - 1)
            (Int.max, UInt64.max / 2, true),       // 2^63 x 1e9 > 64,000 x 2^63
        ] as [(Int, UInt64, Bool)])
    func rate(messages: Int, since: UInt64, pauses: Bool) {
        #expect(Lane.isReceivingHeavily(messages: messages, sinceLastTurn: since) == pauses)
    }
}

/// A heavy stream into one subscriber against mosquitto: the lane pauses (how often depends on the machine, so
/// only "some" is asserted), and nothing is lost or counted twice whether it pauses or reads at once.
@Suite("Engine: receive coalescing against mosquitto", .serialized)
struct ReceiveCoalescingBrokerTests {
    /// Also run on both write paths: 4 publishers writing as fast as they can are the heaviest batches the lane's
    /// io_uring gets in the tests.
    @Test("a subscriber under 4 x 20,000 QoS 0 messages at full speed loses nothing, pausing or not",
          arguments: [UInt64(1_000_000), 0], [true, false])
    func heavyStream(coalescing: UInt64, batchedSends: Bool) throws {
        var brokerConfiguration = MosquittoConfiguration()
        brokerConfiguration.maxQueuedMessages = 0  // unlimited: the default 1,000 drops what a slow reader lags by
        let broker = try MosquittoBroker(configuration: brokerConfiguration)
        defer { broker.stop() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        let subscriber = EngineFleet(
            name: "subscriber", count: 1, clientID: { "sub-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "heavy/+/data", qos: .atMostOnce)] })
        let stream = EngineStream(topic: { index, _ in "heavy/\(index)/data" }, qos: .atMostOnce,
                                  plan: .rate(perSecond: 1e9), behind: .catchUp, payloadSize: 64,
                                  messageLimit: 20_000)
        let publishers = EngineFleet(name: "publishers", count: 4, clientID: { "pub-\($0)" }, session: settings,
                                     streams: [stream])
        var configuration = EngineConfiguration(
            fleets: [subscriber, publishers], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 1, drainTimeout: 5_000_000_000)
        configuration.receiveCoalescing = coalescing
        configuration.batchedSends = batchedSends
        let result = try Engine(configuration: configuration).run(duration: 3_000_000_000)
        #expect(result.counters.published.qos0 == 80_000)
        #expect(result.counters.received.qos0 == 80_000)
        let delivery = result.delivery[0]
        #expect(delivery.expected == 80_000)
        #expect(delivery.unique == 80_000)
        #expect(delivery.lost == 0)
        #expect(delivery.duplicated == 0)
        if coalescing == 0 {
            #expect(result.coalescingPauses == 0)
        } else {
            #expect(result.coalescingPauses > 0)
        }
    }
}
