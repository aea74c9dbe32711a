import Testing
@testable import FleetEngine

private let second: UInt64 = 1_000_000_000
private let ms: UInt64 = 1_000_000

@Suite("ReconnectPolicy")
struct ReconnectPolicyTests {
    private func decisions(_ policy: ReconnectPolicy, attempts: Int, seed: UInt64 = 1) -> [ReconnectPolicy.Decision] {
        var random = SeededRandom(seed: seed)
        return (1...attempts).map { policy.decision(forAttempt: $0, random: &random) }
    }

    @Test("none gives up at once")
    func none() {
        #expect(decisions(.none, attempts: 2) == [.giveUp, .giveUp])
    }

    @Test("the mobile app's policy: 5 immediate retries, then every 4 s, until the attempt limit")
    func immediateThenInterval() {
        let policy = ReconnectPolicy.immediateThenInterval(retries: 5, interval: 4 * second, maxAttempts: 8)
        #expect(decisions(policy, attempts: 9) == [
            .retry(afterNanoseconds: 0), .retry(afterNanoseconds: 0), .retry(afterNanoseconds: 0),
            .retry(afterNanoseconds: 0), .retry(afterNanoseconds: 0),
            .retry(afterNanoseconds: 4 * second), .retry(afterNanoseconds: 4 * second),
            .retry(afterNanoseconds: 4 * second), .giveUp,
        ])
        let unlimited = ReconnectPolicy.immediateThenInterval(retries: 0, interval: 2 * second)
        #expect(decisions(unlimited, attempts: 3) == Array(repeating: .retry(afterNanoseconds: 2 * second), count: 3))
    }

    @Test("backoff ceilings double from the base up to the cap without overflowing")
    func ceilings() {
        let ceilings = (1...7).map { ReconnectPolicy.backoffCeiling(base: 100 * ms, cap: second, attempt: $0) }
        #expect(ceilings == [100 * ms, 200 * ms, 400 * ms, 800 * ms, second, second, second])
        #expect(ReconnectPolicy.backoffCeiling(base: 3, cap: UInt64.max, attempt: 200) == UInt64.max)
        #expect(ReconnectPolicy.backoffCeiling(base: 1 << 62, cap: UInt64.max, attempt: 2) == 1 << 63)
        #expect(ReconnectPolicy.backoffCeiling(base: 1 << 62, cap: UInt64.max, attempt: 3) == UInt64.max)
    }

    @Test("full jitter draws each delay uniformly in 0...ceiling from the client's generator")
    func fullJitter() {
        let policy = ReconnectPolicy.exponentialBackoff(base: 100 * ms, cap: second, maxAttempts: 6)
        let got = decisions(policy, attempts: 7, seed: 77)
        var random = SeededRandom(seed: 77)
        let ceilings = [100 * ms, 200 * ms, 400 * ms, 800 * ms, second, second]
        let expected = ceilings.map { ReconnectPolicy.Decision.retry(afterNanoseconds: random.next(below: $0 + 1)) }
        #expect(got == expected + [.giveUp])
        for (decision, ceiling) in zip(got, ceilings) {
            guard case let .retry(delay) = decision else { Issue.record("expected a retry"); continue }
            #expect(delay <= ceiling)
        }
        // The mean of many draws at the cap is about half the cap.
        var sample = SeededRandom(seed: 5)
        var sum: UInt64 = 0
        for _ in 0..<20_000 {
            if case let .retry(delay) = policy.decision(forAttempt: 6, random: &sample) { sum += delay }
        }
        #expect(abs(Double(sum) / 20_000 - Double(second) / 2) < Double(second) / 50)
    }

    @Test("invalid parameters are described", arguments: [
        (ReconnectPolicy.immediateThenInterval(retries: -1, interval: 1), "reconnect retries must be 0 or more, got -1"),
        (.exponentialBackoff(base: 0, cap: 5), "reconnect backoff base must be greater than 0"),
        (.exponentialBackoff(base: 10, cap: 5), "reconnect backoff cap (5 ns) must not be below its base (10 ns)"),
        (.exponentialBackoff(base: 1, cap: 5, maxAttempts: 0), "reconnect maxAttempts must be at least 1, got 0"),
    ])
    func validation(policy: ReconnectPolicy, message: String) {
        #expect(policy.validationError == message)
    }

    @Test("valid parameters have no validation error")
    func valid() {
        #expect(ReconnectPolicy.none.validationError == nil)
        #expect(ReconnectPolicy.immediateThenInterval(retries: 5, interval: 4 * second).validationError == nil)
        #expect(ReconnectPolicy.exponentialBackoff(base: 1, cap: 1, maxAttempts: 1).validationError == nil)
    }
}

@Suite("ConnectPacer")
struct ConnectPacerTests {
    @Test("starts follow the target rate, one interval apart")
    func rate() {
        var pacer = ConnectPacer(ratePerSecond: 10, maxInFlight: 100, now: 1_000 * ms)
        #expect(pacer.intervalNanoseconds == 100 * ms)
        #expect(pacer.mayStart(now: 1_000 * ms))
        pacer.started(now: 1_000 * ms)
        #expect(!pacer.mayStart(now: 1_099 * ms))
        #expect(pacer.nextAllowedTime(now: 1_050 * ms) == 1_100 * ms)
        #expect(pacer.mayStart(now: 1_100 * ms))
        pacer.started(now: 1_130 * ms)  // started late: the next one is an interval after the actual start
        #expect(pacer.nextAllowedTime(now: 1_130 * ms) == 1_230 * ms)
    }

    @Test("after an idle period, only `burst` starts go back to back")
    func burst() {
        var pacer = ConnectPacer(ratePerSecond: 1_000, burst: 3, maxInFlight: 100, now: 0)
        var now: UInt64 = 50 * ms  // long idle: no credit beyond the burst
        var startedAtOnce = 0
        while pacer.mayStart(now: now) {
            pacer.started(now: now)
            startedAtOnce += 1
        }
        #expect(startedAtOnce == 3)
        #expect(pacer.nextAllowedTime(now: now) == now + 1 * ms)
        now += 1 * ms
        #expect(pacer.mayStart(now: now))
    }

    /// As a lane paces connects: timers fire on 1 ms ticks, the turn runs 0.6 ms after its tick, and the clients
    /// a turn could not start retry when the pacer next allows, rounded up to a tick (every client is due).
    /// Started within the first second at 1,000/s:
    static func startedInOneSecond(burst: Int) -> Int {
        var pacer = ConnectPacer(ratePerSecond: 1_000, burst: burst, maxInFlight: 1_000_000, now: 0)
        var started = 0
        var timer: UInt64 = 1 * ms
        while true {
            let now = timer + 600_000
            if now > 1_000 * ms { return started }
            while pacer.mayStart(now: now) {
                pacer.started(now: now)
                started += 1
            }
            let next = pacer.nextAllowedTime(now: now)!
            timer = (next + ms - 1) / ms * ms
        }
    }

    @Test("the lane's burst keeps the rate although every start is up to a tick late; with none it halves")
    func lateStarts() {
        #expect(Lane.connectBurst(ratePerSecond: 1_000) == 10)
        #expect(Lane.connectBurst(ratePerSecond: 50) == 2)
        #expect(Lane.connectBurst(ratePerSecond: 25_000) == 250)
        #expect(Lane.connectBurst(ratePerSecond: nil) == 1)
        #expect(Self.startedInOneSecond(burst: Lane.connectBurst(ratePerSecond: 1_000)) == 1_008)  // 10 at once, then 2 per 2 ms: the rate plus one burst
        #expect(Self.startedInOneSecond(burst: 1) == 500)    // one per 2 ms: each late start pushed the next
    }

    @Test("the in-flight cap blocks until an attempt finishes")
    func inFlightCap() {
        var pacer = ConnectPacer(ratePerSecond: nil, maxInFlight: 2, now: 0)
        pacer.started(now: 0)
        pacer.started(now: 0)
        #expect(!pacer.mayStart(now: 5))
        #expect(pacer.nextAllowedTime(now: 5) == nil)
        pacer.finished()
        #expect(pacer.inFlight == 1)
        #expect(pacer.mayStart(now: 5))
        #expect(pacer.nextAllowedTime(now: 5) == 5)
        pacer.finished()
        pacer.finished()  // an extra finish does not go negative
        #expect(pacer.inFlight == 0)
        #expect(pacer.startedCount == 2)
    }

    @Test("a fractional rate rounds its interval to whole nanoseconds")
    func fractionalRate() {
        #expect(ConnectPacer(ratePerSecond: 3, maxInFlight: 1, now: 0).intervalNanoseconds == 333_333_333)
        #expect(ConnectPacer(ratePerSecond: 0.5, maxInFlight: 1, now: 0).intervalNanoseconds == 2_000_000_000)
        #expect(ConnectPacer(ratePerSecond: 0, maxInFlight: 1, now: 0).intervalNanoseconds == 0)
    }

    /// A simulated ramp: each attempt stays in flight for 30 ms. At 2,000/s with a window of 100 the rate binds
    /// (60 in flight at most), so start n happens at n * 0.5 ms. With a window of 10 the window binds: start n
    /// waits for the end of start n - 10, so it happens at (n / 10) * 30 ms + (n % 10) * 0.5 ms.
    @Test("a simulated ramp of 10,000 connects is limited by the rate or by the window", arguments: [
        (100, 9_999 * 500_000 as UInt64),
        (10, 999 * 30 * ms + 9 * 500_000),
    ])
    func ramp(maxInFlight: Int, lastStart: UInt64) {
        var pacer = ConnectPacer(ratePerSecond: 2_000, maxInFlight: maxInFlight, now: 0)
        var now: UInt64 = 0
        var attemptEnds: [UInt64] = []
        var started = 0
        var lastStartTime: UInt64 = 0
        while started < 10_000 {
            attemptEnds.removeAll { end in
                guard end <= now else { return false }
                pacer.finished()
                return true
            }
            if pacer.mayStart(now: now) {
                pacer.started(now: now)
                attemptEnds.append(now + 30 * ms)
                lastStartTime = now
                started += 1
                continue
            }
            var next = UInt64.max
            if let allowed = pacer.nextAllowedTime(now: now) { next = allowed }
            if let end = attemptEnds.min() { next = min(next, end) }
            now = next
        }
        #expect(lastStartTime == lastStart)
    }
}
