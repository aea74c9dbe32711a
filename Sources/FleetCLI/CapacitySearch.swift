/// Which level `fleetbench capacity` tries next: a pure state machine, fed each level's verdict.
///
/// First a coarse ramp: LOW, then doubling (2·LOW, 4·LOW, ...) up to HIGH, until a level fails. Then a bisection
/// between the highest passing and the lowest failing level, until they are at most `precision` apart (a share
/// of the passing level; at least one step of 1 for whole-number levels). Bounded: at most `maxLevels` levels.
///
///     var search = CapacitySearch(low: 100, high: 5000, wholeNumbers: true)
///     while let level = search.next() { search.record(level, passed: runPasses(level)) }
///     search.maxPassing   // nil when even LOW failed
struct CapacitySearch: Equatable, Sendable {
    let low: Double
    let high: Double
    /// Levels are whole numbers (a client count, an integer rate): midpoints round down, the gap ends at 1.
    let wholeNumbers: Bool
    /// Bisection stops when failing - passing <= precision x passing (e.g. 0.05).
    let precision: Double
    let maxLevels: Int

    enum Phase: String, Sendable { case ramp, bisect, done }

    private(set) var phase: Phase = .ramp
    /// Every level tried, in order, with its verdict.
    private(set) var tried: [(level: Double, passed: Bool)] = []
    private(set) var maxPassing: Double?
    private(set) var minFailing: Double?

    static func == (left: CapacitySearch, right: CapacitySearch) -> Bool {
        left.low == right.low && left.high == right.high && left.phase == right.phase
            && left.tried.map(\.level) == right.tried.map(\.level) && left.tried.map(\.passed) == right.tried.map(\.passed)
    }

    init(low: Double, high: Double, wholeNumbers: Bool, precision: Double = 0.05, maxLevels: Int = 24) {
        precondition(low > 0 && high >= low, "capacity search needs 0 < LOW <= HIGH")
        self.low = low
        self.high = high
        self.wholeNumbers = wholeNumbers
        self.precision = max(precision, 0)
        self.maxLevels = max(maxLevels, 1)
    }

    /// The level to run next, nil when the search is over.
    func next() -> Double? {
        guard phase != .done, tried.count < maxLevels else { return nil }
        guard let last = tried.last else { return low }
        switch phase {
        case .ramp:
            return min(high, rounded(last.level * 2))
        case .bisect:
            guard let passing = maxPassing, let failing = minFailing else { return nil }
            return rounded((passing + failing) / 2)
        case .done:
            return nil
        }
    }

    /// The verdict of the level `next()` gave.
    mutating func record(_ level: Double, passed: Bool) {
        tried.append((level, passed))
        if passed {
            maxPassing = max(maxPassing ?? level, level)
        } else {
            minFailing = min(minFailing ?? level, level)
        }
        switch phase {
        case .ramp:
            if !passed {
                phase = maxPassing == nil ? .done : .bisect
            } else if level >= high {
                phase = .done
            }
        case .bisect, .done:
            break
        }
        if phase == .bisect, let passing = maxPassing, let failing = minFailing, closeEnough(passing, failing) {
            phase = .done
        }
        if tried.count >= maxLevels { phase = .done }
    }

    /// The gap between the passing and failing levels is within the precision (or no level fits between them).
    private func closeEnough(_ passing: Double, _ failing: Double) -> Bool {
        let gap = failing - passing
        if wholeNumbers && gap <= 1 { return true }
        if !wholeNumbers && gap <= Self.decimalResolution { return true }
        return gap <= precision * passing
    }

    /// Decimal levels are rounded to this (they become `--set` values).
    static let decimalResolution = 0.001

    private func rounded(_ value: Double) -> Double {
        // In whole thousandths (a tiny nudge keeps 0.29 x 1000 = 289.99999999999994 at 290).
        wholeNumbers ? value.rounded(.down) : ((value * 1000) + 1e-6).rounded(.down) / 1000
    }

    /// The levels a search tries when `passes` judges each: the unit tests' view of the whole search.
    static func levels(low: Double, high: Double, wholeNumbers: Bool, precision: Double = 0.05, maxLevels: Int = 24,
                       passes: (Double) -> Bool) -> (levels: [Double], maxPassing: Double?) {
        var search = CapacitySearch(low: low, high: high, wholeNumbers: wholeNumbers, precision: precision, maxLevels: maxLevels)
        while let level = search.next() { search.record(level, passed: passes(level)) }
        return (search.tried.map(\.level), search.maxPassing)
    }
}
