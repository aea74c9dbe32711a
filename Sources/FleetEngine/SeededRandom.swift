#if canImport(Glibc)
import Glibc  // log() for exponential variates; nothing else.
#elseif canImport(Darwin)
import Darwin
#endif

/// A small, fast, reproducible pseudo-random generator (xoshiro256**), one per client or lane.
///
/// Each instance is seeded from the run seed and a stream index (for example the client index), so a run
/// with the same seed draws the same numbers on every lane without any shared state. The 256-bit state is
/// filled by SplitMix64, which the xoshiro authors recommend because it never yields the all-zero state.
public struct SeededRandom: RandomNumberGenerator, Sendable, Equatable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    /// - Parameters:
    ///   - seed: the run seed.
    ///   - stream: distinguishes generators of one run (client index, lane index...); different streams
    ///     of the same seed give unrelated sequences.
    public init(seed: UInt64, stream: UInt64 = 0) {
        // Mixing the seed first keeps (seed, stream) and (seed + 1, stream - golden) from colliding.
        var mixer = SplitMix64(state: SplitMix64.mix(seed) &+ stream &* SplitMix64.golden)
        s0 = mixer.next()
        s1 = mixer.next()
        s2 = mixer.next()
        s3 = mixer.next()
    }

    /// Starts from an explicit state (reference vectors); an all-zero state is replaced by a fixed one.
    public init(state: (UInt64, UInt64, UInt64, UInt64)) {
        (s0, s1, s2, s3) = state
        if s0 | s1 | s2 | s3 == 0 { self = SeededRandom(seed: 0) }
    }

    /// The next 64 random bits.
    @inline(__always)
    public mutating func next() -> UInt64 {
        let result = (s1 &* 5).rotatedLeft(by: 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3.rotatedLeft(by: 45)
        return result
    }

    /// A uniform integer in `0..<bound` without modulo bias (Lemire's multiply-and-reject); 0 when bound is 0.
    @inline(__always)
    public mutating func next(below bound: UInt64) -> UInt64 {
        guard bound > 0 else { return 0 }
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold {
                product = next().multipliedFullWidth(by: bound)
            }
        }
        return product.high
    }

    /// A uniform integer in the closed range (both ends included).
    @inline(__always)
    public mutating func nextInt(in range: ClosedRange<Int64>) -> Int64 {
        let width = UInt64(bitPattern: range.upperBound &- range.lowerBound)
        if width == UInt64.max { return Int64(bitPattern: next()) }
        return range.lowerBound &+ Int64(bitPattern: next(below: width &+ 1))
    }

    /// A uniform integer in the closed range (both ends included).
    @inline(__always)
    public mutating func nextUInt64(in range: ClosedRange<UInt64>) -> UInt64 {
        let width = range.upperBound &- range.lowerBound
        if width == UInt64.max { return next() }
        return range.lowerBound &+ next(below: width &+ 1)
    }

    /// A uniform Double in [0, 1) with 53 random bits.
    @inline(__always)
    public mutating func nextDouble() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// A uniform Double in the half-open range.
    @inline(__always)
    public mutating func nextDouble(in range: Range<Double>) -> Double {
        range.lowerBound + nextDouble() * (range.upperBound - range.lowerBound)
    }

    /// An exponential variate with the given mean: the gap between arrivals of a Poisson process.
    @inline(__always)
    public mutating func nextExponential(mean: Double) -> Double {
        // 1 - u lies in (0, 1], so the logarithm is finite.
        -mean * log(1.0 - nextDouble())
    }

    /// An exponential gap in whole nanoseconds (rounded to nearest, saturating) for a mean in nanoseconds.
    @inline(__always)
    public mutating func nextExponentialNanoseconds(mean: Double) -> UInt64 {
        let value = nextExponential(mean: mean).rounded()
        guard value > 0 else { return 0 }  // also a negative or NaN mean: never trap on a bad parameter
        return value >= 0x1p64 ? UInt64.max : UInt64(value)
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): seeds xoshiro and derives per-stream states.
public struct SplitMix64: Sendable, Equatable {
    static let golden: UInt64 = 0x9E37_79B9_7F4A_7C15
    public private(set) var state: UInt64

    public init(state: UInt64) { self.state = state }

    @inline(__always)
    public mutating func next() -> UInt64 {
        state &+= SplitMix64.golden
        return SplitMix64.mix(state)
    }

    @inline(__always)
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(by amount: UInt64) -> UInt64 {
        (self << amount) | (self >> (64 &- amount))
    }
}
