/// A high dynamic range histogram of integer values (fleetbench records microseconds), laid out exactly like the
/// reference HdrHistogram (Gil Tene's Java implementation and its C/Python ports): the same sub-bucket count, unit
/// magnitude and counts-array index math, so that `count(atIndex:)` maps one to one onto the counts of the
/// HdrHistogram V2 encoding and histograms made by other processes or tools merge exactly.
///
/// Value semantics with copy-on-write storage: a copy handed to another queue is an immutable snapshot. The counts
/// array is allocated lazily on the first record (kinds that never see a sample cost no memory), after which
/// `record` neither allocates nor locks.
public struct HDRHistogram: Sendable {
    /// The configuration fleetbench uses for latencies: 1 µs to 1 hour at 3 significant digits.
    public static let microsecondsLowest: UInt64 = 1
    public static let microsecondsHighest: UInt64 = 3_600_000_000
    public static let microsecondsSignificantDigits = 3

    /// Counts arrays longer than this are refused (a decoded header could otherwise ask for gigabytes).
    public static let maximumCountsLength = 1 << 22

    public let lowestDiscernibleValue: UInt64
    public let highestTrackableValue: UInt64
    public let significantDigits: Int
    /// log2 of the lowest discernible value, rounded down: values below `1 << unitMagnitude` share index 0.
    public let unitMagnitude: Int
    public let subBucketCount: Int
    public let subBucketHalfCountMagnitude: Int
    public let bucketCount: Int
    /// Length of the counts array: `(bucketCount + 1) * subBucketCount / 2`, as in the reference.
    public let countsLength: Int

    private let subBucketHalfCount: Int
    let subBucketMask: UInt64
    let leadingZeroCountBase: Int

    private var storage: CountsStorage
    public private(set) var totalCount: UInt64 = 0
    /// Values above `highestTrackableValue` that were recorded as `highestTrackableValue`.
    public private(set) var clampedHighCount: UInt64 = 0
    /// Negative values (from `record(_: Int64)`) that were recorded as 0.
    public private(set) var clampedLowCount: UInt64 = 0
    /// Smallest and largest value recorded (after clamping); `UInt64.max` / 0 when empty.
    private(set) var minRecordedValue: UInt64 = .max
    private(set) var maxRecordedValue: UInt64 = 0

    /// The fleetbench latency histogram: microseconds from 1 to 3,600,000,000 at 3 significant digits.
    public init() {
        // The constants are valid, so this cannot fail.
        self = try! HDRHistogram(
            lowestDiscernibleValue: Self.microsecondsLowest, highestTrackableValue: Self.microsecondsHighest,
            significantDigits: Self.microsecondsSignificantDigits)
    }

    /// A histogram with the reference's parameters. Throws for the combinations the reference refuses.
    public init(lowestDiscernibleValue: UInt64, highestTrackableValue: UInt64, significantDigits: Int)
        throws(HDRHistogramError)
    {
        guard lowestDiscernibleValue >= 1 else {
            throw .invalidParameters("lowest discernible value must be at least 1, got \(lowestDiscernibleValue)")
        }
        guard lowestDiscernibleValue <= UInt64(Int64.max) / 2,
            highestTrackableValue >= 2 * lowestDiscernibleValue, highestTrackableValue <= UInt64(Int64.max)
        else {
            throw .invalidParameters(
                "highest trackable value \(highestTrackableValue) must be at least twice the lowest"
                    + " (\(lowestDiscernibleValue)) and at most Int64.max")
        }
        guard (0...5).contains(significantDigits) else {
            throw .invalidParameters("significant digits must be 0...5, got \(significantDigits)")
        }
        self.lowestDiscernibleValue = lowestDiscernibleValue
        self.highestTrackableValue = highestTrackableValue
        self.significantDigits = significantDigits

        // Sub-buckets are sized so values up to 2 * 10^digits are tracked at unit resolution.
        var largestSingleUnitValue: UInt64 = 2
        for _ in 0..<significantDigits { largestSingleUnitValue *= 10 }
        var subBucketCountMagnitude = 0  // ceil(log2(largestSingleUnitValue))
        while (UInt64(1) << subBucketCountMagnitude) < largestSingleUnitValue { subBucketCountMagnitude += 1 }
        subBucketHalfCountMagnitude = Swift.max(subBucketCountMagnitude, 1) - 1
        unitMagnitude = 63 - lowestDiscernibleValue.leadingZeroBitCount
        guard unitMagnitude + subBucketHalfCountMagnitude + 1 <= 62 else {
            throw .invalidParameters("lowest discernible value \(lowestDiscernibleValue) is too large for \(significantDigits) digits")
        }
        subBucketCount = 1 << (subBucketHalfCountMagnitude + 1)
        subBucketHalfCount = subBucketCount / 2
        subBucketMask = UInt64(subBucketCount - 1) << UInt64(unitMagnitude)
        leadingZeroCountBase = 64 - unitMagnitude - subBucketHalfCountMagnitude - 1

        // Buckets double in range until the highest trackable value is covered.
        var smallestUntrackable = UInt64(subBucketCount) << UInt64(unitMagnitude)
        var buckets = 1
        while smallestUntrackable <= highestTrackableValue {
            if smallestUntrackable > UInt64(Int64.max) / 2 {
                buckets += 1
                break
            }
            smallestUntrackable <<= 1
            buckets += 1
        }
        bucketCount = buckets
        countsLength = (buckets + 1) * subBucketHalfCount
        guard countsLength <= Self.maximumCountsLength else {
            throw .invalidParameters("counts array of \(countsLength) entries exceeds \(Self.maximumCountsLength)")
        }
        storage = CountsStorage.unallocated
    }

    // MARK: Recording (the hot path)

    /// Records `value` `count` times. Values above the highest trackable value are recorded as it and counted in
    /// `clampedHighCount`. No allocation after the first record, no locks.
    public mutating func record(_ value: UInt64, count: UInt64 = 1) {
        recordClamped(value, count: count)
    }

    /// Records a signed value; negative values (a clock anomaly) are recorded as 0 and counted in `clampedLowCount`.
    public mutating func record(signed value: Int64, count: UInt64 = 1) {
        if value < 0 {
            clampedLowCount &+= count
            recordClamped(0, count: count)
        } else {
            recordClamped(UInt64(value), count: count)
        }
    }

    @inline(__always)
    private mutating func recordClamped(_ value: UInt64, count: UInt64) {
        var value = value
        if value > highestTrackableValue {
            value = highestTrackableValue
            clampedHighCount &+= count
        }
        let index = countsIndex(for: value)
        makeStorageWritable()
        storage.counts[index] &+= count
        totalCount &+= count
        if value < minRecordedValue { minRecordedValue = value }
        if value > maxRecordedValue { maxRecordedValue = value }
    }

    @inline(__always)
    private mutating func makeStorageWritable() {
        // A compacted copy's array ends at its highest recorded index: writing grows it to full length first.
        if storage.length < countsLength || !isKnownUniquelyReferenced(&storage) {
            storage = storage.copy(length: countsLength)
        }
    }

    /// Adds `count` at a counts-array index, as a decoder does. Returns false (and adds nothing) for an index
    /// outside the counts array.
    @discardableResult
    public mutating func addCount(_ count: UInt64, atIndex index: Int) -> Bool {
        guard index >= 0, index < countsLength else { return false }
        guard count > 0 else { return true }
        makeStorageWritable()
        storage.counts[index] &+= count
        totalCount &+= count
        let value = valueFromIndex(index)
        if value < minRecordedValue { minRecordedValue = value }
        if value > maxRecordedValue { maxRecordedValue = value }
        return true
    }

    /// Sets the clamped counts of a histogram read back from a report (its encoding holds the buckets only).
    public mutating func restoreClampedCounts(low: UInt64, high: UInt64) {
        clampedLowCount = low
        clampedHighCount = high
    }

    // MARK: Merge and reset

    /// Adds every count of `other`. With the same layout (the usual case) this is an exact index-by-index sum;
    /// otherwise each of `other`'s buckets is re-recorded at its value (clamped to this histogram's range).
    public mutating func add(_ other: HDRHistogram) {
        clampedHighCount &+= other.clampedHighCount
        clampedLowCount &+= other.clampedLowCount
        guard other.totalCount > 0 else { return }
        if hasSameLayout(as: other) {
            let lowest = other.countsIndex(for: other.minRecordedValue)
            let highest = other.countsIndex(for: other.maxRecordedValue)
            makeStorageWritable()
            let destination = storage.counts
            let source = other.storage.counts
            for index in lowest...highest { destination[index] &+= source[index] }
            totalCount &+= other.totalCount
            minRecordedValue = Swift.min(minRecordedValue, other.minRecordedValue)
            maxRecordedValue = Swift.max(maxRecordedValue, other.maxRecordedValue)
        } else {
            // Values beyond this histogram's range clamp (and are counted) as any record would.
            for bucket in other.recordedValues() {
                recordClamped(bucket.lowestEquivalentValue, count: bucket.count)
            }
        }
    }

    /// Empties the histogram. When this copy is the only owner of its counts they are zeroed in place (only the
    /// touched range); when a snapshot still shares them, they are let go and a fresh array is made on the next
    /// record, so a reader on another queue never sees them change.
    public mutating func reset() {
        if storage.length > 0 {
            if isKnownUniquelyReferenced(&storage) {
                if totalCount > 0 {
                    let lowest = countsIndex(for: minRecordedValue)
                    let highest = countsIndex(for: maxRecordedValue)
                    (storage.counts + lowest).update(repeating: 0, count: highest - lowest + 1)
                }
            } else {
                storage = CountsStorage.unallocated
            }
        }
        totalCount = 0
        clampedHighCount = 0
        clampedLowCount = 0
        minRecordedValue = .max
        maxRecordedValue = 0
    }

    public func hasSameLayout(as other: HDRHistogram) -> Bool {
        unitMagnitude == other.unitMagnitude && subBucketCount == other.subBucketCount
            && countsLength == other.countsLength
    }

    // MARK: Counts access (for encoders)

    /// The count at a counts-array index (0 outside the array).
    public func count(atIndex index: Int) -> UInt64 {
        guard index >= 0, index < countsLength, index < storage.length else { return 0 }
        return storage.counts[index]
    }

    /// The same histogram with its counts array cut after the highest recorded index, for values kept long
    /// (a run's per-second intervals): a latency histogram's full array is about 188 KB, most of it zeros above
    /// the largest value. Reads are unchanged; the first write to the copy restores the full array.
    public func compacted() -> HDRHistogram {
        var copy = self
        if totalCount == 0 {
            copy.storage = CountsStorage.unallocated
        } else if storage.length > relevantCountsLength {
            copy.storage = storage.copy(length: relevantCountsLength)
        }
        return copy
    }

    /// Bytes held by the counts array (0 until the first record).
    public var countsStorageBytes: Int { storage.length * MemoryLayout<UInt64>.stride }

    /// The number of leading counts an encoder must write: up to and including the index of the maximum value
    /// (at least 1), as the reference's V2 encoder does.
    public var relevantCountsLength: Int { countsIndex(for: maxRecordedValue) + 1 }

    /// Calls `body` with each non-zero count between the lowest and highest recorded indices, lowest first.
    func forEachNonZeroCount(_ body: (Int, UInt64) -> Void) {
        forEachNonZeroCountWhile { index, count in
            body(index, count)
            return true
        }
    }

    /// As `forEachNonZeroCount`, stopping when `body` returns false.
    func forEachNonZeroCountWhile(_ body: (Int, UInt64) -> Bool) {
        guard totalCount > 0, storage.length > 0 else { return }
        let counts = storage.counts
        for index in countsIndex(for: minRecordedValue)...countsIndex(for: maxRecordedValue) {
            let count = counts[index]
            if count != 0, !body(index, count) { return }
        }
    }

    /// The count recorded in the bucket that holds `value`.
    public func count(atValue value: UInt64) -> UInt64 {
        count(atIndex: countsIndex(for: Swift.min(value, highestTrackableValue)))
    }
}

public enum HDRHistogramError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidParameters(String)

    public var description: String {
        switch self {
        case .invalidParameters(let message): return "invalid HDR histogram parameters: \(message)"
        }
    }
}

/// The counts array: a fixed-size zero-initialised buffer shared between copies until one of them writes.
final class CountsStorage: @unchecked Sendable {
    // Safety: a storage is written only by a histogram that holds the sole reference (checked with
    // isKnownUniquelyReferenced before every write); shared storages are read-only.
    static let unallocated = CountsStorage(length: 0)

    let length: Int
    let counts: UnsafeMutablePointer<UInt64>

    init(length: Int) {
        self.length = length
        counts = UnsafeMutablePointer<UInt64>.allocate(capacity: max(length, 1))
        counts.initialize(repeating: 0, count: max(length, 1))
    }

    func copy(length newLength: Int) -> CountsStorage {
        let fresh = CountsStorage(length: newLength)
        if length > 0 { fresh.counts.update(from: counts, count: min(length, newLength)) }
        return fresh
    }

    deinit { counts.deallocate() }
}
