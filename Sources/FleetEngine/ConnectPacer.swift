/// Paces connection attempts of one lane: a target rate and a cap on attempts in flight.
///
/// Why: mosquitto listens with a backlog of 100. Opening thousands of sockets at once overflows it; the kernel
/// drops SYNs that are retried only after 1-7 s, which made measured ramps 10-65x slower than paced ones.
///
/// The rate is a token bucket written as GCRA (a "theoretical arrival time" that advances one interval per
/// start), so it needs no refill timer: a start conforms when `now >= nextTheoreticalStart - burstTolerance`.
/// An attempt is in flight from `started` until `finished` (CONNACK, refusal, timeout or error).
public struct ConnectPacer: Sendable, Equatable {
    /// Nanoseconds between starts at the target rate; 0 = no rate limit.
    public let intervalNanoseconds: UInt64
    /// How many starts may happen back to back after an idle period.
    public let burst: Int
    public let maxInFlight: Int
    public private(set) var inFlight: Int = 0
    public private(set) var startedCount: UInt64 = 0
    private var theoreticalStart: UInt64

    /// - Parameters:
    ///   - ratePerSecond: target connects per second; nil or <= 0 means unlimited. The interval is rounded to
    ///     whole nanoseconds (1/3 s becomes 333,333,333 ns).
    ///   - burst: starts allowed back to back (at least 1).
    ///   - maxInFlight: attempts allowed at once (at least 1).
    ///   - now: monotonic time the pacer starts at; the first start is allowed at once.
    public init(ratePerSecond: Double?, burst: Int = 1, maxInFlight: Int, now: UInt64) {
        if let ratePerSecond, ratePerSecond > 0 {
            let interval = (1e9 / ratePerSecond).rounded()
            intervalNanoseconds = interval >= 0x1p63 ? UInt64(1) << 63 : UInt64(interval)
        } else {
            intervalNanoseconds = 0
        }
        self.burst = max(burst, 1)
        self.maxInFlight = max(maxInFlight, 1)
        theoreticalStart = now
    }

    private var burstTolerance: UInt64 {
        let (product, overflow) = UInt64(burst - 1).multipliedReportingOverflow(by: intervalNanoseconds)
        return overflow ? UInt64.max : product
    }

    /// Whether one more attempt may start now.
    public func mayStart(now: UInt64) -> Bool {
        inFlight < maxInFlight && now >= theoreticalStart.subtractingSaturating(burstTolerance)
    }

    /// The earliest time the next attempt may start (>= now), or nil while the in-flight cap is reached
    /// (then only `finished` frees a place).
    public func nextAllowedTime(now: UInt64) -> UInt64? {
        guard inFlight < maxInFlight else { return nil }
        return max(now, theoreticalStart.subtractingSaturating(burstTolerance))
    }

    /// Records that an attempt started now. Callers check `mayStart` first; a start that did not conform is
    /// still counted, so the pacer never loses track of sockets in flight.
    public mutating func started(now: UInt64) {
        inFlight += 1
        startedCount += 1
        theoreticalStart = max(theoreticalStart, now).addingSaturating(intervalNanoseconds)
    }

    /// Records that an attempt ended (connected, refused, timed out or failed).
    public mutating func finished() {
        if inFlight > 0 { inFlight -= 1 }
    }
}

extension UInt64 {
    @inline(__always)
    func subtractingSaturating(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }

    @inline(__always)
    func addingSaturating(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? UInt64.max : sum
    }
}
