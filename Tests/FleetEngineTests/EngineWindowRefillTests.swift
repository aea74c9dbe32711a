import Dispatch
import FleetMetrics
import FleetTestSupport
import FleetTransport
import Foundation
import Glibc
import MQTTCodec
import MQTTSession
import Synchronization
import Testing
@testable import FleetEngine

/// One client of window 4 publishing 12 messages to a fake broker that answers only when the test says so,
/// the engine running on its own thread meanwhile. One lane, so the client is `lanes[0].clients[0]`.
final class WindowRefillHarness: @unchecked Sendable {
    // @unchecked: `result` is written by the engine thread before it signals `finished`, read after waiting.
    static let window: UInt16 = 4
    static let messages = 12

    let qos: MQTTQoS
    let broker: FakeBroker
    let engine: Engine
    private let stop = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private var result: EngineResult?

    /// The fake broker withholds acks in user space, where no TCP acknowledgement releases them: after a probe
    /// read nothing more ever shows, so the counting tests take every stall as held acks shown.
    static let everyStallCounts = AckBatchingRetry(looksForHeldAcks: false)

    /// `behaviour` withholds what the test releases; `ackTimeout` is long unless a test wants deadlines.
    init(qos: MQTTQoS, behaviour: @escaping FakeBroker.Behaviour, ackTimeout: UInt64 = 60_000_000_000,
         policy: MQTTAckTimeoutPolicy = .close, plan: PublishPlan = .rate(perSecond: 10_000),
         subscribes: Bool = false, messages: Int = WindowRefillHarness.messages,
         retry: AckBatchingRetry = WindowRefillHarness.everyStallCounts, ringReceives: Bool? = nil) throws {
        self.qos = qos
        broker = try FakeBroker(behaviour: behaviour)
        // Keepalive off: no PINGREQ among the packets the tests count.
        let settings = MQTTSessionSettings(
            version: .v3_1_1, keepAliveSeconds: 0, inFlightWindow: Self.window,
            timeouts: MQTTAckTimeouts(pubAck: ackTimeout, pubRec: ackTimeout, pubComp: ackTimeout),
            onAckTimeout: policy)
        let stream = EngineStream(topic: { _, _ in "refill" }, qos: qos, plan: plan, behind: .catchUp,
                                  messageLimit: UInt64(messages))
        let fleet = EngineFleet(
            name: "refill", count: 1, clientID: { "refill-\($0)" }, session: settings,
            subscriptions: { _, _ in subscribes ? [MQTTSubscription(filter: "refill/in", qos: .atLeastOnce)] : [] },
            streams: [stream])
        var configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 1, readyTimeout: 5_000_000_000, drainTimeout: 2_000_000_000)
        configuration.ackBatchingRetry = retry
        if let ringReceives { configuration.ringReceives = ringReceives }
        engine = try Engine(configuration: configuration)
    }

    /// Runs the engine on a thread of its own until `finish` (or 60 s).
    func start(duration: UInt64 = 60_000_000_000) {
        let thread = Thread { [self] in
            result = engine.run(duration: duration, shouldStop: { [self] in stop.load(ordering: .acquiring) })
            finished.signal()
        }
        thread.start()
    }

    /// Ends publishing (the drain then waits for what is in flight) and returns the result, or nil after 30 s.
    func finish() -> EngineResult? {
        stop.store(true, ordering: .releasing)
        return awaitEnd()
    }

    /// The result once the run ended by itself (its duration passed), or nil after 30 s.
    func awaitEnd() -> EngineResult? {
        guard finished.wait(timeout: .now() + 30) == .success else { return nil }
        return result
    }

    /// Packet ids of the PUBLISH packets the broker received, in arrival order.
    var publishedIDs: [UInt16] {
        broker.receivedPackets.compactMap { if case .publish(let publish) = $0.packet { publish.packetID } else { nil } }
    }

    var pubRelCount: Int {
        broker.receivedPackets.count { if case .pubRel = $0.packet { true } else { false } }
    }

    /// Polls `value` until it reaches `target` or 5 s pass; returns the last value seen. A guard against
    /// hanging only: nothing asserts on how long it took.
    func await(_ target: Int, of value: () -> Int) -> Int {
        var seen = value()
        for _ in 0..<500 where seen < target {
            usleep(10_000)
            seen = value()
        }
        return seen
    }

    /// Polls `value` for 300 ms and returns the largest value seen: what arrived that should not have shows.
    func settled(_ value: () -> Int) -> Int {
        var largest = value()
        for _ in 0..<30 {
            usleep(10_000)
            largest = max(largest, value())
        }
        return largest
    }

    /// The client socket's SO_RCVLOWAT as the kernel has it (nil when the client has no socket).
    var receiveLowWatermark: Int32? {
        let lane = engine.lanes[0]
        return lane.queue.sync { lane.clients[0].socket.flatMap { try? $0.option(level: SOL_SOCKET, name: SO_RCVLOWAT) } }
    }

    /// The client socket's TCP_QUICKACK as the kernel reports it: 1 while it acknowledges at once, 0 in
    /// delayed-ACK ("ping-pong") mode.
    var quickAcknowledgement: Int32? {
        let lane = engine.lanes[0]
        return lane.queue.sync { lane.clients[0].socket.flatMap { try? $0.option(level: Int32(IPPROTO_TCP), name: TCP_QUICKACK) } }
    }

    /// Puts the client socket in delayed-ACK mode (TCP_QUICKACK 0), run on the lane between turns.
    func enterDelayedAcknowledgement() {
        let lane = engine.lanes[0]
        lane.queue.sync { _ = try? lane.clients[0].socket?.setOption(level: Int32(IPPROTO_TCP), name: TCP_QUICKACK, value: 0) }
    }

    /// Messages the lane counted as acknowledged so far (read between turns).
    var ackedSoFar: Int {
        let lane = engine.lanes[0]
        return lane.queue.sync { Int(lane.metrics.counters.acked[qos]) }
    }

    /// What the lane counted so far, read between turns in one go: the turn that reads an ack also sends what
    /// it refills and sets the next mark, so once `acked` shows an ack the rest shows its effect.
    var laneState: (acked: Int, published: Int, fallbacks: UInt64, rearms: UInt64, mark: Int32) {
        let lane = engine.lanes[0]
        return lane.queue.sync {
            (Int(lane.metrics.counters.acked[qos]), Int(lane.metrics.counters.published[qos]),
             lane.metrics.counters.lowWatermarkFallbacks, lane.metrics.counters.lowWatermarkRearms, lane.clients[0].ackBatching.mark)
        }
    }

    /// Polls the lane until it counted `acks` acks (or 5 s pass, a guard against hanging only) and returns its state.
    func laneState(afterAcks acks: Int) -> (acked: Int, published: Int, fallbacks: UInt64, rearms: UInt64, mark: Int32) {
        var state = laneState
        for _ in 0..<5_000 where state.acked < acks {
            usleep(1_000)
            state = laneState
        }
        return state
    }

    /// Sends the packets in one write.
    func release(_ packets: [MQTTPacket]) {
        let bytes = packets.flatMap { $0.encoded(version: .v3_1_1) }
        #expect(broker.send(.sendBytes(bytes), toConnection: 0))
    }

    /// The completion the window waits for: PUBACK in QoS 1, PUBCOMP in QoS 2.
    func completion(_ packetID: UInt16) -> MQTTPacket {
        qos == .exactlyOnce ? .pubComp(MQTTPubComp(packetID: packetID)) : .pubAck(MQTTPubAck(packetID: packetID))
    }
}

/// CONNACK at once; every acknowledgement of a PUBLISH or PUBREL withheld (the test releases them).
let withholdingBroker: FakeBroker.Behaviour = { connection, packet, version in
    switch packet {
    case .publish(let publish) where publish.qos != .atMostOnce: return []
    case .pubRel: return []
    default: return FakeBroker.standardResponse(connection, packet, version)
    }
}

/// A client whose in-flight window was full resumes only once half of it is free. While it waits, SO_RCVLOWAT
/// is 4 bytes per slot it waits for (window 4: 2 slots, 8 bytes), so the acks of a refill wake it once; bytes
/// left below the mark with nothing more arriving are read at the second 5 ms probe, and after three such
/// stalls in a row (a broker with Nagle's algorithm on holds its next acks until the first is acknowledged)
/// the mark stays 1 on that connection and every ack refills (its PUBLISH carries the TCP acknowledgement). What it reads without answering is acknowledged at once (TCP_QUICKACK); deadlines and
/// bursts of acks still work.
@Suite("Engine: a full in-flight window refills in halves", .serialized)
struct EngineWindowRefillTests {
    /// Without a subscription each odd ack is alone below the mark and read at a probe; at the third such
    /// stall (ack 5) the mark falls back to 1 for good and each ack from then on refills. With one the mark
    /// stays 1 (a message for it is read when it comes) and the refill goes in halves to the end.
    @Test("acks released one at a time: 4 PUBLISH, 2 more at every 2nd ack, from the 3rd stall 1 more at every ack, until all 12 are acked",
          arguments: [MQTTQoS.atLeastOnce, .exactlyOnce], [false, true])
    func refillInHalves(_ qos: MQTTQoS, subscribes: Bool) throws {
        let run = try WindowRefillHarness(qos: qos, behaviour: withholdingBroker, subscribes: subscribes)
        run.start()
        defer { run.broker.stop() }
        #expect(run.await(4) { run.publishedIDs.count } == 4)
        #expect(run.settled { run.publishedIDs.count } == 4)
        #expect(run.receiveLowWatermark == (subscribes ? 1 : 8))
        var pubRecsReleased = 0
        for acks in 1...WindowRefillHarness.messages {
            let published = run.publishedIDs
            if qos == .exactlyOnce && pubRecsReleased < published.count {
                // Every PUBREC owed, in one write (at least 8 bytes, so it wakes the client), then its PUBRELs.
                run.release(published[pubRecsReleased...].map { .pubRec(MQTTPubRec(packetID: $0)) })
                pubRecsReleased = published.count
                #expect(run.await(published.count) { run.pubRelCount } == published.count)
            }
            run.release([run.completion(published[acks - 1])])
            // An odd ack frees one slot of the two needed; an even one the second, and 2 messages go out. From
            // ack 5 (the third stall) the broker is taken to hold acks back and every ack refills its slot.
            let expected = min(WindowRefillHarness.messages, acks < 5 || subscribes ? 4 + acks - acks % 2 : 4 + acks)
            #expect(run.await(expected) { run.publishedIDs.count } == expected, "after \(acks) acks")
            #expect(run.settled { run.publishedIDs.count } == expected, "after \(acks) acks")
            // Raised again by each refill in halves (window full, 2 slots awaited); 1 for good from the 3rd stall.
            #expect(run.receiveLowWatermark == (!subscribes && (acks == 2 || acks == 4) ? 8 : 1), "after \(acks) acks")
        }
        let result = try #require(run.finish())
        #expect(result.counters.lowWatermarkFallbacks == (subscribes ? 0 : 1))
        let level = qos
        #expect(run.publishedIDs.count == 12)
        #expect(Set(run.publishedIDs).count == 12)
        #expect(result.counters.published[level] == 12)
        #expect(result.counters.acked[level] == 12)
        #expect(result.counters.ackTimeouts == AckTimeoutCounts())
        #expect(result.counters.disconnects == [.clientInitiated: 1])
    }

    @Test("the acks of a whole window in one write reach the mark: 4 more PUBLISH each time, all 12 acked",
          arguments: [MQTTQoS.atLeastOnce, .exactlyOnce])
    func wholeWindowOfAcksAtOnce(_ qos: MQTTQoS) throws {
        let run = try WindowRefillHarness(qos: qos, behaviour: withholdingBroker)
        run.start()
        defer { run.broker.stop() }
        #expect(run.await(4) { run.publishedIDs.count } == 4)
        #expect(run.settled { run.publishedIDs.count } == 4)
        #expect(run.receiveLowWatermark == 8)
        var acked = 0
        for round in 1...3 {
            let published = run.publishedIDs
            #expect(published.count == min(12, 4 * round), "round \(round)")
            let window = Array(published[acked...])
            if qos == .exactlyOnce {
                run.release(window.map { .pubRec(MQTTPubRec(packetID: $0)) })
                #expect(run.await(published.count) { run.pubRelCount } == published.count, "round \(round)")
            }
            // Every completion the client waits for, in one write, and nothing after it.
            run.release(window.map { run.completion($0) })
            acked = published.count
            let expected = min(12, 4 * (round + 1))
            #expect(run.await(expected) { run.publishedIDs.count } == expected, "round \(round)")
            #expect(run.settled { run.publishedIDs.count } == expected, "round \(round)")
            // Full again with 4 more due after round 1; after round 2 all 12 are out and nothing waits.
            #expect(run.receiveLowWatermark == (round == 1 ? 8 : 1), "round \(round)")
        }
        let result = try #require(run.finish())
        #expect(result.counters.lowWatermarkFallbacks == 0)
        let level = qos
        #expect(result.counters.published[level] == 12)
        #expect(result.counters.acked[level] == 12)
        #expect(result.counters.ackTimeouts == AckTimeoutCounts())
        #expect(result.counters.disconnects == [.clientInitiated: 1])
    }

    /// EngineAckTimeoutTests withholds acks with the default window of 32 and 5 messages: the window is never
    /// full there. Here 12 messages are due at once.
    @Test("PUBACKs withheld from a full window: each awaited PUBACK times out exactly once",
          arguments: [MQTTAckTimeoutPolicy.close, .keepWaiting])
    func withheldFromFullWindow(_ policy: MQTTAckTimeoutPolicy) throws {
        let run = try WindowRefillHarness(
            qos: .atLeastOnce, behaviour: withholdingBroker, ackTimeout: 200_000_000, policy: policy,
            plan: .bursts(count: 12, every: 50_000_000))
        run.start(duration: 700_000_000)
        defer { run.broker.stop() }
        let result = try #require(run.awaitEnd())
        var expected = AckTimeoutCounts()
        expected[.puback] = 4
        #expect(result.counters.ackTimeouts == expected)
        #expect(result.counters.published[.atLeastOnce] == 4)
        #expect(result.counters.acked[.atLeastOnce] == 0)
        #expect(run.publishedIDs.count == 4)
        #expect(result.counters.disconnects == (policy == .close ? [.ackTimeout(.puback): 1] : [.clientInitiated: 1]))
    }

    /// One PUBACK (4 bytes, below the mark of 8) arrives and nothing follows: it is read at a probe, and only
    /// the others are declared missing at the deadline.
    @Test("a lone ack below the mark is read at a probe; only the 3 withheld time out",
          arguments: [MQTTAckTimeoutPolicy.close, .keepWaiting])
    func ackBelowTheMarkReadAtDeadline(_ policy: MQTTAckTimeoutPolicy) throws {
        let firstAckedOnly: FakeBroker.Behaviour = { connection, packet, version in
            if case .publish(let publish) = packet, publish.packetID == 1 {
                return [.send(.pubAck(MQTTPubAck(packetID: 1)))]
            }
            return withholdingBroker(connection, packet, version)
        }
        let run = try WindowRefillHarness(
            qos: .atLeastOnce, behaviour: firstAckedOnly, ackTimeout: 200_000_000, policy: policy,
            plan: .bursts(count: 12, every: 50_000_000))
        run.start(duration: 700_000_000)
        defer { run.broker.stop() }
        let result = try #require(run.awaitEnd())
        // PUBACK 1 is read (one slot free: the client still waits for half its window, so message 5 stays
        // back); at the deadline 2, 3 and 4 time out, once each, whatever the policy.
        var expected = AckTimeoutCounts()
        expected[.puback] = 3
        #expect(result.counters.ackTimeouts == expected)
        #expect(result.counters.published[.atLeastOnce] == 4)
        #expect(result.counters.acked[.atLeastOnce] == 1)
        #expect(result.counters.disconnects == (policy == .close ? [.ackTimeout(.puback): 1] : [.clientInitiated: 1]))
        #expect(result.counters.lowWatermarkFallbacks == 0)
    }

    /// The mechanism behind windowed QoS 1/2 against a broker with Nagle's algorithm on: an ack that frees too
    /// little to refill the window is answered by nothing, so its TCP acknowledgement must go out at once. The
    /// socket is put in delayed-ACK mode first; only the engine's TCP_QUICKACK takes it out before the kernel's
    /// delayed-ACK timer (40 ms at least) could, and the option is read right after the lane counted the ack
    /// (read at the probe 5-10 ms after it came: it is below the mark).
    @Test("an ack read while the window waits and answered by nothing leaves the socket acknowledging at once",
          arguments: [MQTTQoS.atLeastOnce, .exactlyOnce])
    func loneAckAcknowledgedAtOnce(_ qos: MQTTQoS) throws {
        let run = try WindowRefillHarness(qos: qos, behaviour: withholdingBroker)
        run.start()
        defer { run.broker.stop() }
        #expect(run.await(4) { run.publishedIDs.count } == 4)
        #expect(run.settled { run.publishedIDs.count } == 4)
        let published = run.publishedIDs
        if qos == .exactlyOnce {
            // PUBRELs answer the PUBRECs: those reads write, and their segment carries the acknowledgement.
            run.release(published.map { .pubRec(MQTTPubRec(packetID: $0)) })
            #expect(run.await(4) { run.pubRelCount } == 4)
        }
        run.enterDelayedAcknowledgement()
        #expect(run.quickAcknowledgement == 0)
        run.release([run.completion(published[0])])
        // Polled every millisecond: the check lands well inside the kernel's delayed-ACK timer.
        var acked = run.ackedSoFar
        for _ in 0..<5_000 where acked < 1 {
            usleep(1_000)
            acked = run.ackedSoFar
        }
        #expect(acked == 1)
        #expect(run.quickAcknowledgement == 1)
        // One slot free of the two the client waits for: nothing more went out.
        #expect(run.settled { run.publishedIDs.count } == 4)
        #expect(run.receiveLowWatermark == 1)
        _ = run.finish()
    }
}

/// The batching of acks by SO_RCVLOWAT falls back on a connection whose broker leaves acks below the mark, and is
/// tried again after a back-off in window refills (`EngineConfiguration.ackBatchingRetry`), here 2 doubling to
/// at most 8, with a probation of 2 rounds. The fake broker answers nothing by itself: the test releases each
/// PUBACK, and every count is read from the lane after the turn that read that ack, so nothing depends on how
/// fast anything ran (a lone ack below the mark is always read at the second 5 ms probe, however late).
@Suite("Engine: ack batching retried with back-off after a fallback", .serialized)
struct EngineAckBatchingRetryTests {
    static let retry = AckBatchingRetry(first: 2, limit: 8, probationRounds: 2, looksForHeldAcks: false)

    /// Acks released one at a time, each alone below a raised mark: rounds 1-3 stall (acks 1, 3, 5) and the
    /// third falls back with a back-off of 2 refills (acks 5, 6: re-armed at 6); a re-armed connection falls
    /// back at the first probe that finds an ack waiting below the mark (ack 7), and the back-off doubles: 4 refills (re-armed at ack 10), then 8 (ack
    /// 18), then 8 again, the limit (acks 26, 34). In the fallback every ack refills its slot; batched, every
    /// second one refills two.
    @Test("a broker that always leaves acks below the mark: fallbacks at acks 5, 7, 11, 19, 27, 35; re-arms at 6, 10, 18, 26, 34")
    func backOffDoubles() throws {
        let run = try WindowRefillHarness(qos: .atLeastOnce, behaviour: withholdingBroker, messages: 40,
                                          retry: Self.retry)
        run.start()
        defer { run.broker.stop() }
        #expect(run.await(4) { run.publishedIDs.count } == 4)
        #expect(run.settled { run.publishedIDs.count } == 4)
        // After ack k: messages published, fallbacks, re-arms, and the mark (8 while the connection waits
        // batched for 2 slots of its window of 4, 1 otherwise).
        var expected: [(published: Int, fallbacks: UInt64, rearms: UInt64, mark: Int32)] = [
            (4, 0, 0, 1), (6, 0, 0, 8), (6, 0, 0, 1), (8, 0, 0, 8),
            (9, 1, 0, 1), (10, 1, 1, 8),                                    // acks 5, 6
            (11, 2, 1, 1), (12, 2, 1, 1), (13, 2, 1, 1), (14, 2, 2, 8),     // acks 7-10
            (15, 3, 2, 1),                                                  // ack 11
        ]
        for ack in 12...17 { expected.append((ack + 4, 3, 2, 1)) }
        expected.append((22, 3, 3, 8))                                     // ack 18
        expected.append((23, 4, 3, 1))                                     // ack 19
        for ack in 20...25 { expected.append((ack + 4, 4, 3, 1)) }
        expected.append((30, 4, 4, 8))                                     // ack 26
        expected.append((31, 5, 4, 1))                                     // ack 27
        for ack in 28...33 { expected.append((ack + 4, 5, 4, 1)) }
        expected.append((38, 5, 5, 8))                                     // ack 34
        expected.append((39, 6, 5, 1))                                     // ack 35: all 40 due, 1 more then
        for _ in 36...40 { expected.append((40, 6, 5, 1)) }                // all 40 out: nothing waits
        #expect(expected.count == 40)
        for ack in 1...40 {
            let published = run.publishedIDs
            try #require(published.count >= ack, "ack \(ack)")
            run.release([run.completion(published[ack - 1])])
            let state = run.laneState(afterAcks: ack)
            #expect(state.acked == ack)
            let want = expected[ack - 1]
            #expect(state.published == want.published, "after ack \(ack)")
            #expect(state.fallbacks == want.fallbacks, "after ack \(ack)")
            #expect(state.rearms == want.rearms, "after ack \(ack)")
            #expect(state.mark == want.mark, "after ack \(ack)")
            // What the lane counted as sent is what reached the broker.
            #expect(run.await(want.published) { run.publishedIDs.count } == want.published, "after ack \(ack)")
        }
        let result = try #require(run.finish())
        #expect(result.counters.lowWatermarkFallbacks == 6)
        #expect(result.counters.lowWatermarkRearms == 5)
        #expect(result.counters.published[.atLeastOnce] == 40)
        #expect(result.counters.acked[.atLeastOnce] == 40)
        #expect(Set(run.publishedIDs).count == 40)
        #expect(result.counters.ackTimeouts == AckTimeoutCounts())
    }

    /// After the re-arm at ack 6, two rounds whose acks come together (7+8, 9+10: each reaches the mark) pass
    /// the probation, and the back-off starts again from 2: once acks come alone again, a stall falls back
    /// only at the third in a row (acks 11, 13, 15) and is re-armed 2 refills later (ack 16), not 4.
    @Test("two clean rounds after a re-arm end its probation: the next fallback needs 3 stalls and backs off 2 refills again")
    func probationPassedResetsBackOff() throws {
        let run = try WindowRefillHarness(qos: .atLeastOnce, behaviour: withholdingBroker, messages: 40,
                                          retry: Self.retry)
        run.start()
        defer { run.broker.stop() }
        #expect(run.await(4) { run.publishedIDs.count } == 4)
        #expect(run.settled { run.publishedIDs.count } == 4)
        // Releases, in order, as one write each: the acks of the given messages.
        let steps: [(acks: ClosedRange<Int>, published: Int, fallbacks: UInt64, rearms: UInt64, mark: Int32)] = [
            (1...1, 4, 0, 0, 1), (2...2, 6, 0, 0, 8), (3...3, 6, 0, 0, 1), (4...4, 8, 0, 0, 8),
            (5...5, 9, 1, 0, 1), (6...6, 10, 1, 1, 8),
            (7...8, 12, 1, 1, 8), (9...10, 14, 1, 1, 8),                     // probation passed
            (11...11, 14, 1, 1, 1), (12...12, 16, 1, 1, 8), (13...13, 16, 1, 1, 1), (14...14, 18, 1, 1, 8),
            (15...15, 19, 2, 1, 1), (16...16, 20, 2, 2, 8),                  // back-off 2 again
            (17...17, 21, 3, 2, 1),                                          // probation: an ack below the mark falls back
        ]
        for step in steps {
            let published = run.publishedIDs
            try #require(published.count >= step.acks.upperBound, "acks \(step.acks)")
            run.release(step.acks.map { run.completion(published[$0 - 1]) })
            let state = run.laneState(afterAcks: step.acks.upperBound)
            #expect(state.acked == step.acks.upperBound)
            #expect(state.published == step.published, "after acks \(step.acks)")
            #expect(state.fallbacks == step.fallbacks, "after acks \(step.acks)")
            #expect(state.rearms == step.rearms, "after acks \(step.acks)")
            #expect(state.mark == step.mark, "after acks \(step.acks)")
        }
        // The rest: everything in flight acknowledged in one write each time (a read of several acks is one
        // refill of the back-off of 4, so it re-arms once more before the end).
        var acked = 17
        for _ in 0..<40 where acked < 40 {
            let sent = run.laneState.published
            #expect(run.await(sent) { run.publishedIDs.count } == sent)
            let ids = run.publishedIDs
            run.release(ids[acked...].map { run.completion($0) })
            acked = ids.count
            #expect(run.laneState(afterAcks: acked).acked == acked)
        }
        #expect(acked == 40)
        let result = try #require(run.finish())
        #expect(result.counters.lowWatermarkFallbacks == 3)
        #expect(result.counters.lowWatermarkRearms == 3)
        #expect(result.counters.published[.atLeastOnce] == 40)
        #expect(result.counters.acked[.atLeastOnce] == 40)
    }
}


/// Whether a stall below the raised mark shows a broker holding acks back: after the probe read the connection
/// acknowledges at once and looks at its receive queue again. The fake broker's socket has Nagle's algorithm
/// on (it never sets TCP_NODELAY), so of two acks written back to back while the first is unacknowledged the
/// second waits in the broker's kernel for our acknowledgement, exactly as mosquitto's do with stock settings.
@Suite("Engine: only stalls that show held acks fall back quickly", .serialized)
struct EngineHeldAckTests {
    /// Acks released one write at a time and nothing held: each odd ack is read at a probe (6 stalled rounds in
    /// a row, fewer than the 8 needed without held acks shown), and the window refills in halves to the end.
    /// Both read paths: through a receive ring the lane reads the stalled bytes itself, beside the ring, to look.
    @Test("a broker that is only slow: 12 acks one at a time, 0 fallbacks, 2 PUBLISH at every 2nd ack",
          arguments: [false, true])
    func slowBrokerKeepsBatching(ringReceives: Bool) throws {
        let run = try WindowRefillHarness(qos: .atLeastOnce, behaviour: withholdingBroker, retry: AckBatchingRetry(),
                                          ringReceives: ringReceives)
        #expect(run.engine.lanes.allSatisfy { ($0.receiveRing != nil) == (ringReceives && EngineReceiveRingTests.ringAvailable) })
        run.start()
        defer { run.broker.stop() }
        #expect(run.await(4) { run.publishedIDs.count } == 4)
        #expect(run.settled { run.publishedIDs.count } == 4)
        for ack in 1...WindowRefillHarness.messages {
            let published = run.publishedIDs
            try #require(published.count >= ack, "ack \(ack)")
            run.release([run.completion(published[ack - 1])])
            let state = run.laneState(afterAcks: ack)
            #expect(state.acked == ack)
            let expected = min(WindowRefillHarness.messages, 4 + ack - ack % 2)
            #expect(state.published == expected, "after ack \(ack)")
            #expect(state.fallbacks == 0, "after ack \(ack)")
            // Raised again by each refill in halves while messages are still due.
            #expect(state.mark == (ack % 2 == 0 && ack < 8 ? 8 : 1), "after ack \(ack)")
            #expect(run.await(expected) { run.publishedIDs.count } == expected, "after ack \(ack)")
        }
        let result = try #require(run.finish())
        #expect(result.counters.lowWatermarkFallbacks == 0)
        #expect(result.counters.published[.atLeastOnce] == 12)
        #expect(result.counters.acked[.atLeastOnce] == 12)
        #expect(result.counters.ackTimeouts == AckTimeoutCounts())
    }

    /// The same acks, but the first of each refill round's two is followed by the second in a separate write
    /// while the first is unacknowledged: Nagle's algorithm holds the second until the probe read acknowledges
    /// the first, and the FIONREAD after it shows it. After 3 such rounds the connection falls back.
    @Test("a broker with Nagle's algorithm on: the held second ack shows after each probe read; the 3rd round falls back",
          arguments: [false, true])
    func nagleBrokerFallsBack(ringReceives: Bool) throws {
        let run = try WindowRefillHarness(qos: .atLeastOnce, behaviour: withholdingBroker, retry: AckBatchingRetry(),
                                          ringReceives: ringReceives)
        #expect(run.engine.lanes.allSatisfy { ($0.receiveRing != nil) == (ringReceives && EngineReceiveRingTests.ringAvailable) })
        run.start()
        defer { run.broker.stop() }
        #expect(run.await(4) { run.publishedIDs.count } == 4)
        #expect(run.settled { run.publishedIDs.count } == 4)
        var fallbacksAfterRound: [UInt64] = []
        for round in 0..<3 {
            let published = run.publishedIDs
            let first = 2 * round
            try #require(published.count >= first + 2, "round \(round)")
            // Two writes back to back: the second is held by the broker's kernel until the client acknowledges.
            run.release([run.completion(published[first])])
            run.release([run.completion(published[first + 1])])
            let state = run.laneState(afterAcks: first + 2)
            #expect(state.acked == first + 2, "round \(round)")
            #expect(state.published == 6 + first, "round \(round)")
            fallbacksAfterRound.append(state.fallbacks)
            #expect(run.await(6 + first) { run.publishedIDs.count } == 6 + first, "round \(round)")
        }
        #expect(fallbacksAfterRound == [0, 0, 1])
        let result = try #require(run.finish())
        #expect(result.counters.lowWatermarkFallbacks == 1)
    }
}
