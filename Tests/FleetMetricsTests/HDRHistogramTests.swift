import Testing
@testable import FleetMetrics
import FleetTestSupport

/// Nearest-rank percentile of sorted data: the smallest value with at least `perMillionth / 1e6` of the data at or
/// below it, computed in integers.
func exactPercentile(_ sorted: [UInt64], perMillion: UInt64) -> UInt64 {
    let n = UInt64(sorted.count)
    let rank = max((perMillion * n + 999_999) / 1_000_000, 1)
    return sorted[Int(rank - 1)]
}

@Suite("HDR histogram")
struct HDRHistogramTests {
    // Expected figures in these tests come from the reference (the `hdrhistogram` Python package, which follows the
    // Java implementation's layout), not from this implementation.
    @Test("the microsecond layout matches the reference: 2048 sub-buckets, 22 buckets, 23552 counts")
    func layout() {
        let histogram = HDRHistogram()
        #expect(histogram.unitMagnitude == 0)
        #expect(histogram.subBucketCount == 2048)
        #expect(histogram.subBucketHalfCountMagnitude == 10)
        #expect(histogram.bucketCount == 22)
        #expect(histogram.countsLength == 23552)
    }

    @Test(
        "counts index and equivalent ranges follow the reference's bucket math",
        arguments: [
            // value, counts index, lowest equivalent, highest equivalent
            (UInt64(0), 0, UInt64(0), UInt64(0)),
            (1, 1, 1, 1),
            (2047, 2047, 2047, 2047),
            (2048, 2048, 2048, 2049),
            (2049, 2048, 2048, 2049),
            (4095, 3071, 4094, 4095),
            (4096, 3072, 4096, 4099),
            (1_000_000, 11_169, 999_936, 1_000_447),
            (3_600_000_000, 23_220, 3_598_712_832, 3_600_809_983),
        ])
    func bucketMath(value: UInt64, index: Int, lowest: UInt64, highest: UInt64) {
        let histogram = HDRHistogram()
        #expect(histogram.countsIndex(for: value) == index)
        #expect(histogram.lowestEquivalentValue(value) == lowest)
        #expect(histogram.highestEquivalentValue(value) == highest)
        #expect(histogram.valueFromIndex(index) == lowest)
    }

    @Test("other parameters give the reference's layouts", arguments: [
        // lowest, highest, digits, subBucketCount, bucketCount, countsLength, unitMagnitude
        (UInt64(1), UInt64(3_600_000_000_000), 3, 2048, 32, 33_792, 0),
        (1000, 3_600_000_000_000, 2, 256, 26, 3456, 9),
        (1, 1_000_000, 5, 262_144, 3, 524_288, 0),
        (1, 2, 1, 32, 1, 32, 0),
    ])
    func otherLayouts(
        lowest: UInt64, highest: UInt64, digits: Int, subBuckets: Int, buckets: Int, counts: Int, unit: Int
    ) throws {
        let histogram = try HDRHistogram(
            lowestDiscernibleValue: lowest, highestTrackableValue: highest, significantDigits: digits)
        #expect(histogram.subBucketCount == subBuckets)
        #expect(histogram.bucketCount == buckets)
        #expect(histogram.countsLength == counts)
        #expect(histogram.unitMagnitude == unit)
    }

    @Test("invalid parameters are refused with a clear message")
    func invalidParameters() {
        #expect(throws: HDRHistogramError.invalidParameters("significant digits must be 0...5, got 6")) {
            try HDRHistogram(lowestDiscernibleValue: 1, highestTrackableValue: 1000, significantDigits: 6)
        }
        #expect(throws: HDRHistogramError.invalidParameters("lowest discernible value must be at least 1, got 0")) {
            try HDRHistogram(lowestDiscernibleValue: 0, highestTrackableValue: 1000, significantDigits: 3)
        }
        #expect(
            throws: HDRHistogramError.invalidParameters(
                "highest trackable value 10 must be at least twice the lowest (6) and at most Int64.max")
        ) {
            try HDRHistogram(lowestDiscernibleValue: 6, highestTrackableValue: 10, significantDigits: 3)
        }
    }

    @Test("values 1...10000: percentiles are the bucket ceilings of the exact nearest-rank values")
    func percentilesOfASequence() {
        var histogram = HDRHistogram()
        let values = (1...10_000).map { UInt64($0) }
        for value in values { histogram.record(value) }
        #expect(histogram.totalCount == 10_000)
        #expect(histogram.min == 1)
        #expect(histogram.max == 10_007)  // 10000 lies in the bucket 10000...10007
        // The reference's figures for this data.
        #expect(histogram.valueAtPercentile(50) == 5003)
        #expect(histogram.valueAtPercentile(90) == 9007)
        #expect(histogram.valueAtPercentile(99) == 9903)
        #expect(histogram.valueAtPercentile(99.9) == 9991)
        #expect(histogram.valueAtPercentile(100) == 10_007)
        #expect(histogram.valueAtPercentile(0) == 1)
        for perMillion: UInt64 in [1, 10_000, 250_000, 500_000, 750_000, 900_000, 990_000, 999_000, 999_900, 1_000_000] {
            let expected = histogram.highestEquivalentValue(exactPercentile(values, perMillion: perMillion))
            #expect(histogram.valueAtPercentile(Double(perMillion) / 10_000) == expected, "at \(perMillion) ppm")
        }
        #expect(histogram.mean == 5000.898)
        #expect(abs(histogram.standardDeviation - 2886.8926666566617) < 1e-9)
        #expect(histogram.mean == 5000.5 + meanBucketOffset(values, histogram))
    }

    /// The reference's mean uses bucket midpoints; the difference from the exact mean, computed independently.
    func meanBucketOffset(_ values: [UInt64], _ histogram: HDRHistogram) -> Double {
        var offset = 0.0
        for value in values {
            offset += Double(histogram.medianEquivalentValue(value)) - Double(value)
        }
        return offset / Double(values.count)
    }

    @Test("seeded random latencies: every percentile within the bucket of the exact value, error at most 0.1 %")
    func percentilesOfRandomData() {
        var generator = TestRandom(seed: 42)
        var values: [UInt64] = []
        var histogram = HDRHistogram()
        for _ in 0..<50_000 {
            // Log-uniform from 1 µs to about 10 s, as latencies spread.
            let exponent = Double.random(in: 0..<23.2, using: &generator)
            let value = UInt64((2.0 as Double).squareRoot() * 0 + pow2(exponent))
            values.append(value)
            histogram.record(value)
        }
        values.sort()
        for perMillion: UInt64 in [0, 1, 500_000, 900_000, 990_000, 999_000, 999_900, 999_990, 1_000_000] {
            let exact = exactPercentile(values, perMillion: perMillion)
            let reported = histogram.valueAtPercentile(Double(perMillion) / 10_000)
            if perMillion == 0 {
                #expect(reported == histogram.lowestEquivalentValue(exact))
            } else {
                #expect(reported == histogram.highestEquivalentValue(exact), "at \(perMillion) ppm")
                #expect(Double(reported - exact) <= Double(exact) / 1000 + 1, "error above 0.1 % at \(perMillion)")
            }
        }
        #expect(histogram.min == histogram.lowestEquivalentValue(values.first!))
        #expect(histogram.max == histogram.highestEquivalentValue(values.last!))
        var midpointSum = 0.0
        for value in values { midpointSum += Double(histogram.medianEquivalentValue(value)) }
        #expect(histogram.mean == midpointSum / Double(values.count))
    }

    func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        var remaining = exponent
        while remaining >= 1 {
            result *= 2
            remaining -= 1
        }
        // 2^remaining for remaining in [0, 1) by a short series: accuracy is irrelevant, determinism is not.
        let ln2 = 0.6931471805599453 * remaining
        return result * (1 + ln2 + ln2 * ln2 / 2 + ln2 * ln2 * ln2 / 6)
    }

    @Test("merging per-lane histograms equals recording everything in one, count by count")
    func mergeEqualsSingle() {
        var generator = TestRandom(seed: 7)
        var lanes = [HDRHistogram](repeating: HDRHistogram(), count: 4)
        var single = HDRHistogram()
        for step in 0..<40_000 {
            let value = generator.next() % 5_000_000
            lanes[step % 4].record(value)
            single.record(value)
        }
        var merged = HDRHistogram()
        for lane in lanes { merged.add(lane) }
        #expect(merged.totalCount == single.totalCount)
        for index in 0..<single.countsLength where merged.count(atIndex: index) != single.count(atIndex: index) {
            Issue.record("count at index \(index): merged \(merged.count(atIndex: index)), single \(single.count(atIndex: index))")
            break
        }
        #expect(merged.min == single.min)
        #expect(merged.max == single.max)
        #expect(merged.mean == single.mean)
        #expect(merged.standardDeviation == single.standardDeviation)
        #expect(merged.valueAtPercentile(99.9) == single.valueAtPercentile(99.9))
    }

    @Test("values above one hour clamp to the highest trackable value and are counted")
    func clampHigh() {
        var histogram = HDRHistogram()
        histogram.record(10)
        histogram.record(3_600_000_001)
        histogram.record(UInt64.max, count: 3)
        #expect(histogram.totalCount == 5)
        #expect(histogram.clampedHighCount == 4)
        #expect(histogram.count(atValue: 3_600_000_000) == 4)
        #expect(histogram.max == histogram.highestEquivalentValue(3_600_000_000))
        #expect(histogram.valueAtPercentile(100) == 3_600_809_983)
    }

    @Test("zero records as zero and negative values clamp to zero and are counted")
    func zeroAndNegative() {
        var histogram = HDRHistogram()
        histogram.record(UInt64(0))
        histogram.record(signed: -5, count: 2)
        histogram.record(signed: 7)
        #expect(histogram.count(atIndex: 0) == 3)
        #expect(histogram.clampedLowCount == 2)
        #expect(histogram.min == 0)
        #expect(histogram.max == 7)
        #expect(histogram.valueAtPercentile(50) == 0)
        #expect(histogram.valueAtPercentile(100) == 7)
    }

    @Test("record with a count equals recording the value that many times")
    func recordWithCount() {
        var once = HDRHistogram()
        once.record(12_345, count: 1000)
        var many = HDRHistogram()
        for _ in 0..<1000 { many.record(12_345) }
        #expect(once.totalCount == 1000)
        #expect(once.count(atValue: 12_345) == many.count(atValue: 12_345))
        #expect(once.recordedValues() == many.recordedValues())
    }

    @Test("mean and standard deviation use bucket midpoints like the reference")
    func meanAndDeviation() {
        var histogram = HDRHistogram()
        for value: UInt64 in [100, 200, 300, 400] { histogram.record(value) }
        #expect(histogram.mean == 250)
        #expect(abs(histogram.standardDeviation - (12_500 as Double).squareRoot()) < 1e-9)
        var wide = HDRHistogram()
        wide.record(1_000_000)  // bucket 999936...1000447, midpoint 1000192
        #expect(wide.mean == 1_000_192)
        #expect(wide.standardDeviation == 0)
    }

    @Test("reset empties the histogram, and a snapshot taken before keeps its counts")
    func resetKeepsSnapshots() {
        var histogram = HDRHistogram()
        histogram.record(5)
        histogram.record(50_000)
        let snapshot = histogram
        histogram.reset()
        #expect(histogram.totalCount == 0)
        #expect(histogram.count(atValue: 5) == 0)
        #expect(histogram.max == 0)
        #expect(histogram.valueAtPercentile(50) == 0)
        #expect(snapshot.totalCount == 2)
        #expect(snapshot.count(atValue: 50_000) == 1)
        histogram.record(9)
        #expect(histogram.recordedValues() == [RecordedValue(lowestEquivalentValue: 9, highestEquivalentValue: 9, count: 1)])
        #expect(snapshot.count(atValue: 9) == 0)
        // Reset in place (no snapshot alive) then record again.
        histogram.reset()
        histogram.record(3000)
        #expect(histogram.recordedValues() == [RecordedValue(lowestEquivalentValue: 3000, highestEquivalentValue: 3001, count: 1)])
    }

    @Test("recorded values list every non-empty bucket in order")
    func recordedValues() {
        var histogram = HDRHistogram()
        histogram.record(3, count: 2)
        histogram.record(2050)
        histogram.record(1_000_000, count: 5)
        #expect(
            histogram.recordedValues() == [
                RecordedValue(lowestEquivalentValue: 3, highestEquivalentValue: 3, count: 2),
                RecordedValue(lowestEquivalentValue: 2050, highestEquivalentValue: 2051, count: 1),
                RecordedValue(lowestEquivalentValue: 999_936, highestEquivalentValue: 1_000_447, count: 5),
            ])
    }

    @Test("the percentile distribution follows the reference's reporting levels and ends at 100 %")
    func percentileDistribution() {
        var histogram = HDRHistogram()
        for value in 1...10_000 { histogram.record(UInt64(value)) }
        let points = histogram.percentileDistribution(ticksPerHalfDistance: 5)
        // The first levels step by 10 % (5 ticks per half distance), then 5 %, 2.5 % ...
        let levels = points.prefix(8).map(\.percentile)
        #expect(levels == [0, 10, 20, 30, 40, 50, 55, 60])
        #expect(points[0].value == 1)
        #expect(points[5].value == 5003)
        #expect(points[5].cumulativeCount == 5003)
        #expect(points.last == PercentilePoint(percentile: 100, value: 10_007, cumulativeCount: 10_000))
        #expect(zip(points, points.dropFirst()).allSatisfy { $0.percentile <= $1.percentile && $0.value <= $1.value })
        #expect(HDRHistogram().percentileDistribution().isEmpty)
    }

    @Test("histograms of another layout merge by value")
    func mergeDifferentLayout() throws {
        var nanoseconds = try HDRHistogram(
            lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000, significantDigits: 3)
        nanoseconds.record(500)
        nanoseconds.record(5_000_000_000_000)  // clamps there
        var microseconds = HDRHistogram()
        microseconds.add(nanoseconds)
        #expect(microseconds.totalCount == 2)
        #expect(microseconds.count(atValue: 500) == 1)
        #expect(microseconds.count(atValue: 3_600_000_000) == 1)
        #expect(microseconds.clampedHighCount == 2)  // one clamped in the source, one while merging
    }
}
