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

@Suite("Engine: receive batching of a steady stream")
struct ReceiveBatchingTests {
    @Test(
        "a window is steady at 4,000 messages a second or more, two messages at least",
        arguments: [
            // messages, ns elapsed, steady
            (40, 10_000_000, true),     // exactly 4,000/s over the 10 ms window
            (39, 10_000_000, false),
            (75, 10_000_000, true),     // 15,000 vehicles, one command each a second, on two lanes: 7,500/s
            (2, 500_000, true),         // 4,000/s exactly
            (2, 500_001, false),
            (1, 1, false),              // one message is no rate
            (40, 10_000_001, false),
            (Int(Int32.max), UInt64.max, false),   // 2^31 x 1e9 < 4,000 x (2^64 - 1): beyond 64 bits
            (Int.max, UInt64.max / 2, true),       // 2^63 x 1e9 > 4,000 x 2^63
        ] as [(Int, UInt64, Bool)])
    func steadyRate(messages: Int, elapsed: UInt64, steady: Bool) {
        #expect(ReceiveRateWindow.isSteady(messages: messages, over: elapsed) == steady)
    }

    @Test("the window judges at its end, counts the closing turn in, and starts again at that turn")
    func windowSequence() {
        var window = ReceiveRateWindow()
        // The first turn (at 50 ms) closes the window that began at 0 with one message: not steady.
        window.note(messages: 1, turnStart: 50_000_000)
        #expect(window.steady == false)
        #expect(window.start == 50_000_000)
        #expect(window.messages == 0)
        // 39 messages within the next 10 ms, then the closing turn at exactly 10 ms with one more: 40 in 10 ms.
        for turn in 1...39 { window.note(messages: 1, turnStart: 50_000_000 + UInt64(turn) * 250_000) }
        #expect(window.steady == false)  // still the judgement of the first window
        #expect(window.messages == 39)
        window.note(messages: 1, turnStart: 60_000_000)
        #expect(window.steady == true)
        #expect(window.start == 60_000_000)
        #expect(window.messages == 0)
        // Steady stays until the next window closes, whatever its turns hold meanwhile.
        window.note(messages: 0, turnStart: 69_999_999)
        #expect(window.steady == true)
        // 39 messages over the 10 ms window: no longer steady.
        window.note(messages: 39, turnStart: 70_000_000)
        #expect(window.steady == false)
        // A long idle span is judged whole: 100 messages after 1 s idle are 100/s.
        window.note(messages: 100, turnStart: 1_070_000_000)
        #expect(window.steady == false)
        #expect(window.start == 1_070_000_000)
    }

    @Test(
        "the pause after a turn: coalescing when heavy, batching after a receiving turn of a steady stream",
        arguments: [
            // heavy, steady, messages this turn, coalescing, batching, pause
            (true, false, 64, 1_000_000, 500_000, 1_000_000),
            (true, true, 64, 1_000_000, 500_000, 1_000_000),
            (false, true, 1, 1_000_000, 500_000, 500_000),
            (false, true, 0, 1_000_000, 500_000, nil),     // a timer's turn: no pause
            (false, false, 1, 1_000_000, 500_000, nil),    // not steady
            (false, true, 3, 1_000_000, 0, nil),           // batching off
            (false, true, 3, 0, 500_000, nil),             // coalescing 0 turns both off
            (true, true, 3, 0, 500_000, nil),
            (false, true, 3, 200_000, 500_000, 200_000),   // capped at the coalescing bound
        ] as [(Bool, Bool, Int, UInt64, UInt64, UInt64?)])
    func pause(heavy: Bool, steady: Bool, messages: Int, coalescing: UInt64, batching: UInt64, expected: UInt64?) {
        #expect(Lane.pause(heavy: heavy, steady: steady, messages: messages, coalescing: coalescing,
                           batching: batching) == expected)
    }

    @Test(
        "a steady stream's pause ends at the lane's next timer at the latest, and is none when that has come",
        arguments: [
            // turn start, batching, next timer, now, end
            (UInt64(1_000_000), UInt64(500_000), UInt64.max, UInt64(1_100_000), UInt64(1_500_000)),
            (1_000_000, 500_000, 1_300_000, 1_100_000, 1_300_000),   // a publisher due meanwhile keeps its time
            (1_000_000, 500_000, 1_100_000, 1_100_000, 0),           // due now: no pause
            (1_000_000, 500_000, 2_000_000, 1_600_000, 0),           // the turn itself outlasted the pause
        ] as [(UInt64, UInt64, UInt64, UInt64, UInt64)])
    func batchingEnd(turnStart: UInt64, batching: UInt64, nextTimer: UInt64, now: UInt64, end: UInt64) {
        #expect(Lane.batchingEnd(turnStart: turnStart, batching: batching, nextTimer: nextTimer, now: now) == end)
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
            #expect(result.counters.receiveCoalescingPauses == 0)
            #expect(result.counters.receiveBatchingPauses == 0)  // capped at the coalescing: off too
        } else {
            #expect(result.counters.receiveCoalescingPauses > 0)
        }
    }
}

/// A steady stream of single messages into many subscribers against mosquitto (the vehicles-get-commands shape:
/// each message its own turn unless the lane batches): nothing lost or counted twice, batching or not, on either
/// receive path.
@Suite("Engine: receive batching against mosquitto", .serialized)
struct ReceiveBatchingBrokerTests {
    @Test("10 subscribers under 10 x 500 QoS 1 messages a second lose nothing, batching or not, either receive path",
          arguments: [UInt64(500_000), 0], [false, true])
    func steadyStream(batching: UInt64, ring: Bool) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        let subscribers = EngineFleet(
            name: "vehicles", count: 10, clientID: { "car-\($0)" }, session: settings,
            subscriptions: { index, _ in [MQTTSubscription(filter: "cmd/\(index)", qos: .atLeastOnce)] })
        let stream = EngineStream(topic: { index, _ in "cmd/\(index)" }, qos: .atLeastOnce,
                                  plan: .rate(perSecond: 500), behind: .catchUp, payloadSize: 64, messageLimit: 500)
        let backend = EngineFleet(name: "backend", count: 10, clientID: { "backend-\($0)" }, session: settings,
                                  streams: [stream])
        var configuration = EngineConfiguration(
            fleets: [subscribers, backend], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 1, drainTimeout: 5_000_000_000)
        configuration.receiveBatching = batching
        configuration.ringReceives = ring
        let started = MonotonicClock.now()
        let result = try Engine(configuration: configuration).run(duration: 3_000_000_000)
        let elapsed = MonotonicClock.now() &- started
        #expect(result.counters.published.qos1 == 5_000)
        #expect(result.counters.acked.qos1 == 5_000)
        #expect(result.counters.received.qos1 == 5_000)
        let delivery = result.delivery[1]
        #expect(delivery.expected == 5_000)
        #expect(delivery.unique == 5_000)
        #expect(delivery.lost == 0)
        #expect(delivery.duplicated == 0)
        // Every pause lasts from its turn's start to at least 500 µs (1 ms when heavy) after it, and none overlap.
        #expect(result.counters.receiveCoalescingPauses + result.counters.receiveBatchingPauses <= elapsed / 500_000 + 1)
        if batching == 0 { #expect(result.counters.receiveBatchingPauses == 0) }
    }
}
