import Testing
@testable import FleetEngine

private let ms: UInt64 = 1_000_000

private func drain(_ wheel: inout TimingWheel) -> [TimingWheel.Expired] {
    var out: [TimingWheel.Expired] = []
    while let entry = wheel.popExpired() { out.append(entry) }
    return out
}

@Suite("TimingWheel")
struct TimingWheelTests {
    @Test("an entry fires at the first advance at or after its deadline, never before")
    func firesAtDeadline() {
        var wheel = TimingWheel(clientCapacity: 4, kindsPerClient: 3, tickNanoseconds: ms, origin: 1_000 * ms)
        wheel.schedule(client: 2, kind: 1, deadline: 1_005 * ms)
        let readyJustBefore = wheel.advance(to: 1_004 * ms + 999_999)
        #expect(readyJustBefore == 0)
        let poppedTooEarly = wheel.popExpired()
        #expect(poppedTooEarly == nil)
        let readyAtDeadline = wheel.advance(to: 1_005 * ms)
        #expect(readyAtDeadline == 1)
        let popped = wheel.popExpired()
        #expect(popped == TimingWheel.Expired(client: 2, kind: 1, deadline: 1_005 * ms))
        #expect(wheel.count == 0)
    }

    @Test("a deadline inside a tick is rounded up to the tick's end, so it is never early")
    func roundsUp() {
        var wheel = TimingWheel(clientCapacity: 1, kindsPerClient: 1, tickNanoseconds: ms, origin: 0)
        wheel.schedule(client: 0, kind: 0, deadline: 7 * ms + 1)
        wheel.advance(to: 7 * ms + 500_000)
        let poppedMidTick = wheel.popExpired()
        #expect(poppedMidTick == nil)
        wheel.advance(to: 8 * ms)
        let poppedAtTickEnd = wheel.popExpired()
        #expect(poppedAtTickEnd?.deadline == 7 * ms + 1)
    }

    @Test("entries due in one advance come out in deadline order, ties by client then kind")
    func deadlineOrder() {
        var wheel = TimingWheel(clientCapacity: 10, kindsPerClient: 2, tickNanoseconds: ms, origin: 0)
        wheel.schedule(client: 5, kind: 0, deadline: 30 * ms)
        wheel.schedule(client: 1, kind: 1, deadline: 10 * ms + 700)  // same tick (11) as the next two
        wheel.schedule(client: 9, kind: 0, deadline: 10 * ms + 200)
        wheel.schedule(client: 3, kind: 1, deadline: 10 * ms + 200)
        wheel.schedule(client: 3, kind: 0, deadline: 10 * ms + 200)
        wheel.schedule(client: 0, kind: 0, deadline: 2 * ms)
        let readyCount = wheel.advance(to: 100 * ms)
        #expect(readyCount == 6)
        let order = drain(&wheel).map { [$0.client, $0.kind] }
        #expect(order == [[0, 0], [3, 0], [3, 1], [9, 0], [1, 1], [5, 0]])
    }

    @Test("rescheduling moves the single slot of a (client, kind); the old deadline never fires")
    func rescheduleMoves() {
        var wheel = TimingWheel(clientCapacity: 2, kindsPerClient: 2, tickNanoseconds: ms, origin: 0)
        wheel.schedule(client: 1, kind: 0, deadline: 5 * ms)
        wheel.schedule(client: 1, kind: 0, deadline: 500 * ms)
        #expect(wheel.count == 1)
        #expect(wheel.deadline(client: 1, kind: 0) == 500 * ms)
        wheel.advance(to: 499 * ms)
        #expect(drain(&wheel).isEmpty)
        wheel.advance(to: 500 * ms)
        #expect(drain(&wheel) == [TimingWheel.Expired(client: 1, kind: 0, deadline: 500 * ms)])
    }

    @Test("cancel removes a scheduled timer and a ready one; cancelling twice reports false")
    func cancel() {
        var wheel = TimingWheel(clientCapacity: 3, kindsPerClient: 1, tickNanoseconds: ms, origin: 0)
        wheel.schedule(client: 0, kind: 0, deadline: 5 * ms)
        wheel.schedule(client: 1, kind: 0, deadline: 5 * ms)
        wheel.schedule(client: 2, kind: 0, deadline: 9_000 * ms)
        let wasScheduled = wheel.cancel(client: 2, kind: 0)
        #expect(wasScheduled)
        let cancelledTwice = wheel.cancel(client: 2, kind: 0)
        #expect(!cancelledTwice)
        let readyCount = wheel.advance(to: 10 * ms)
        #expect(readyCount == 2)
        let cancelledReady = wheel.cancel(client: 1, kind: 0)  // already in the ready list
        #expect(cancelledReady)
        #expect(wheel.readyCount == 1)
        #expect(drain(&wheel).map(\.client) == [0])
        wheel.advance(to: 10_000 * ms)
        #expect(drain(&wheel).isEmpty)
        #expect(wheel.count == 0)
    }

    @Test("a deadline already passed fires at the next tick, also when scheduled while draining")
    func pastDeadline() {
        var wheel = TimingWheel(clientCapacity: 2, kindsPerClient: 1, tickNanoseconds: ms, origin: 0)
        wheel.schedule(client: 0, kind: 0, deadline: 3 * ms)
        wheel.advance(to: 20 * ms)
        let first = wheel.popExpired()
        #expect(first?.client == 0)
        wheel.schedule(client: 0, kind: 0, deadline: 1 * ms)  // behind: not handed out in this turn
        let poppedSameTurn = wheel.popExpired()
        #expect(poppedSameTurn == nil)
        #expect(wheel.nextExpiration() == 21 * ms)
        wheel.advance(to: 20 * ms + 999_999)
        let poppedBeforeNextTick = wheel.popExpired()
        #expect(poppedBeforeNextTick == nil)
        wheel.advance(to: 21 * ms)
        let poppedNextTick = wheel.popExpired()
        #expect(poppedNextTick == TimingWheel.Expired(client: 0, kind: 0, deadline: 1 * ms))
    }

    @Test("nextExpiration gives the exact tick of the earliest entry on any level, nil when empty")
    func nextExpiration() {
        var wheel = TimingWheel(clientCapacity: 3, kindsPerClient: 1, tickNanoseconds: ms, origin: 50 * ms)
        #expect(wheel.nextExpiration() == nil)
        wheel.schedule(client: 0, kind: 0, deadline: 50 * ms + 4_000_000 * ms)  // level 3
        #expect(wheel.nextExpiration() == 50 * ms + 4_000_000 * ms)
        wheel.schedule(client: 1, kind: 0, deadline: 50 * ms + 70 * ms + 1)  // level 1, rounded up
        #expect(wheel.nextExpiration() == 50 * ms + 71 * ms)
        wheel.schedule(client: 2, kind: 0, deadline: 52 * ms)
        #expect(wheel.nextExpiration() == 52 * ms)
        wheel.advance(to: 60 * ms)
        #expect(wheel.nextExpiration() == 60 * ms)  // one entry ready now
        _ = drain(&wheel)
        #expect(wheel.nextExpiration() == 121 * ms)
    }

    @Test("deadlines beyond the 2^36-tick span are parked and still fire on time")
    func beyondSpan() {
        var wheel = TimingWheel(clientCapacity: 2, kindsPerClient: 1, tickNanoseconds: 1, origin: 0)
        let far: UInt64 = (1 << 38) + 12_345
        wheel.schedule(client: 0, kind: 0, deadline: far)
        wheel.schedule(client: 1, kind: 0, deadline: (1 << 36) + 3)  // crosses the top level's boundary
        wheel.advance(to: (1 << 36) + 2)
        #expect(drain(&wheel).isEmpty)
        wheel.advance(to: (1 << 36) + 3)
        #expect(drain(&wheel).map(\.client) == [1])
        wheel.advance(to: far - 1)
        #expect(drain(&wheel).isEmpty)
        #expect(wheel.nextExpiration() == far)
        wheel.advance(to: far)
        #expect(drain(&wheel) == [TimingWheel.Expired(client: 0, kind: 0, deadline: far)])
    }

    @Test("a whole fleet due in one tick comes out sorted (heapsort path)")
    func largeTick() {
        var wheel = TimingWheel(clientCapacity: 500, kindsPerClient: 1, tickNanoseconds: ms, origin: 0)
        var random = SeededRandom(seed: 3)
        for client in 0..<500 {
            wheel.schedule(client: client, kind: 0, deadline: 9 * ms + random.next(below: ms))
        }
        let readyBeforeTick = wheel.advance(to: 9 * ms)
        #expect(readyBeforeTick == 0)
        let readyAtTick = wheel.advance(to: 10 * ms)
        #expect(readyAtTick == 500)
        let out = drain(&wheel)
        #expect(out.count == 500)
        #expect(zip(out, out.dropFirst()).allSatisfy { $0.deadline < $1.deadline || ($0.deadline == $1.deadline && $0.client < $1.client) })
    }

    @Test("nextExpiration does not sleep past a near entry hidden behind a parked far one")
    func nextExpirationWithParked() {
        var wheel = TimingWheel(clientCapacity: 2, kindsPerClient: 1, tickNanoseconds: 1, origin: 0)
        wheel.schedule(client: 0, kind: 0, deadline: 1 << 40)  // parked at tick 2^35
        let near: UInt64 = (1 << 35) + (1 << 30)
        wheel.schedule(client: 1, kind: 0, deadline: near)
        var wake = wheel.nextExpiration() ?? 0
        #expect(wake <= near)
        var fired: [TimingWheel.Expired] = []
        while fired.isEmpty, wake < UInt64.max {  // a lane that only wakes when told to
            wheel.advance(to: wake)
            fired = drain(&wheel)
            wake = wheel.nextExpiration() ?? .max
        }
        #expect(fired == [TimingWheel.Expired(client: 1, kind: 0, deadline: near)])
        #expect(wheel.nextExpiration() ?? 0 <= 1 << 40)
    }

    @Test("cancelAll removes every timer of one client only")
    func cancelAll() {
        var wheel = TimingWheel(clientCapacity: 2, kindsPerClient: 3, tickNanoseconds: ms, origin: 0)
        for kind in 0..<3 {
            wheel.schedule(client: 0, kind: kind, deadline: UInt64(kind + 1) * ms)
            wheel.schedule(client: 1, kind: kind, deadline: UInt64(kind + 1) * ms)
        }
        wheel.cancelAll(client: 0)
        #expect(wheel.count == 3)
        wheel.advance(to: 10 * ms)
        #expect(drain(&wheel).map { [$0.client, $0.kind] } == [[1, 0], [1, 1], [1, 2]])
    }

    /// Compares the wheel with a brute-force model over random schedule/cancel/advance sequences, with deadlines
    /// near and far (tick 1 ns so the 2^36 span is reachable) and rescheduling while draining.
    @Test("matches a brute-force model on random operations", arguments: [1 as UInt64, 2, 3, 4, 5, 6, 7, 8])
    func matchesModel(seed: UInt64) {
        let clients = 40, kinds = 3
        var wheel = TimingWheel(clientCapacity: clients, kindsPerClient: kinds, tickNanoseconds: 1, origin: 0)
        var model: [Int: (deadline: UInt64, when: UInt64)] = [:]
        var modelElapsed: UInt64 = 0
        var now: UInt64 = 0
        var random = SeededRandom(seed: seed)
        let ranges: [UInt64] = [10, 100, 5_000, 300_000, 1 << 30, 1 << 37, 1 << 40]
        func modelSchedule(_ node: Int, _ deadline: UInt64) {
            model[node] = (deadline, max(deadline, modelElapsed + 1))
        }
        for _ in 0..<3_000 {
            let op = random.next(below: 10)
            let client = Int(random.next(below: UInt64(clients)))
            let kind = Int(random.next(below: UInt64(kinds)))
            let node = client * kinds + kind
            if op < 6 {
                let span = ranges[Int(random.next(below: UInt64(ranges.count)))]
                let deadline = now &+ random.next(below: span) &- (op == 0 ? span / 2 : 0)
                let clamped = op == 0 && deadline > now ? 0 : deadline
                wheel.schedule(client: client, kind: kind, deadline: clamped)
                modelSchedule(node, clamped)
            } else if op < 7 {
                let wheelCancelled = wheel.cancel(client: client, kind: kind)
                #expect(wheelCancelled == (model.removeValue(forKey: node) != nil))
            } else {
                let span = ranges[Int(random.next(below: UInt64(ranges.count)))]
                now += random.next(below: span)
                if now > modelElapsed {
                    modelElapsed = now
                }
                var expected = model.filter { $0.value.when <= modelElapsed }
                    .map { (node: $0.key, deadline: $0.value.deadline, when: $0.value.when) }
                expected.sort { ($0.when, $0.deadline, $0.node) < ($1.when, $1.deadline, $1.node) }
                for entry in expected { model.removeValue(forKey: entry.node) }
                wheel.advance(to: now)
                var got: [Int] = []
                while let entry = wheel.popExpired() {
                    got.append(entry.client * kinds + entry.kind)
                    if random.next(below: 4) == 0 {  // reschedule from inside the drain, sometimes in the past
                        let deadline = now &+ random.next(below: 1_000) &- 500
                        wheel.schedule(client: entry.client, kind: entry.kind, deadline: deadline)
                        modelSchedule(entry.client * kinds + entry.kind, deadline)
                    }
                }
                #expect(got == expected.map(\.node))
                if got != expected.map(\.node) { return }
                // Sleeping until nextExpiration must never skip an entry.
                let earliest = model.values.map(\.when).min()
                let wake = wheel.nextExpiration()
                #expect((wake == nil) == (earliest == nil))
                if let wake, let earliest { #expect(wake <= earliest && wake > modelElapsed) }
            }
            #expect(wheel.count == model.count)
        }
    }
    /// The wheel keeps its answer for `nextExpiration` between calls; after every kind of operation (and between
    /// pops of a drain) it must equal the answer worked out from the buckets.
    @Test("the kept next expiration always equals the one walked from the buckets",
          arguments: [11 as UInt64, 12, 13, 14, 15, 16])
    func keptNextExpirationMatchesWalk(seed: UInt64) {
        let clients = 30, kinds = 2
        var wheel = TimingWheel(clientCapacity: clients, kindsPerClient: kinds, tickNanoseconds: 1, origin: 0)
        var now: UInt64 = 0
        var random = SeededRandom(seed: seed)
        let ranges: [UInt64] = [10, 100, 5_000, 300_000, 1 << 30, 1 << 37, 1 << 40]
        for _ in 0..<4_000 {
            let op = random.next(below: 10)
            let client = Int(random.next(below: UInt64(clients)))
            let kind = Int(random.next(below: UInt64(kinds)))
            let span = ranges[Int(random.next(below: UInt64(ranges.count)))]
            if op < 6 {
                wheel.schedule(client: client, kind: kind, deadline: now &+ random.next(below: span))
            } else if op < 7 {
                wheel.cancel(client: client, kind: kind)
            } else {
                now += random.next(below: span)
                wheel.advance(to: now)
                while let entry = wheel.popExpired() {
                    let walked = wheel.nextExpirationWalking()
                    #expect(wheel.nextExpiration() == walked)
                    if random.next(below: 3) == 0 {
                        wheel.schedule(client: entry.client, kind: entry.kind, deadline: now &+ random.next(below: 2_000))
                    }
                }
            }
            let walked = wheel.nextExpirationWalking()
            let kept = wheel.nextExpiration()
            #expect(kept == walked)
            if kept != walked { return }
        }
    }

    /// The commands workload's shape: every client's keep-alive deadline in one higher-level slot, the lane asking
    /// for its next wakeup every turn. Moving or cancelling an entry that is not the earliest, and scheduling a
    /// later one, reuse the kept answer; only losing the earliest entry makes the wheel walk again.
    @Test("keep-alive deadlines in one slot are walked only when the earliest one leaves")
    func keepAliveSlotWalkedOnlyWhenEarliestLeaves() {
        var wheel = TimingWheel(clientCapacity: 1_000, kindsPerClient: 1, tickNanoseconds: ms, origin: 0)
        // 60,000 + client ms: ticks 60,000-60,999, all in one level-2 slot (4,096 ticks wide) after tick 0.
        for client in 0..<1_000 { wheel.schedule(client: client, kind: 0, deadline: (60_000 + UInt64(client)) * ms) }
        // Scheduling alone keeps the answer (it only ever lowers it): no walk yet.
        #expect(wheel.nextExpiration() == 60_000 * ms)
        #expect(wheel.earliestRecomputations == 0)
        for turn in 0..<500 {
            wheel.schedule(client: 1 + turn, kind: 0, deadline: (61_000 + UInt64(turn)) * ms)
            #expect(wheel.nextExpiration() == 60_000 * ms)
        }
        wheel.cancel(client: 999, kind: 0)
        wheel.schedule(client: 998, kind: 0, deadline: 70_000 * ms)
        #expect(wheel.nextExpiration() == 60_000 * ms)
        #expect(wheel.earliestRecomputations == 0)
        wheel.schedule(client: 0, kind: 0, deadline: 62_000 * ms)  // the earliest moves away
        #expect(wheel.nextExpiration() == 60_501 * ms)
        #expect(wheel.earliestRecomputations == 1)
        wheel.schedule(client: 0, kind: 0, deadline: 30_000 * ms)  // earlier than any: taken without a walk
        #expect(wheel.nextExpiration() == 30_000 * ms)
        #expect(wheel.earliestRecomputations == 1)
        // Advancing to just before it cascades slots but fires nothing: the answer stands.
        wheel.advance(to: 29_999 * ms)
        #expect(wheel.popExpired() == nil)
        #expect(wheel.nextExpiration() == 30_000 * ms)
        #expect(wheel.earliestRecomputations == 1)
        wheel.advance(to: 60_502 * ms)
        #expect(drain(&wheel).map(\.client) == [0, 501, 502])
        #expect(wheel.nextExpiration() == 60_503 * ms)
        #expect(wheel.earliestRecomputations == 2)
    }
}
