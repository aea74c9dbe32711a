import Testing
@testable import FleetEngine

private let ms: UInt64 = 1_000_000
private let second: UInt64 = 1_000_000_000

/// Runs one turn and returns what it handed out.
private func turn(_ schedule: inout PublishSchedule, at now: UInt64) -> (sends: [ScheduledSend], dropped: UInt64) {
    var turn = schedule.beginTurn(now: now)
    var sends: [ScheduledSend] = []
    while let send = schedule.next(in: &turn) { sends.append(send) }
    return (sends, turn.dropped)
}

@Suite("PublishSchedule")
struct PublishScheduleTests {
    let start: UInt64 = 10 * second

    @Test("a fixed interval keeps its grid even when sends are late")
    func intervalGrid() throws {
        var schedule = try PublishSchedule(plan: .interval(period: second), start: start, random: SeededRandom(seed: 1))
        #expect(turn(&schedule, at: start - 1).sends.isEmpty)
        #expect(turn(&schedule, at: start).sends == [ScheduledSend(sequence: 0, intendedTime: start, lag: 0)])
        #expect(schedule.nextIntendedTime == start + second)
        // Sent 3 ms late: the lag is reported, the next slot stays at start + 2 s.
        #expect(turn(&schedule, at: start + second + 3 * ms).sends
            == [ScheduledSend(sequence: 1, intendedTime: start + second, lag: 3 * ms)])
        #expect(schedule.nextIntendedTime == start + 2 * second)
    }

    @Test("catch-up sends the whole backlog with each slot's own lag, bounded per turn")
    func catchUp() throws {
        var schedule = try PublishSchedule(plan: .interval(period: 100 * ms), start: start, behind: .catchUp,
                                       maxPerTurn: 4, random: SeededRandom(seed: 1))
        let now = start + 1_050 * ms  // slots 0...10 are due
        let first = turn(&schedule, at: now)
        #expect(first.sends.map(\.intendedTime) == [start, start + 100 * ms, start + 200 * ms, start + 300 * ms])
        #expect(first.sends.map(\.lag) == [1_050 * ms, 950 * ms, 850 * ms, 750 * ms])
        #expect(first.sends.map(\.sequence) == [0, 1, 2, 3])
        #expect(first.dropped == 0)
        #expect(schedule.nextIntendedTime == start + 400 * ms)  // still behind: the lane wakes it next tick
        #expect(turn(&schedule, at: now).sends.map(\.sequence) == [4, 5, 6, 7])
        let last = turn(&schedule, at: now + ms)
        #expect(last.sends.map(\.lag) == [251 * ms, 151 * ms, 51 * ms])
        #expect(schedule.sentCount == 11)
        #expect(schedule.droppedCount == 0)
    }

    @Test("drop skips superseded slots, counts them, and numbers only the messages sent")
    func drop() throws {
        var schedule = try PublishSchedule(plan: .interval(period: 100 * ms), start: start, behind: .drop,
                                       random: SeededRandom(seed: 1))
        #expect(turn(&schedule, at: start).sends.map(\.sequence) == [0])
        let late = turn(&schedule, at: start + 1_050 * ms)  // slots 1...10 due: 1...9 superseded by 10
        #expect(late.dropped == 9)
        #expect(late.sends == [ScheduledSend(sequence: 1, intendedTime: start + 1_000 * ms, lag: 50 * ms)])
        #expect(schedule.nextIntendedTime == start + 1_100 * ms)
        #expect(schedule.droppedCount == 9)
        #expect(schedule.sentCount == 2)
        // A single late slot is not superseded: it is sent with its lag.
        #expect(turn(&schedule, at: start + 1_199 * ms).sends.map(\.lag) == [99 * ms])
    }

    @Test("a rate lays an exact grid without accumulating rounding", arguments: [
        (3.0, [0, 333_333_333, 666_666_666, 1_000_000_000, 1_333_333_333] as [UInt64]),
        (1_000.0, [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000]),
        (0.5, [0, 2_000_000_000, 4_000_000_000, 6_000_000_000, 8_000_000_000]),
    ])
    func rateGrid(perSecond: Double, offsets: [UInt64]) throws {
        var schedule = try PublishSchedule(plan: .rate(perSecond: perSecond), start: start, maxPerTurn: 100,
                                       random: SeededRandom(seed: 1))
        let sends = turn(&schedule, at: start + offsets[4]).sends
        #expect(sends.map { $0.intendedTime - start } == offsets)
    }

    @Test("bursts: n messages share an intended time; drop skips whole superseded bursts")
    func bursts() throws {
        var catchUp = try PublishSchedule(plan: .bursts(count: 3, every: second), start: start, maxPerTurn: 4,
                                      random: SeededRandom(seed: 1))
        let first = turn(&catchUp, at: start + second)
        #expect(first.sends.map(\.intendedTime) == [start, start, start, start + second])
        var dropping = try PublishSchedule(plan: .bursts(count: 3, every: second), start: start, behind: .drop,
                                       maxPerTurn: 10, random: SeededRandom(seed: 1))
        let late = turn(&dropping, at: start + 2_500 * ms)
        #expect(late.dropped == 6)
        #expect(late.sends == [
            ScheduledSend(sequence: 0, intendedTime: start + 2 * second, lag: 500 * ms),
            ScheduledSend(sequence: 1, intendedTime: start + 2 * second, lag: 500 * ms),
            ScheduledSend(sequence: 2, intendedTime: start + 2 * second, lag: 500 * ms),
        ])
        #expect(dropping.nextIntendedTime == start + 3 * second)
    }

    @Test("on-connect sends exactly one message at the start")
    func onConnect() throws {
        var schedule = try PublishSchedule(plan: .onConnect, start: start, random: SeededRandom(seed: 1))
        #expect(turn(&schedule, at: start + 7 * ms).sends == [ScheduledSend(sequence: 0, intendedTime: start, lag: 7 * ms)])
        #expect(schedule.isFinished)
        #expect(turn(&schedule, at: start + 100 * second).sends.isEmpty)
    }

    @Test("a slot limit ends the plan; dropped slots count towards it")
    func slotLimit() throws {
        var schedule = try PublishSchedule(plan: .interval(period: second), start: start, behind: .drop, slotLimit: 5,
                                       random: SeededRandom(seed: 1))
        let late = turn(&schedule, at: start + 3 * second)
        #expect(late.dropped == 3)
        #expect(late.sends.map(\.intendedTime) == [start + 3 * second])
        #expect(turn(&schedule, at: start + 10 * second).sends.map(\.intendedTime) == [start + 4 * second])
        #expect(schedule.isFinished)
        #expect(schedule.sentCount + schedule.droppedCount == 5)
        let none = try PublishSchedule(plan: .interval(period: second), start: start, slotLimit: 0, random: SeededRandom(seed: 1))
        #expect(none.isFinished)
    }

    @Test("jitter delays each grid point by a uniform draw from the stream's generator")
    func jitter() throws {
        var schedule = try PublishSchedule(plan: .interval(period: second, jitter: 200 * ms), start: start,
                                       maxPerTurn: 100, random: SeededRandom(seed: 42, stream: 3))
        let sends = turn(&schedule, at: start + 10 * second).sends
        var random = SeededRandom(seed: 42, stream: 3)
        let expected = (0..<UInt64(sends.count)).map { start + $0 * second + random.nextUInt64(in: 0...(200 * ms)) }
        #expect(sends.map(\.intendedTime) == expected)
        #expect(sends.count >= 9)
        #expect(sends.allSatisfy { ($0.intendedTime - start) % second <= 200 * ms })
    }

    @Test("Poisson gaps are exponential draws from the stream's generator, summed from the start")
    func poisson() throws {
        var schedule = try PublishSchedule(plan: .poisson(perSecond: 100), start: start, maxPerTurn: 100_000,
                                       random: SeededRandom(seed: 8))
        let sends = turn(&schedule, at: start + 100 * second).sends
        var random = SeededRandom(seed: 8)
        var time = start
        var expected: [UInt64] = []
        while true {
            time += random.nextExponentialNanoseconds(mean: 1e7)
            if time > start + 100 * second { break }
            expected.append(time)
        }
        #expect(sends.map(\.intendedTime) == expected)
        #expect(abs(sends.count - 10_000) < 400)  // about 10,000 arrivals, sd 100
    }

    @Test("drop under Poisson: sent plus dropped equals the slots due, one sent per turn at most")
    func poissonDrop() throws {
        var schedule = try PublishSchedule(plan: .poisson(perSecond: 1_000), start: start, behind: .drop,
                                       random: SeededRandom(seed: 8))
        var reference = SeededRandom(seed: 8)
        var time = start
        var due = 0
        while true {
            time += reference.nextExponentialNanoseconds(mean: 1e6)
            if time > start + second { break }
            due += 1
        }
        let late = turn(&schedule, at: start + second)
        #expect(late.sends.count == 1)
        #expect(UInt64(due) == late.dropped + 1)
        #expect(late.sends[0].lag < 10 * ms)
    }

    @Test("invalid plans are described", arguments: [
        (PublishPlan.interval(period: 0), "publish interval must be greater than 0"),
        (.interval(period: 5, jitter: 6), "publish jitter (6 ns) must not exceed the interval (5 ns)"),
        (.rate(perSecond: 0), "publish rate must be in (0, 1e9] per second, got 0.0"),
        (.poisson(perSecond: -1), "publish rate must be in (0, 1e9] per second, got -1.0"),
        (.bursts(count: 0, every: 5), "burst size must be at least 1, got 0"),
        (.bursts(count: 2, every: 0), "burst period must be greater than 0"),
    ])
    func validation(plan: PublishPlan, message: String) {
        #expect(plan.validationError == message)
        #expect(throws: PublishPlanError(message: message)) {
            try PublishSchedule(plan: plan, start: 0, random: SeededRandom(seed: 1))
        }
        #expect(PublishPlan.onConnect.validationError == nil)
    }
}

@Suite("PublishSchedule: closed model")
struct ClosedPublishScheduleTests {
    let start: UInt64 = 10 * second

    @Test("a closed plan hands out its turn's whole budget at the turn's time, with no lag")
    func closedBudget() throws {
        var schedule = try PublishSchedule(plan: .closed, start: start, maxPerTurn: 3, random: SeededRandom(seed: 1))
        #expect(schedule.isClosed)
        let first = turn(&schedule, at: start + 5 * ms)
        #expect(first.sends == (0..<3).map { ScheduledSend(sequence: $0, intendedTime: start + 5 * ms, lag: 0) })
        #expect(first.dropped == 0)
        // The next turn, a second later: still due at once, intended at the new turn, still no lag.
        #expect(turn(&schedule, at: start + second).sends
            == (3..<6).map { ScheduledSend(sequence: $0, intendedTime: start + second, lag: 0) })
        // Due at once, whenever asked: the lane re-arms its timer for the next tick.
        #expect(schedule.nextIntendedTime == start)
        // It owes nothing at the end, however long it ran.
        #expect(schedule.slotsDue(by: start + 3_600 * second) == 0)
    }

    @Test("a closed plan stops at its limit; drop never skips anything")
    func closedLimit() throws {
        var schedule = try PublishSchedule(plan: .closed, start: start, behind: .drop, maxPerTurn: 4, slotLimit: 10,
                                           random: SeededRandom(seed: 1))
        #expect(turn(&schedule, at: start).sends.map(\.sequence) == [0, 1, 2, 3])
        #expect(turn(&schedule, at: start + ms).sends.map(\.sequence) == [4, 5, 6, 7])
        let last = turn(&schedule, at: start + 2 * ms)
        #expect(last.sends.map(\.sequence) == [8, 9])
        #expect(last.dropped == 0)
        #expect(schedule.isFinished)
        #expect(schedule.nextIntendedTime == nil)
        #expect(turn(&schedule, at: start + 3 * ms).sends.isEmpty)
        #expect(schedule.sentCount == 10)
        #expect(schedule.droppedCount == 0)
    }
}
