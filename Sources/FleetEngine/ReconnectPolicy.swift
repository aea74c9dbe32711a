/// What a client does after its connection is lost or a connect attempt fails.
///
/// A pure function from the attempt number (1 = the first reconnect after the loss) and the client's random
/// generator to a delay or giving up. Delays are nanoseconds. The attempt counter is the engine's: it resets
/// it to 0 when a connection succeeds (CONNACK accepted).
public enum ReconnectPolicy: Sendable, Equatable {
    /// Never reconnect.
    case none
    /// `retries` immediate attempts, then one every `interval` (a mobile app's policy: 5 retries, then every 4 s).
    case immediateThenInterval(retries: Int, interval: UInt64, maxAttempts: Int? = nil)
    /// Exponential backoff with full jitter: attempt n waits a uniform delay in 0...min(cap, base * 2^(n-1)).
    /// Full jitter spreads a fleet that lost its broker at once, so the reconnects do not arrive in waves.
    case exponentialBackoff(base: UInt64, cap: UInt64, maxAttempts: Int? = nil)

    public enum Decision: Sendable, Equatable {
        case retry(afterNanoseconds: UInt64)
        case giveUp
    }

    /// The decision for reconnect attempt `attempt` (1-based). Attempt numbers below 1 are treated as 1.
    public func decision(forAttempt attempt: Int, random: inout SeededRandom) -> Decision {
        let attempt = max(attempt, 1)
        switch self {
        case .none:
            return .giveUp
        case let .immediateThenInterval(retries, interval, maxAttempts):
            if let maxAttempts, attempt > maxAttempts { return .giveUp }
            return .retry(afterNanoseconds: attempt <= retries ? 0 : interval)
        case let .exponentialBackoff(base, cap, maxAttempts):
            if let maxAttempts, attempt > maxAttempts { return .giveUp }
            let ceiling = Self.backoffCeiling(base: base, cap: cap, attempt: attempt)
            return .retry(afterNanoseconds: random.nextUInt64(in: 0...ceiling))
        }
    }

    /// min(cap, base * 2^(attempt-1)) without overflow.
    static func backoffCeiling(base: UInt64, cap: UInt64, attempt: Int) -> UInt64 {
        let shift = attempt - 1
        guard base > 0 else { return 0 }
        if shift > base.leadingZeroBitCount { return cap }  // base << shift would overflow
        return min(cap, base << UInt64(shift))
    }

    /// A description of what is wrong with the parameters, or nil when they are usable.
    public var validationError: String? {
        switch self {
        case .none:
            return nil
        case let .immediateThenInterval(retries, _, maxAttempts):
            if retries < 0 { return "reconnect retries must be 0 or more, got \(retries)" }
            if let maxAttempts, maxAttempts < 1 { return "reconnect maxAttempts must be at least 1, got \(maxAttempts)" }
            return nil
        case let .exponentialBackoff(base, cap, maxAttempts):
            if base == 0 { return "reconnect backoff base must be greater than 0" }
            if cap < base { return "reconnect backoff cap (\(cap) ns) must not be below its base (\(base) ns)" }
            if let maxAttempts, maxAttempts < 1 { return "reconnect maxAttempts must be at least 1, got \(maxAttempts)" }
            return nil
        }
    }
}
