import FleetMetrics
import MQTTCodec
import Testing
@testable import FleetEngine

private let ms: UInt64 = 1_000_000

/// One publishing client as the lane drives it, without sockets or a session: the publisher, an in-flight window
/// of `window` messages (a count, as the session keeps it), the ack-batching machine that decides when a waiting
/// client resumes, and a manual clock. What the lane does is applied here the way `Lane+Session` applies it.
private struct PublishingClient {
    var publisher: ClientPublisher
    var batching = AckBatchingMachine()
    let window: Int
    var inFlight = 0
    var now: UInt64 = 0
    /// Every message sent: (stream, sequence, intended time), in order.
    var sent: [Sent] = []
    /// Lags recorded per sent message (ns), nil for a closed-model one.
    var lags: [(schedule: UInt64, generator: UInt64)?] = []
    var dropped: UInt64 = 0
    var flushed: UInt64 = 0
    /// The publish timer, as the last turn left it.
    var wake: UInt64?
    /// The session refuses to send (not connected, QoS not granted): every message is a dropped slot.
    var refuses = false

    struct Sent: Equatable, CustomStringConvertible {
        var stream: Int
        var sequence: UInt64
        var intended: UInt64
        var description: String { "s\(stream)#\(sequence)@\(intended / ms)ms" }
    }

    init(window: Int, streams: [StreamState]) {
        self.window = window
        publisher = ClientPublisher(streams: streams)
    }

    /// `Lane.publishDue`.
    mutating func publishDue() {
        batching.publishTurnStarted()
        var turn = publisher.beginTurn(now: now)
        while let slot = publisher.next(in: &turn) {
            let outcome: ClientPublisher.Outcome
            if refuses {
                outcome = .dropped
            } else if inFlight < window {
                inFlight += 1
                sent.append(Sent(stream: slot.stream, sequence: slot.send.sequence, intended: slot.send.intendedTime))
                lags.append(publisher.lags(of: slot, now: now))
                outcome = .sent
            } else {
                batching.windowFull()
                outcome = .windowFull
            }
            publisher.record(outcome, of: slot, in: &turn)
        }
        dropped += turn.dropped
        flushed += turn.flushed
        wake = turn.wake
    }

    /// An ack frees a slot: `Lane.windowOpened`.
    mutating func ack() {
        inFlight -= 1
        switch batching.windowOpened(window: (window, inFlight), retry: AckBatchingRetry()) {
        case .publish: publishDue()
        case .keepWaiting: break
        case .resume:
            publisher.becameSendable(at: now)
            publishDue()
        }
    }

    /// Sent messages since the last call.
    mutating func takeSent() -> [Sent] {
        defer { sent = [] }
        return sent
    }
}

private func stream(_ id: UInt32, plan: PublishPlan, start: UInt64 = 0, behind: BehindPolicy = .catchUp,
                    maxPerTurn: Int = 256, limit: UInt64? = nil) throws -> StreamState {
    StreamState(
        topic: try MQTTTopicName("cars/\(id)"), streamID: id, progressSlot: id, qos: .atLeastOnce, retain: false,
        payload: .binary(size: 64), closed: plan.isClosed,
        schedule: try PublishSchedule(plan: plan, start: start, behind: behind, maxPerTurn: maxPerTurn,
                                      slotLimit: limit, random: SeededRandom(seed: 7, stream: UInt64(id))))
}

private func sends(_ stream: Int, _ sequences: ClosedRange<UInt64>, every period: UInt64) -> [PublishingClient.Sent] {
    sequences.map { PublishingClient.Sent(stream: stream, sequence: $0, intended: $0 * period) }
}

@Suite("ClientPublisher")
struct ClientPublisherTests {
    @Test("window 4, 10 due slots, acks one by one: sends in halves of the window, the rest unsent at the end")
    func windowOfFour() throws {
        var client = PublishingClient(window: 4, streams: [try stream(0, plan: .interval(period: 10 * ms))])
        client.now = 95 * ms
        client.publishDue()
        // Slots 0...9 are due: four fill the window, the fifth waits for it; no timer while one waits.
        #expect(client.takeSent() == sends(0, 0...3, every: 10 * ms))
        #expect(client.inFlight == 4)
        #expect(client.wake == nil)
        #expect(client.publisher.streams[0].pending == ScheduledSend(sequence: 4, intendedTime: 40 * ms, lag: 55 * ms))
        // One ack frees one slot: not half the window yet, nothing goes.
        client.now = 96 * ms
        client.ack()
        #expect(client.takeSent() == [])
        #expect(client.inFlight == 3)
        // The second ack frees half: the waiting message, then the next due, until the window is full again.
        client.now = 97 * ms
        client.ack()
        #expect(client.takeSent() == sends(0, 4...5, every: 10 * ms))
        #expect(client.inFlight == 4)
        #expect(client.publisher.streams[0].pending?.sequence == 6)
        // Its lags: from the intended time, and (generator) from when it could be sent again, at 97 ms.
        #expect(client.lags.count == 6)
        #expect(client.lags[4]! == (57 * ms, 0))
        #expect(client.lags[5]! == (47 * ms, 0))
        #expect(client.lags[3]! == (65 * ms, 65 * ms))
        // Publishing stops at 99 ms: the waiting message and slots 7...9 are unsent, four are unacked.
        client.now = 99 * ms
        let owed = client.publisher.owedAtEnd(now: client.now, connected: true, buffers: [])
        #expect(owed.unsent == 4)
        #expect(owed.offline == .init())
        #expect(client.inFlight == 4)
        #expect(client.dropped == 0)
    }

    @Test("caught up after one refill: the timer is set for the next slot, later acks publish nothing")
    func refillsUntilCaughtUp() throws {
        var client = PublishingClient(window: 4, streams: [try stream(0, plan: .interval(period: 10 * ms))])
        client.now = 55 * ms
        client.publishDue()
        #expect(client.takeSent() == sends(0, 0...3, every: 10 * ms))
        client.ack()
        client.ack()
        #expect(client.takeSent() == sends(0, 4...5, every: 10 * ms))
        // Everything due by 55 ms is out: the timer is set for the next slot.
        #expect(client.wake == 60 * ms)
        client.ack()
        client.ack()
        // Slots 0...5 were due by 55 ms, all sent: the next is at 60 ms, and the window has room.
        #expect(client.takeSent() == [])
        #expect(client.inFlight == 2)
        #expect(client.wake == 60 * ms)
        client.now = 60 * ms
        client.publishDue()
        #expect(client.takeSent() == sends(0, 6...6, every: 10 * ms))
        #expect(client.wake == 70 * ms)
        #expect(client.publisher.owedAtEnd(now: 65 * ms, connected: true, buffers: []).unsent == 0)
    }

    @Test("two streams share the window: the first refused waits, the second's due slot waits too")
    func twoStreamsOneWindow() throws {
        var client = PublishingClient(window: 3, streams: [
            try stream(0, plan: .interval(period: 10 * ms)),
            try stream(1, plan: .interval(period: 10 * ms), start: 5 * ms),
        ])
        client.now = 25 * ms
        client.publishDue()
        // Stream 0 has 0, 10, 20 due and fills the window; its fourth slot (30 ms) is not due: it is stream 1's
        // turn, whose first due slot (5 ms) finds the window full.
        #expect(client.takeSent() == sends(0, 0...2, every: 10 * ms))
        #expect(client.publisher.streams[0].pending == nil)
        #expect(client.publisher.streams[1].pending?.intendedTime == 5 * ms)
        // The wake-up is the earliest next slot of the streams that handed out everything due: stream 0's.
        #expect(client.wake == 30 * ms)
        client.ack()
        client.ack()
        // Each ack frees half of a window of 3: stream 0 has nothing due, stream 1's waiting message goes and its
        // next due one (15 ms) waits, then goes at the second ack; 25 ms waits.
        #expect(client.takeSent() == [.init(stream: 1, sequence: 0, intended: 5 * ms), .init(stream: 1, sequence: 1, intended: 15 * ms)])
        #expect(client.inFlight == 3)
        #expect(client.publisher.streams[1].pending?.intendedTime == 25 * ms)
        #expect(client.wake == 30 * ms)
        #expect(client.publisher.owedAtEnd(now: 29 * ms, connected: true, buffers: []).unsent == 1)
    }

    @Test("a waiting message refused again keeps its stream from its schedule; other streams still go")
    func pendingRefusedAgain() throws {
        var client = PublishingClient(window: 2, streams: [try stream(0, plan: .interval(period: 10 * ms))])
        client.now = 30 * ms
        client.publishDue()
        #expect(client.takeSent().count == 2)
        // A publish turn with the window still full (its timer fired): the waiting message is refused first,
        // so no later slot is taken from the schedule and no timer is set.
        client.now = 40 * ms
        client.publishDue()
        #expect(client.takeSent() == [])
        #expect(client.publisher.streams[0].pending?.sequence == 2)
        #expect(client.publisher.streams[0].schedule?.sentCount == 3)
        #expect(client.wake == nil)
        // Unsent at the end: the waiting message and slots 3, 4 (30 and 40 ms).
        #expect(client.publisher.owedAtEnd(now: 40 * ms, connected: true, buffers: []).unsent == 3)
    }

    @Test("behind_schedule drop: superseded slots are counted as dropped, not sent")
    func dropsSuperseded() throws {
        var client = PublishingClient(window: 10, streams: [try stream(0, plan: .interval(period: 10 * ms), behind: .drop)])
        client.now = 45 * ms
        client.publishDue()
        // Slots 0...4 due: 0...3 superseded by a later due slot, only the latest goes, numbered 0.
        #expect(client.takeSent() == [.init(stream: 0, sequence: 0, intended: 40 * ms)])
        #expect(client.dropped == 4)
        #expect(client.wake == 50 * ms)
    }

    @Test("a slot the session cannot send counts as dropped by the lane and the stream goes on")
    func sessionRefusal() throws {
        var client = PublishingClient(window: 10, streams: [try stream(0, plan: .interval(period: 10 * ms))])
        client.refuses = true
        client.now = 25 * ms
        client.publishDue()
        #expect(client.sent == [])
        #expect(client.publisher.streams[0].pending == nil)
        #expect(client.publisher.streams[0].schedule?.sentCount == 3)
        #expect(client.wake == 30 * ms)
    }

    @Test("closed model: intended at the send, no lags, a message waiting for the window is not owed")
    func closedModel() throws {
        var client = PublishingClient(window: 2, streams: [try stream(0, plan: .closed)])
        client.now = 7 * ms
        client.publishDue()
        #expect(client.takeSent() == [.init(stream: 0, sequence: 0, intended: 7 * ms), .init(stream: 0, sequence: 1, intended: 7 * ms)])
        #expect(client.lags.count == 2 && client.lags.allSatisfy { $0 == nil })
        client.now = 9 * ms
        client.ack()
        #expect(client.takeSent() == [.init(stream: 0, sequence: 2, intended: 9 * ms)])
        #expect(client.publisher.owedAtEnd(now: 9 * ms, connected: true, buffers: []).unsent == 0)
    }

    @Test("a turn hands out at most the schedule's maxPerTurn and wakes at once for the rest")
    func turnBudget() throws {
        var client = PublishingClient(window: 100, streams: [try stream(0, plan: .interval(period: ms), maxPerTurn: 3)])
        client.now = 9 * ms
        client.publishDue()
        #expect(client.takeSent() == sends(0, 0...2, every: ms))
        #expect(client.wake == 3 * ms)
    }

    @Test("offline drop_oldest: the reconnect buffers what came due, skips the oldest beyond capacity, flushes the rest")
    func offlineDropOldest() throws {
        var client = PublishingClient(window: 10, streams: [try stream(0, plan: .interval(period: 10 * ms))])
        client.publishDue()
        #expect(client.takeSent() == sends(0, 0...0, every: 10 * ms))
        // Offline from 5 ms to 55 ms: slots 10...50 came due (5), the buffer holds 3.
        client.now = 55 * ms
        let buffers: [OfflineBuffer?] = [OfflineBuffer(capacity: 3, overflow: .dropOldest)]
        let counts = client.publisher.resumeFromOffline(now: client.now, buffers: buffers)
        #expect(counts == OfflineCounts(buffered: 5, flushed: 0, overflowed: 2))
        client.publishDue()
        // The newest three go with their intended times, numbered on densely.
        #expect(client.takeSent() == [.init(stream: 0, sequence: 1, intended: 30 * ms), .init(stream: 0, sequence: 2, intended: 40 * ms),
                                      .init(stream: 0, sequence: 3, intended: 50 * ms)])
        #expect(client.flushed == 3)
        #expect(client.wake == 60 * ms)
        // Nothing counted twice at the next reconnect.
        #expect(client.publisher.resumeFromOffline(now: 58 * ms, buffers: buffers) == OfflineCounts())
    }

    @Test("offline drop_newest: the oldest are kept and flushed, the newer ones skipped once the flush is out")
    func offlineDropNewest() throws {
        var client = PublishingClient(window: 2, streams: [try stream(0, plan: .interval(period: 10 * ms))])
        client.publishDue()
        client.ack()
        #expect(client.takeSent() == sends(0, 0...0, every: 10 * ms))
        client.now = 55 * ms
        let buffers: [OfflineBuffer?] = [OfflineBuffer(capacity: 3, overflow: .dropNewest)]
        #expect(client.publisher.resumeFromOffline(now: client.now, buffers: buffers)
            == OfflineCounts(buffered: 5, flushed: 0, overflowed: 2))
        client.publishDue()
        // The window takes two of the three buffered (10, 20 ms); the third waits.
        #expect(client.takeSent() == [.init(stream: 0, sequence: 1, intended: 10 * ms), .init(stream: 0, sequence: 2, intended: 20 * ms)])
        #expect(client.flushed == 2)
        // Publishing stops while connected: the waiting message is unsent; slots 40, 50 are still in the
        // schedule (skipped only after the flush), so a connected client owes them too.
        #expect(client.publisher.owedAtEnd(now: 55 * ms, connected: true, buffers: buffers).unsent == 3)
        client.ack()
        // The last buffered message (30 ms) goes; then slots 40 and 50 are skipped: next is 60 ms.
        #expect(client.takeSent() == [.init(stream: 0, sequence: 3, intended: 30 * ms)])
        #expect(client.flushed == 3)
        #expect(client.wake == 60 * ms)
        #expect(client.publisher.owedAtEnd(now: 55 * ms, connected: true, buffers: buffers).unsent == 0)
    }

    @Test("publishing ends while offline: only what the buffer holds is unsent, the rest overflowed")
    func endsOffline() throws {
        var client = PublishingClient(window: 10, streams: [try stream(0, plan: .interval(period: 10 * ms))])
        client.publishDue()
        let buffers: [OfflineBuffer?] = [OfflineBuffer(capacity: 3, overflow: .dropOldest)]
        // Offline from 5 ms to the end at 75 ms: slots 10...70 came due (7).
        let owed = client.publisher.owedAtEnd(now: 75 * ms, connected: false, buffers: buffers)
        #expect(owed.unsent == 3)
        #expect(owed.offline == OfflineCounts(buffered: 7, flushed: 0, overflowed: 4))
        // Without a buffer, everything due is unsent.
        #expect(client.publisher.owedAtEnd(now: 75 * ms, connected: false, buffers: []).unsent == 7)
    }

    @Test("a reconnect restarts an on-connect stream whose message went out, not one still waiting")
    func onConnectRestart() throws {
        var client = PublishingClient(window: 1, streams: [try stream(0, plan: .onConnect), try stream(1, plan: .onConnect)])
        client.publishDue()
        #expect(client.takeSent() == [.init(stream: 0, sequence: 0, intended: 0)])
        #expect(client.publisher.streams[1].pending != nil)
        client.publisher.restartOnConnectStreams()
        #expect(client.publisher.streams[0].schedule == nil)
        #expect(client.publisher.streams[1].schedule != nil)
        // The next connection starts stream 0's schedule again (only streams without one are started).
        client.publisher.startSchedules(now: 100 * ms, seed: 7, shapes: [PublishShape(plan: .onConnect), PublishShape(plan: .interval(period: ms))],
                                        plans: { _ in true })
        #expect(client.publisher.streams[0].schedule?.start == 100 * ms)
        #expect(client.publisher.streams[1].schedule?.plan == .onConnect)
    }

    @Test("schedules start at a phase within the first period; plans the filter refuses are left unstarted")
    func startSchedules() throws {
        var streams = [try stream(0, plan: .interval(period: 10 * ms)), try stream(1, plan: .onConnect)]
        streams[0].schedule = nil
        streams[1].schedule = nil
        var publisher = ClientPublisher(streams: streams)
        let shapes = [PublishShape(plan: .interval(period: 10 * ms)), PublishShape(plan: .onConnect)]
        publisher.startSchedules(now: 1_000 * ms, seed: 42, shapes: shapes, plans: { $0 != .onConnect })
        let start = try #require(publisher.streams[0].schedule?.start)
        #expect(start >= 1_000 * ms && start < 1_010 * ms)
        #expect(publisher.streams[1].schedule == nil)
        // The same seed and stream id give the same phase.
        var again = ClientPublisher(streams: streams)
        again.startSchedules(now: 1_000 * ms, seed: 42, shapes: shapes, plans: { _ in true })
        #expect(again.streams[0].schedule?.start == start)
        #expect(again.streams[1].schedule?.start == 1_000 * ms)
    }
}
