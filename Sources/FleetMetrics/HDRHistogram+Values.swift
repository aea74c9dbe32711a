// Index and value arithmetic with the reference HdrHistogram's semantics, and the statistics derived from it.

extension HDRHistogram {
    // MARK: Bucket arithmetic

    /// The bucket whose range contains `value`: buckets double in width, each split into sub-buckets.
    @inline(__always)
    func bucketIndex(for value: UInt64) -> Int {
        leadingZeroCountBase - (value | subBucketMask).leadingZeroBitCount
    }

    @inline(__always)
    func subBucketIndex(for value: UInt64, bucketIndex: Int) -> Int {
        Int(truncatingIfNeeded: value >> UInt64(bucketIndex + unitMagnitude))
    }

    /// Index into the counts array: bucket 0 uses all its sub-buckets, later buckets only their upper half (the
    /// lower half would duplicate the previous bucket's range).
    @inline(__always)
    public func countsIndex(for value: UInt64) -> Int {
        let bucket = bucketIndex(for: value)
        let subBucket = subBucketIndex(for: value, bucketIndex: bucket)
        return ((bucket + 1) << subBucketHalfCountMagnitude) + (subBucket - subBucketCount / 2)
    }

    /// The lowest value that lands at a counts-array index.
    public func valueFromIndex(_ index: Int) -> UInt64 {
        var bucket = (index >> subBucketHalfCountMagnitude) - 1
        var subBucket = (index & (subBucketCount / 2 - 1)) + subBucketCount / 2
        if bucket < 0 {
            subBucket -= subBucketCount / 2
            bucket = 0
        }
        return UInt64(subBucket) << UInt64(bucket + unitMagnitude)
    }

    /// Width of the range of values that share `value`'s bucket.
    public func sizeOfEquivalentValueRange(_ value: UInt64) -> UInt64 {
        let bucket = bucketIndex(for: value)
        let subBucket = subBucketIndex(for: value, bucketIndex: bucket)
        let adjustedBucket = subBucket >= subBucketCount ? bucket + 1 : bucket
        return UInt64(1) << UInt64(unitMagnitude + adjustedBucket)
    }

    public func lowestEquivalentValue(_ value: UInt64) -> UInt64 {
        let bucket = bucketIndex(for: value)
        let subBucket = subBucketIndex(for: value, bucketIndex: bucket)
        return UInt64(subBucket) << UInt64(bucket + unitMagnitude)
    }

    public func highestEquivalentValue(_ value: UInt64) -> UInt64 {
        lowestEquivalentValue(value) &+ sizeOfEquivalentValueRange(value) &- 1
    }

    /// The middle of `value`'s bucket: what the reference uses for mean and standard deviation.
    public func medianEquivalentValue(_ value: UInt64) -> UInt64 {
        lowestEquivalentValue(value) &+ (sizeOfEquivalentValueRange(value) >> 1)
    }

    public func valuesAreEquivalent(_ first: UInt64, _ second: UInt64) -> Bool {
        lowestEquivalentValue(first) == lowestEquivalentValue(second)
    }

    // MARK: Statistics

    /// The lowest recorded value's bucket floor (0 when empty or when 0 was recorded), as the reference reports it.
    public var min: UInt64 {
        totalCount == 0 ? 0 : lowestEquivalentValue(minRecordedValue)
    }

    /// The highest recorded value's bucket ceiling (0 when empty), as the reference reports it.
    public var max: UInt64 {
        maxRecordedValue == 0 ? 0 : highestEquivalentValue(maxRecordedValue)
    }

    /// Mean of the bucket midpoints weighted by count, as the reference computes it.
    public var mean: Double {
        guard totalCount > 0 else { return 0 }
        var total = 0.0
        forEachNonZeroCount { index, count in
            total += Double(medianEquivalentValue(valueFromIndex(index))) * Double(count)
        }
        return total / Double(totalCount)
    }

    /// Population standard deviation of the bucket midpoints, as the reference computes it.
    public var standardDeviation: Double {
        guard totalCount > 0 else { return 0 }
        let mean = self.mean
        var total = 0.0
        forEachNonZeroCount { index, count in
            let deviation = Double(medianEquivalentValue(valueFromIndex(index))) - mean
            total += deviation * deviation * Double(count)
        }
        return PureMath.squareRoot(total / Double(totalCount))
    }

    /// The value at `percentile` (0...100): the highest equivalent value of the bucket where the cumulative count
    /// first reaches `ceil(percentile / 100 * totalCount)` (at least 1); for 0 the lowest equivalent value of the
    /// first recorded bucket. Same semantics as the reference Java `getValueAtPercentile`.
    public func valueAtPercentile(_ percentile: Double) -> UInt64 {
        guard totalCount > 0 else { return 0 }
        let target = countAtPercentile(percentile)
        var cumulative: UInt64 = 0
        var found: UInt64 = 0
        forEachNonZeroCountWhile { index, count in
            cumulative &+= count
            if cumulative >= target {
                let value = valueFromIndex(index)
                found = percentile == 0 ? lowestEquivalentValue(value) : highestEquivalentValue(value)
                return false
            }
            return true
        }
        return found
    }

    /// The rank a percentile asks for. One ulp is taken off first so that a percentile computed as an exact
    /// fraction does not round up into the next count (the reference does the same).
    public func countAtPercentile(_ percentile: Double) -> UInt64 {
        let clamped = Swift.min(Swift.max(percentile.nextDown, 0), 100)
        let fractional = (clamped / 100) * Double(totalCount)
        let rank = PureMath.ceilingToUInt64(fractional)
        return Swift.max(rank, 1)
    }

    // MARK: Iteration

    /// Each bucket with a non-zero count, lowest first.
    public func recordedValues() -> [RecordedValue] {
        var result: [RecordedValue] = []
        forEachNonZeroCount { index, count in
            let value = valueFromIndex(index)
            result.append(
                RecordedValue(
                    lowestEquivalentValue: lowestEquivalentValue(value),
                    highestEquivalentValue: highestEquivalentValue(value), count: count))
        }
        return result
    }

    /// The percentile distribution as HdrHistogram prints and plots it: reporting levels that halve the distance
    /// to 100 % every `ticksPerHalfDistance` steps, each reported at the first bucket whose cumulative share
    /// reaches it, and a last point at 100 %.
    public func percentileDistribution(ticksPerHalfDistance: Int = 5) -> [PercentilePoint] {
        guard totalCount > 0 else { return [] }
        let ticks = Double(Swift.max(ticksPerHalfDistance, 1))
        var points: [PercentilePoint] = []
        var level = 0.0
        var cumulative: UInt64 = 0
        let total = Double(totalCount)
        var lastIndex = 0
        forEachNonZeroCount { index, count in
            cumulative &+= count
            lastIndex = index
            let reached = 100 * Double(cumulative) / total
            while reached >= level {
                points.append(
                    PercentilePoint(
                        percentile: level, value: highestEquivalentValue(valueFromIndex(index)),
                        cumulativeCount: cumulative))
                // Halvings of the distance to 100 % so far, plus one, set how fine the next step is.
                let halvings = (100 / (100 - level)).log2Floor
                let next = level + 100 / (ticks * Double(UInt64(1) << UInt64(Swift.min(halvings + 1, 62))))
                // Near 100 % the step can fall below a Double's resolution (totals beyond 2^53): stop there
                // rather than loop on a level that no longer moves.
                if cumulative == totalCount || next <= level || next >= 100 {
                    level = Swift.max(next, level)
                    break
                }
                level = next
            }
        }
        points.append(
            PercentilePoint(
                percentile: 100, value: highestEquivalentValue(valueFromIndex(lastIndex)), cumulativeCount: totalCount))
        return points
    }
}

/// One bucket of recorded values.
public struct RecordedValue: Equatable, Sendable {
    public let lowestEquivalentValue: UInt64
    public let highestEquivalentValue: UInt64
    public let count: UInt64
}

/// One point of a percentile distribution curve: at `percentile`, values up to `value`; `cumulativeCount` samples
/// are at or below it.
public struct PercentilePoint: Equatable, Sendable {
    public let percentile: Double
    public let value: UInt64
    public let cumulativeCount: UInt64
}

extension Double {
    /// floor(log2(self)) for self >= 1, 0 below, capped for infinity.
    fileprivate var log2Floor: Int {
        guard self.isFinite else { return 62 }
        guard self >= 1 else { return 0 }
        return Int(self.exponent)
    }
}

/// The two floating-point functions the statistics need, without libm: FleetMetrics imports nothing and links
/// nothing, and in debug builds the standard library lowers `rounded(.up)` and `squareRoot()` to libm calls.
enum PureMath {
    /// ceil(x) for x >= 0 (0 below), saturating at UInt64.max.
    static func ceilingToUInt64(_ x: Double) -> UInt64 {
        guard x > 0 else { return 0 }
        guard x < 18_446_744_073_709_549_568 else { return .max }
        let truncated = UInt64(x)
        return Double(truncated) < x ? truncated + 1 : truncated
    }

    /// Square root by Newton's method from a power-of-two first guess; correct to the last bit or one ulp.
    static func squareRoot(_ x: Double) -> Double {
        guard x > 0, x.isFinite else { return x == 0 || x.isInfinite ? x : .nan }
        var root = Double(sign: .plus, exponent: x.exponent / 2, significand: 1)
        for _ in 0..<64 {
            let next = 0.5 * (root + x / root)
            if next == root { break }
            root = next
        }
        // Newton can settle one ulp off or alternate between neighbours: keep the closest square.
        var best = root
        var bestError = abs(root * root - x)
        for candidate in [root.nextDown, root.nextUp] where abs(candidate * candidate - x) < bestError {
            best = candidate
            bestError = abs(candidate * candidate - x)
        }
        return best
    }
}
