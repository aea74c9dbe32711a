import Testing
@testable import FleetEngine

private let ms: UInt64 = 1_000_000

/// One publishing client as the lane drives it, without sockets: the ack-batching machine, a window of 4 and a
/// manual clock. The socket is a count of ack bytes (4 per PUBACK) with the mark the lane last set: the lane
/// reads when the bytes reach the mark (epoll), or when the machine asks (a stalled probe). A broker with Nagle's
/// algorithm on is modelled by acks it holds until the client acknowledges what it read (TCP_QUICKACK, or a
/// PUBLISH carrying the acknowledgement). What the lane does is applied here the way `Lane+Connection` and
/// `Lane+Session` apply it, and logged in order.
private struct LaneUnderTest {
    enum Step: Equatable, CustomStringConvertible {
        case setMark(Int32)
        case armProbe(at: UInt64)
        case cancelProbe
        case read(acks: Int)
        case quickAck
        case publish(Int)
        case fallBack
        case rearm

        var description: String {
            switch self {
            case .setMark(let mark): "mark \(mark)"
            case .armProbe(let at): "probe at \(at / ms) ms"
            case .cancelProbe: "no probe"
            case .read(let acks): "read \(acks)"
            case .quickAck: "quick ack"
            case .publish(let count): "publish \(count)"
            case .fallBack: "fall back"
            case .rearm: "re-arm"
            }
        }
    }

    var machine = AckBatchingMachine()
    let retry: AckBatchingRetry
    let window: Int
    var inFlight = 0
    var due: Int
    var published = 0
    var acked = 0
    var fallbacks = 0
    var rearms = 0
    var now: UInt64 = 0
    var probeAt: UInt64?
    var socketMark: Int32 = 1
    /// Ack bytes in the client's receive queue, and acks the broker holds until the client acknowledges.
    var queued: Int32 = 0
    var held = 0
    /// A broker whose TCP sends at most this many ack segments unacknowledged (its congestion window; Nagle's
    /// algorithm off), holding the rest until the client acknowledges; nil: no such limit.
    var congestionWindow: Int?
    var unacknowledged = 0
    /// Acks the broker wrote so far (sent, held or read).
    var produced = 0
    var dirty = false
    var readsThroughRing = false
    var markSettable = true
    var log: [Step] = []

    init(messages: Int, retry: AckBatchingRetry, window: Int = 4, congestionWindow: Int? = nil) {
        due = messages
        self.retry = retry
        self.window = window
        self.congestionWindow = congestionWindow
    }

    /// Takes the steps logged since the last call.
    mutating func steps() -> [Step] {
        defer { log = [] }
        return log
    }

    // MARK: The lane

    /// One turn of the lane: the body, then the flush of a client that wrote (its PUBLISH carries the TCP
    /// acknowledgement, which releases what the broker held), then epoll: bytes at the mark are read in a turn.
    mutating func turn(_ body: (inout LaneUnderTest) -> Void) {
        body(&self)
        if dirty {
            dirty = false
            acknowledged()
            adjust()
        }
        if queued > 0 && queued >= socketMark && !readsThroughRing { turn { $0.read() } }
    }

    mutating func acknowledged() {
        guard let congestionWindow else {
            queued += Int32(4 * held)
            held = 0
            return
        }
        let sent = min(held, congestionWindow)
        queued += Int32(4 * sent)
        held -= sent
        unacknowledged = sent
    }

    mutating func publishDue() {
        machine.publishTurnStarted()
        var count = 0
        while due > 0 {
            if inFlight == window {
                machine.windowFull()
                break
            }
            inFlight += 1
            due -= 1
            count += 1
        }
        published += count
        if count > 0 {
            log.append(.publish(count))
            dirty = true
        } else {
            adjust()
        }
    }

    mutating func adjust() {
        let eligible = !dirty
        guard let mark = machine.wantedMark(eligible: eligible, window: (window, inFlight)) else { return }
        if markSettable { socketMark = mark }
        log.append(.setMark(mark))
        switch machine.markApplied(mark, accepted: markSettable, now: now) {
        case .arm(let at):
            probeAt = at
            log.append(.armProbe(at: at))
        case .cancel:
            probeAt = nil
            log.append(.cancelProbe)
        }
    }

    mutating func read() {
        guard queued > 0 else { return }
        let acks = Int(queued / 4)
        queued = 0
        log.append(.read(acks: acks))
        for _ in 0..<acks {
            inFlight -= 1
            acked += 1
            switch machine.windowOpened(window: (window, inFlight), retry: retry) {
            case .publish:
                publishDue()
            case .keepWaiting:
                break
            case .resume(let rearmed):
                if rearmed {
                    rearms += 1
                    log.append(.rearm)
                }
                publishDue()
            }
        }
        // afterRead: acknowledge if silent, set the mark unless there is something to write, probe a raised mark.
        if !dirty && inFlight > 0 { acknowledged() }
        if !dirty { adjust() }
        if let at = machine.readFinished(now: now) {
            probeAt = at
            log.append(.armProbe(at: at))
        }
    }

    mutating func probe() {
        switch machine.probeFired(queued: queued, readsThroughRing: readsThroughRing, now: now, retry: retry) {
        case .none:
            break
        case .again(let at):
            probeAt = at
            log.append(.armProbe(at: at))
        case .stalled(let read, let fellBack):
            socketMark = 1
            log.append(.setMark(1))
            if fellBack { fellBackOnce() }
            if read { self.read() }
        case .lookForHeldAcks(let pending):
            socketMark = 1
            log.append(.setMark(1))
            read()
            log.append(.quickAck)
            acknowledged()
            switch machine.heldAcksLooked(shown: queued > 0, pending, retry: retry) {
            case .readHeldAcks(let fellBack):
                if fellBack { fellBackOnce() }
                read()
            case .adjustMark(let fellBack):
                if fellBack { fellBackOnce() }
                if !dirty { adjust() }
            case .nothing:
                break
            }
        }
    }

    mutating func fellBackOnce() {
        fallbacks += 1
        log.append(.fallBack)
    }

    // MARK: The test's hands

    mutating func start() {
        turn { $0.publishDue() }
    }

    /// The broker writes `acks` PUBACKs; with `holdingAfterFirst`, Nagle's algorithm holds all but the first
    /// until the client acknowledges it.
    mutating func brokerAcks(_ acks: Int, holdingAfterFirst: Bool = false) {
        produced += acks
        if holdingAfterFirst {
            queued += 4
            held += acks - 1
        } else if let congestionWindow {
            let sent = held > 0 ? 0 : max(0, min(acks, congestionWindow - unacknowledged))
            queued += Int32(4 * sent)
            unacknowledged += sent
            held += acks - sent
        } else {
            queued += Int32(4 * acks)
        }
        if queued >= socketMark && !readsThroughRing { turn { $0.read() } }
    }

    /// The clock moves on to `time`, firing the probes due by then.
    mutating func advance(to time: UInt64) {
        while let at = probeAt, at <= time {
            now = at
            probeAt = nil
            turn { $0.probe() }
        }
        now = max(now, time)
    }

    /// The broker acks every message in flight it has not acked yet, and the clock runs on to each probe while
    /// nothing else moves, until every message is acked or `until`.
    mutating func brokerAcksEverything(until: UInt64 = .max) {
        while acked < published || due > 0 {
            if published > produced {
                brokerAcks(published - produced)
            } else if let at = probeAt, at <= until {
                advance(to: at)
            } else {
                return
            }
        }
    }

    /// An ack written alone, and the clock run until the lane has read it (at the second probe at the latest).
    mutating func ackAlone() {
        let before = acked
        brokerAcks(1)
        while acked == before, let at = probeAt { advance(to: at) }
    }
}

@Suite("Ack batching machine: SO_RCVLOWAT while the window waits, its probe, fallback and re-arm (manual clock, no sockets)")
struct AckBatchingMachineTests {
    static let countingRetry = AckBatchingRetry(first: 2, limit: 8, probationRounds: 2, looksForHeldAcks: false)

    @Test("a full window raises the mark to 4 bytes per ack missing to half free, and probes it after 5 ms")
    func raisesMark() {
        var machine = AckBatchingMachine()
        #expect(machine.wantedMark(eligible: true, window: (32, 32)) == nil)  // not waiting: 1, as set
        machine.windowFull()
        #expect(machine.wantedMark(eligible: true, window: (32, 32)) == 64)
        #expect(machine.wantedMark(eligible: true, window: (4, 4)) == 8)
        #expect(machine.wantedMark(eligible: true, window: (4, 3)) == nil)  // one ack missing: 1
        #expect(machine.wantedMark(eligible: false, window: (32, 32)) == nil)  // something to write, a subscriber...
        #expect(machine.markApplied(64, accepted: true, now: 10 * ms) == .arm(at: 15 * ms))
        #expect(machine.mark == 64)
        #expect(machine.wantedMark(eligible: true, window: (32, 20)) == 16)  // 4 acks to half free
        #expect(machine.wantedMark(eligible: false, window: (32, 20)) == 1)
        #expect(machine.markApplied(1, accepted: true, now: 11 * ms) == .cancel)
        #expect(machine.readFinished(now: 12 * ms) == nil)
        #expect(machine.markApplied(16, accepted: true, now: 12 * ms) == .arm(at: 17 * ms))
        #expect(machine.readFinished(now: 13 * ms) == 18 * ms)
    }

    @Test("the window and conditions are read only while waiting and not held back; the queue only while raised")
    func lazyInputs() {
        var machine = AckBatchingMachine()
        var windowReads = 0
        var eligibleReads = 0
        func window() -> (window: Int, inFlight: Int) {
            windowReads += 1
            return (4, 4)
        }
        func eligible() -> Bool {
            eligibleReads += 1
            return true
        }
        #expect(machine.windowOpened(window: window(), retry: Self.countingRetry) == .publish)
        #expect(machine.wantedMark(eligible: eligible(), window: window()) == nil)
        #expect(machine.probeFired(queued: Int32(window().window), readsThroughRing: false, now: 0,
                                   retry: Self.countingRetry) == .none)
        #expect(windowReads == 0 && eligibleReads == 0)
        machine.windowFull()
        #expect(machine.wantedMark(eligible: eligible(), window: window()) == 8)
        #expect(windowReads == 1 && eligibleReads == 1)
    }

    @Test("a mark the socket refuses: 1, no probe, never raised again on the connection; refills never re-arm")
    func unsettable() {
        var machine = AckBatchingMachine()
        machine.windowFull()
        #expect(machine.markApplied(8, accepted: false, now: 0) == .cancel)
        #expect(machine.mark == 1 && machine.brokerHoldsAcks && machine.unsettable)
        #expect(machine.wantedMark(eligible: true, window: (4, 4)) == nil)
        for _ in 0..<1000 {
            #expect(machine.windowOpened(window: (4, 3), retry: AckBatchingRetry(first: 1)) == .resume(rearmed: false))
            machine.windowFull()
        }
        #expect(machine.wantedMark(eligible: true, window: (4, 4)) == nil)
        #expect(machine == {
            var expected = AckBatchingMachine()
            expected.windowFull()
            _ = expected.markApplied(8, accepted: false, now: 0)
            return expected
        }())
    }

    @Test("a probe: unchanged bytes below the mark twice are a stall; changed or none wait again; FIONREAD failing is a stall that falls back")
    func probes() {
        var machine = AckBatchingMachine()
        let retry = AckBatchingRetry(looksForHeldAcks: true)
        machine.windowFull()
        _ = machine.markApplied(8, accepted: true, now: 0)
        #expect(machine.probeFired(queued: 0, readsThroughRing: false, now: 5 * ms, retry: retry) == .again(at: 10 * ms))
        #expect(machine.probeFired(queued: 0, readsThroughRing: false, now: 10 * ms, retry: retry) == .again(at: 15 * ms))
        #expect(machine.probeFired(queued: 4, readsThroughRing: false, now: 15 * ms, retry: retry) == .again(at: 20 * ms))
        #expect(machine.lastProbe == 4)
        let stall = machine.probeFired(queued: 4, readsThroughRing: false, now: 20 * ms, retry: retry)
        guard case .lookForHeldAcks(let pending) = stall else {
            Issue.record("no look for held acks: \(stall)")
            return
        }
        #expect(machine.mark == 1)
        #expect(machine.heldAcksLooked(shown: false, pending, retry: retry) == .nothing)
        #expect(machine.stalls == 1 && machine.stalledThisRound && !machine.brokerHoldsAcks)

        // Through a receive ring: looked at as any other socket (the lane reads beside the ring for the look).
        var ring = AckBatchingMachine()
        ring.windowFull()
        _ = ring.markApplied(8, accepted: true, now: 0)
        _ = ring.probeFired(queued: 4, readsThroughRing: true, now: 5 * ms, retry: retry)
        let ringStall = ring.probeFired(queued: 4, readsThroughRing: true, now: 10 * ms, retry: retry)
        guard case .lookForHeldAcks(let ringPending) = ringStall else {
            Issue.record("no look for held acks through a ring: \(ringStall)")
            return
        }
        #expect(ring.mark == 1)
        #expect(ring.heldAcksLooked(shown: false, ringPending, retry: retry) == .nothing)
        #expect(ring.stalls == 1 && !ring.brokerHoldsAcks)
        // Without looking (looksForHeldAcks off) a ring's stall counts as showing held acks; the ring reads.
        var unlooked = AckBatchingMachine()
        unlooked.windowFull()
        _ = unlooked.markApplied(8, accepted: true, now: 0)
        let noLook = AckBatchingRetry(looksForHeldAcks: false)
        _ = unlooked.probeFired(queued: 4, readsThroughRing: true, now: 5 * ms, retry: noLook)
        #expect(unlooked.probeFired(queued: 4, readsThroughRing: true, now: 10 * ms, retry: noLook)
            == .stalled(read: false, fellBack: false))

        // FIONREAD failed: a stall on probation (falls back at once), read by the lane.
        var failing = AckBatchingMachine()
        failing.windowFull()
        _ = failing.markApplied(8, accepted: true, now: 0)
        #expect(failing.probeFired(queued: -1, readsThroughRing: false, now: 5 * ms, retry: retry)
            == .stalled(read: true, fellBack: true))
        #expect(failing.brokerHoldsAcks && failing.backoff == 256 && failing.rearmIn == 256)
    }

    @Test("acks alone below the mark: exact steps of the first rounds, the 3rd stalled round falls back, 2 refills later it re-arms")
    func firstRoundsExactly() {
        var lane = LaneUnderTest(messages: 40, retry: Self.countingRetry)
        lane.start()
        #expect(lane.steps() == [.publish(4), .setMark(8), .armProbe(at: 5 * ms)])
        lane.ackAlone()  // ack 1: 4 bytes below 8; the first probe notes them, the second reads them
        #expect(lane.now == 10 * ms)
        #expect(lane.steps() == [.armProbe(at: 10 * ms), .setMark(1), .read(acks: 1)])
        lane.ackAlone()  // ack 2: the mark is 1, read at once; half the window is free: 2 more, mark 8 again
        #expect(lane.steps() == [.read(acks: 1), .publish(2), .setMark(8), .armProbe(at: 15 * ms)])
        lane.ackAlone()
        #expect(lane.steps() == [.armProbe(at: 20 * ms), .setMark(1), .read(acks: 1)])
        lane.ackAlone()
        #expect(lane.steps() == [.read(acks: 1), .publish(2), .setMark(8), .armProbe(at: 25 * ms)])
        lane.ackAlone()  // ack 5: the 3rd stalled round in a row: fall back for 2 refills; every ack refills now
        #expect(lane.steps() == [.armProbe(at: 30 * ms), .setMark(1), .fallBack, .read(acks: 1), .publish(1)])
        #expect(lane.machine.brokerHoldsAcks && lane.machine.rearmIn == 1 && lane.machine.backoff == 2)
        lane.ackAlone()  // ack 6: the last refill of the back-off re-arms, on probation
        #expect(lane.steps() == [.read(acks: 1), .rearm, .publish(1), .setMark(8), .armProbe(at: 35 * ms)])
        #expect(lane.machine.probation == 2 && lane.machine.stalls == 0)
        lane.ackAlone()  // ack 7: on probation any ack waiting below the mark falls back, at the first probe
        #expect(lane.now == 35 * ms)
        #expect(lane.steps() == [.setMark(1), .fallBack, .read(acks: 1), .publish(1)])
        #expect(lane.machine.backoff == 4 && lane.machine.rearmIn == 3)
    }

    @Test("a broker that always leaves acks below the mark: fallbacks at acks 5, 7, 11, 19, 27, 35; re-arms at 6, 10, 18, 26, 34")
    func backOffDoubles() {
        var lane = LaneUnderTest(messages: 40, retry: Self.countingRetry)
        lane.start()
        var fallbacksAt: [Int] = []
        var rearmsAt: [Int] = []
        var marks: [Int32] = []
        for ack in 1...40 {
            let (fallbacks, rearms) = (lane.fallbacks, lane.rearms)
            lane.ackAlone()
            #expect(lane.acked == ack)
            if lane.fallbacks > fallbacks { fallbacksAt.append(ack) }
            if lane.rearms > rearms { rearmsAt.append(ack) }
            marks.append(lane.socketMark)
        }
        #expect(fallbacksAt == [5, 7, 11, 19, 27, 35])
        #expect(rearmsAt == [6, 10, 18, 26, 34])
        // The mark after each ack: 8 while the connection waits batched for 2 slots, 1 otherwise.
        #expect(marks.indices.filter { marks[$0] == 8 }.map { $0 + 1 } == [2, 4, 6, 10, 18, 26, 34])
        #expect(lane.published == 40 && lane.inFlight == 0)
        #expect(lane.machine.backoff == 8)
    }

    @Test("two clean rounds after a re-arm end its probation: the next fallback needs 3 stalls and backs off 2 refills again")
    func probationPassedResetsBackOff() {
        var lane = LaneUnderTest(messages: 40, retry: Self.countingRetry)
        lane.start()
        for _ in 1...6 { lane.ackAlone() }
        #expect((lane.fallbacks, lane.rearms, lane.machine.probation) == (1, 1, 2))
        _ = lane.steps()
        lane.brokerAcks(2)  // acks 7+8 together reach the mark: one read, a clean round; the mark stays 8
        #expect(lane.steps() == [.read(acks: 2), .publish(2), .armProbe(at: lane.now + 5 * ms)])
        #expect(lane.machine.probation == 1 && lane.machine.backoff == 2)
        lane.brokerAcks(2)  // acks 9+10: probation passed, the back-off starts from the first again
        #expect(lane.machine.probation == 0 && lane.machine.backoff == 0)
        var fallbacksAt: [Int] = []
        var rearmsAt: [Int] = []
        for ack in 11...17 {
            let (fallbacks, rearms) = (lane.fallbacks, lane.rearms)
            lane.ackAlone()
            if lane.fallbacks > fallbacks { fallbacksAt.append(ack) }
            if lane.rearms > rearms { rearmsAt.append(ack) }
        }
        #expect(fallbacksAt == [15, 17])
        #expect(rearmsAt == [16])
        #expect(lane.published == 21)
    }

    @Test("a broker that is only slow: each ack read at a probe, nothing more shows after the quick ack; 12 acks, 0 fallbacks")
    func slowBrokerKeepsBatching() {
        var lane = LaneUnderTest(messages: 12, retry: AckBatchingRetry())
        lane.start()
        _ = lane.steps()
        lane.ackAlone()
        #expect(lane.steps() == [.armProbe(at: 10 * ms), .setMark(1), .read(acks: 1), .quickAck])
        for ack in 2...12 {
            lane.ackAlone()
            #expect(lane.published == min(12, 4 + ack - ack % 2), "after ack \(ack)")
            #expect(lane.socketMark == (ack % 2 == 0 && ack < 8 ? 8 : 1), "after ack \(ack)")
        }
        #expect(lane.fallbacks == 0)
        #expect(lane.machine.stalls == 4)  // rounds 1-4 stalled in a row, 8 needed without held acks shown
    }

    @Test("without held acks shown, 8 stalled rounds in a row fall back (AckBatchingRetry.unshownStallLimit)")
    func unshownStallsFallBackAtTheLimit() {
        var lane = LaneUnderTest(messages: 40, retry: AckBatchingRetry(first: 4))
        lane.start()
        var fallbacksAt: [Int] = []
        for ack in 1...20 {
            let fallbacks = lane.fallbacks
            lane.ackAlone()
            if lane.fallbacks > fallbacks { fallbacksAt.append(ack) }
        }
        #expect(fallbacksAt == [15])  // the 8th round's stalled first ack
        #expect(lane.rearms == 1)  // at ack 19, 4 refills later
    }

    @Test("a broker with Nagle's algorithm on: the held second ack shows after each probe's quick ack; the 3rd round falls back")
    func nagleBrokerFallsBack() {
        var lane = LaneUnderTest(messages: 12, retry: AckBatchingRetry())
        lane.start()
        _ = lane.steps()
        lane.brokerAcks(2, holdingAfterFirst: true)
        lane.advance(to: 10 * ms)
        #expect(lane.steps() == [
            .armProbe(at: 10 * ms), .setMark(1), .read(acks: 1), .quickAck, .read(acks: 1), .publish(2),
            .setMark(8), .armProbe(at: 15 * ms),
        ])
        var fallbacksAfterRound = [lane.fallbacks]
        for round in 1..<3 {
            lane.brokerAcks(2, holdingAfterFirst: true)
            lane.advance(to: lane.now + 10 * ms)
            #expect(lane.acked == 2 * round + 2)
            fallbacksAfterRound.append(lane.fallbacks)
        }
        #expect(fallbacksAfterRound == [0, 0, 1])
        #expect(lane.machine.brokerHoldsAcks && lane.socketMark == 1)
        // 4 + 2 + 2 + 2: the 3rd round's held ack, read after the fallback, refills both free slots.
        #expect(lane.published == 10)
    }

    @Test("a broker whose congestion window (10 segments) holds acks below the mark of 16: one stall sets the cap at 10 acks, no fallback, later rounds refill 10 at a mark of 40")
    func congestionWindowSetsCap() {
        var lane = LaneUnderTest(messages: 32 + 10 * 20, retry: AckBatchingRetry(), window: 32, congestionWindow: 10)
        lane.start()
        #expect(lane.steps() == [.publish(32), .setMark(64), .armProbe(at: 5 * ms)])
        lane.brokerAcks(32)  // 10 sent (40 bytes, below the mark), 22 held for the client's acknowledgement
        #expect(lane.queued == 40 && lane.held == 22 && lane.steps() == [])
        lane.advance(to: 10 * ms)
        #expect(lane.steps() == [
            // The stalled probe reads the 10 acks that came (6 more to half free: mark 24), acknowledges at once,
            // and the 10 acks the broker held then show: the cap is 10, and they are read with 10 more.
            .armProbe(at: 10 * ms), .setMark(1), .read(acks: 10), .setMark(24), .armProbe(at: 15 * ms),
            .armProbe(at: 15 * ms), .quickAck, .read(acks: 20), .publish(11), .publish(10), .armProbe(at: 15 * ms),
            // The PUBLISHes carry the acknowledgement: the last 2 held acks come, and refill 10 again.
            .setMark(1), .cancelProbe, .read(acks: 2), .publish(10), .setMark(36), .armProbe(at: 15 * ms),
        ])
        #expect(lane.machine.capAcks == 10 && lane.machine.stalls == 0 && lane.fallbacks == 0)
        lane.brokerAcksEverything()
        let rest = lane.steps()
        // Every round: the broker's 10 acks reach the mark of 36 (9 missing after the last refill, below the cap),
        // one read, one refill of 10 carrying the acknowledgement; no probe fires. The last 30 acks come with
        // nothing left to publish (mark 1), read as the broker's window lets them out.
        let round: [LaneUnderTest.Step] = [.read(acks: 10), .publish(10), .armProbe(at: 15 * ms)]
        #expect(rest == Array(Array(repeating: round, count: 16).joined()) + [
            .read(acks: 10), .publish(9), .setMark(1), .cancelProbe, .read(acks: 10), .read(acks: 1), .read(acks: 10),
            .read(acks: 9),
        ])
        #expect(lane.acked == 232 && lane.published == 232 && lane.fallbacks == 0 && lane.rearms == 0)
        #expect(lane.now == 10 * ms)  // no probe found another stall
        #expect(lane.machine.capAcks == 10 && lane.machine.capRounds == 3 + 16 + 1)
    }

    @Test("the cap grows by one ack every 64 rounds without a stall, and goes away at half the window")
    func capGrows() {
        var machine = AckBatchingMachine()
        machine.windowFull()
        _ = machine.markApplied(64, accepted: true, now: 0)
        _ = machine.probeFired(queued: 40, readsThroughRing: false, now: 5 * ms, retry: AckBatchingRetry())
        guard case .lookForHeldAcks(let pending) = machine.probeFired(
            queued: 40, readsThroughRing: false, now: 10 * ms, retry: AckBatchingRetry()) else {
            Issue.record("no look for held acks")
            return
        }
        #expect(machine.heldAcksLooked(shown: true, pending, retry: AckBatchingRetry()) == .readHeldAcks(fellBack: false))
        #expect(machine.capAcks == 10 && machine.stalls == 0 && !machine.stalledThisRound)
        #expect(machine.wantedMark(eligible: true, window: (32, 32)) == 40)  // 10 acks, not 16
        #expect(machine.wantedMark(eligible: true, window: (32, 26)) == 16)  // 6 free: 4 more to the cap
        #expect(machine.windowOpened(window: (32, 23), retry: AckBatchingRetry()) == .keepWaiting)  // 9 free
        #expect(machine.windowOpened(window: (32, 22), retry: AckBatchingRetry()) == .resume(rearmed: false))
        #expect(machine.capRounds == 1)
        var caps: [UInt8] = []
        for _ in 2...(64 * 6) {
            machine.windowFull()
            let free = Int(machine.capAcks == 0 ? 16 : machine.capAcks)
            #expect(machine.windowOpened(window: (32, 32 - free), retry: AckBatchingRetry()) == .resume(rearmed: false))
            caps.append(machine.capAcks)
        }
        // caps[i] is the cap after round i + 2: 10 for rounds 1-63, 11 from round 64, ..., 15 from round 320; at
        // round 384 it would be 16, half the window: no cap.
        #expect(caps[61] == 10 && caps[62] == 11 && caps[126] == 12 && caps[318] == 15 && caps[381] == 15)
        #expect(caps[382] == 0 && machine.capRounds == 0)
        #expect(machine.wantedMark(eligible: true, window: (32, 32)) == 64)
    }

    @Test("held acks after fewer than 2 acks (Nagle), on probation, or none shown: no cap, the stall counts")
    func capOnlyForCongestionWindow() {
        func stalled(queued: Int32, probation: Bool) -> (AckBatchingMachine, AckBatchingMachine.PendingLook)? {
            var machine = AckBatchingMachine()
            let retry = AckBatchingRetry(first: 1, probationRounds: 4)
            if probation {
                // A fallback (FIONREAD failed) and its re-arm one refill later: on probation.
                machine.windowFull()
                _ = machine.markApplied(64, accepted: true, now: 0)
                _ = machine.probeFired(queued: -1, readsThroughRing: false, now: 5 * ms, retry: retry)
                guard machine.windowOpened(window: (32, 31), retry: retry) == .resume(rearmed: true) else { return nil }
            }
            machine.windowFull()
            _ = machine.markApplied(64, accepted: true, now: 20 * ms)
            if !probation { _ = machine.probeFired(queued: queued, readsThroughRing: false, now: 25 * ms, retry: retry) }
            guard case .lookForHeldAcks(let pending) = machine.probeFired(
                queued: queued, readsThroughRing: false, now: 30 * ms, retry: retry) else { return nil }
            return (machine, pending)
        }
        let retry = AckBatchingRetry(first: 1, probationRounds: 4)
        guard var nagle = stalled(queued: 4, probation: false), var quiet = stalled(queued: 40, probation: false),
              var probation = stalled(queued: 40, probation: true) else {
            Issue.record("no stall")
            return
        }
        #expect(nagle.0.heldAcksLooked(shown: true, nagle.1, retry: retry) == .readHeldAcks(fellBack: false))
        #expect(nagle.0.capAcks == 0 && nagle.0.stalls == 1 && nagle.0.stalledThisRound)
        #expect(quiet.0.heldAcksLooked(shown: false, quiet.1, retry: retry) == .nothing)
        #expect(quiet.0.capAcks == 0 && quiet.0.stalls == 1)
        #expect(probation.0.heldAcksLooked(shown: true, probation.1, retry: retry) == .readHeldAcks(fellBack: true))
        #expect(probation.0.capAcks == 0 && probation.0.brokerHoldsAcks && probation.0.backoff == 2)
    }

    @Test("the machine is 24 bytes of every SimulatedClient; a new connection's starts at mark 1, nothing probed")
    func layout() {
        #expect(MemoryLayout<AckBatchingMachine>.size == 24)
        let fresh = AckBatchingMachine()
        #expect(fresh.mark == 1 && fresh.lastProbe == -1 && !fresh.awaitingWindow && !fresh.brokerHoldsAcks)
        #expect(fresh.backoff == 0 && fresh.rearmIn == 0 && fresh.probation == 0 && fresh.stalls == 0)
    }
}
