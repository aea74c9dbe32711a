/// A vehicle's speed over one leg: up to three phases of constant acceleration. From the entry speed it
/// accelerates (or brakes, when it enters above the new limit) to a peak, holds the peak, then brakes (never
/// accelerates) to the exit speed. A stationary leg (parked, waiting at a junction) is a profile whose speeds
/// are all zero: its phase durations then only measure time.
///
/// Fields are single precision to keep a vehicle small; every distance is computed in double precision from
/// these stored values, so `distance(at: duration) == length` exactly and `distance(at:)` never decreases.
public struct SpeedProfile: Sendable, Equatable {
    /// Metres per second.
    public var entrySpeed: Float
    public var peakSpeed: Float
    public var exitSpeed: Float
    /// Seconds: entry to peak, at the peak, peak to exit.
    public var rampDuration: Float
    public var cruiseDuration: Float
    public var finalDuration: Float

    public init(entrySpeed: Float, peakSpeed: Float, exitSpeed: Float, rampDuration: Float, cruiseDuration: Float, finalDuration: Float) {
        self.entrySpeed = entrySpeed
        self.peakSpeed = peakSpeed
        self.exitSpeed = exitSpeed
        self.rampDuration = rampDuration
        self.cruiseDuration = cruiseDuration
        self.finalDuration = finalDuration
    }

    /// Standing still for `first + second` seconds (the split marks a sub-period, e.g. charging).
    public static func standing(first: Double, second: Double) -> SpeedProfile {
        SpeedProfile(entrySpeed: 0, peakSpeed: 0, exitSpeed: 0, rampDuration: Float(first), cruiseDuration: Float(second), finalDuration: 0)
    }

    /// The quickest way over `distance` metres from `entry` towards `exitTarget` without exceeding `cruise`
    /// (unless entered faster: then it brakes to `cruise` first), accelerating at most at `acceleration` and
    /// braking at most at `deceleration` (m/s²).
    ///
    /// The exit speed is `exitTarget` when it can be reached within the distance; otherwise the nearest reachable
    /// speed (a short stretch may not be long enough to brake to a stop: the vehicle then leaves it still
    /// braking, and the next leg goes on braking). Preconditions: distance > 0, cruise > 0, rates > 0,
    /// 0 <= exitTarget <= cruise.
    public static func plan(
        entry: Double, cruise: Double, exitTarget: Double, distance: Double, acceleration a: Double, deceleration b: Double
    ) -> SpeedProfile {
        let v0 = max(0, entry)
        let slowestExit = max(0, v0 * v0 - 2 * b * distance).squareRoot()
        let fastestExit = (v0 * v0 + 2 * a * distance).squareRoot()
        let v1 = min(max(exitTarget, slowestExit), fastestExit)
        var peak: Double
        if v0 > cruise {
            peak = max(cruise, v1)
        } else {
            // Accelerate at a to the peak, brake at b to v1, covering exactly the distance:
            // (p² - v0²) / 2a + (p² - v1²) / 2b = distance.
            let triangle = ((2 * a * b * distance + b * v0 * v0 + a * v1 * v1) / (a + b)).squareRoot()
            peak = min(cruise, triangle)
        }
        peak = max(peak, v1)
        if v0 <= cruise { peak = max(peak, v0) }
        let ramp = peak >= v0 ? (peak - v0) / a : (v0 - peak) / b
        let final = (peak - v1) / b
        let rampDistance = 0.5 * (v0 + peak) * ramp
        let finalDistance = 0.5 * (peak + v1) * final
        let cruiseDistance = max(0, distance - rampDistance - finalDistance)
        let cruiseTime = peak > 0 ? cruiseDistance / peak : 0
        return SpeedProfile(
            entrySpeed: Float(v0), peakSpeed: Float(peak), exitSpeed: Float(v1),
            rampDuration: Float(ramp), cruiseDuration: Float(cruiseTime), finalDuration: Float(final))
    }

    /// Seconds from start to end.
    @inline(__always)
    public var duration: Double { Double(rampDuration) + Double(cruiseDuration) + Double(finalDuration) }

    /// Metres covered by the whole leg.
    @inline(__always)
    public var length: Double { boundaries.end }

    /// Distance at the end of each phase, computed once here so every caller rounds the same way.
    @inline(__always)
    var boundaries: (ramp: Double, cruise: Double, end: Double) {
        let v0 = Double(entrySpeed)
        let peak = Double(peakSpeed)
        let ramp = 0.5 * (v0 + peak) * Double(rampDuration)
        let cruise = ramp + peak * Double(cruiseDuration)
        let end = cruise + 0.5 * (peak + Double(exitSpeed)) * Double(finalDuration)
        return (ramp, cruise, end)
    }

    /// Metres covered `elapsed` seconds after the start (0 before it, `length` after the end). Never decreases
    /// as `elapsed` grows: each phase uses a form whose terms all grow with time, and is clamped to its range.
    @inline(__always)
    public func distance(at elapsed: Double) -> Double {
        guard elapsed > 0 else { return 0 }
        let limits = boundaries
        guard elapsed < duration else { return limits.end }
        let v0 = Double(entrySpeed)
        let peak = Double(peakSpeed)
        let t1 = Double(rampDuration)
        if elapsed < t1 {
            let covered: Double
            if peak >= v0 {
                let rate = (peak - v0) / t1
                covered = elapsed * (v0 + 0.5 * rate * elapsed)
            } else {
                // Braking: measure back from the end of the phase so every term grows with time.
                let rate = (v0 - peak) / t1
                let before = t1 - elapsed
                covered = limits.ramp - before * (peak + 0.5 * rate * before)
            }
            return min(max(covered, 0), limits.ramp)
        }
        // Each phase's time is measured from the end of the one before, so a phase of zero length is never entered
        // (rounding cannot put a time "before" a phase it has already passed).
        let intoCruise = elapsed - t1
        let t2 = Double(cruiseDuration)
        if intoCruise < t2 {
            return min(max(limits.ramp + peak * intoCruise, limits.ramp), limits.cruise)
        }
        let t3 = Double(finalDuration)
        let intoFinal = intoCruise - t2
        guard intoFinal < t3, t3 > 0 else { return limits.end }
        let v1 = Double(exitSpeed)
        let rate = (peak - v1) / t3
        let before = t3 - max(0, intoFinal)
        return min(max(limits.end - before * (v1 + 0.5 * rate * before), limits.cruise), limits.end)
    }

    /// Metres per second `elapsed` seconds after the start.
    @inline(__always)
    public func speed(at elapsed: Double) -> Double {
        let v0 = Double(entrySpeed)
        let peak = Double(peakSpeed)
        let t1 = Double(rampDuration)
        guard elapsed > 0 else { return v0 }
        guard elapsed < duration else { return Double(exitSpeed) }
        if elapsed < t1 { return v0 + (peak - v0) * (elapsed / t1) }
        let intoCruise = elapsed - t1
        if intoCruise < Double(cruiseDuration) { return peak }
        let t3 = Double(finalDuration)
        let intoFinal = intoCruise - Double(cruiseDuration)
        guard intoFinal < t3, t3 > 0 else { return Double(exitSpeed) }
        return peak + (Double(exitSpeed) - peak) * (max(0, intoFinal) / t3)
    }
}
