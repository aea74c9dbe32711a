/// The randomness of the vehicle model: SplitMix64 (Steele, Lea, Flood 2014) as a sequential generator for the
/// decisions a vehicle takes one after another (next road, trip length, stops), and its mixing function as a
/// stateless hash for values that must be the same whenever they are asked for (GNSS noise at a given second,
/// a vehicle's driving style).
///
/// 8 bytes of state per vehicle; a vehicle draws only while it plans its next leg, never while it is sampled, so
/// its trajectory does not depend on how often or when it is sampled.
struct VehicleRandom: Sendable, Equatable {
    static let golden: UInt64 = 0x9E37_79B9_7F4A_7C15
    var state: UInt64

    init(state: UInt64) { self.state = state }

    /// A generator for one vehicle of a run: unrelated sequences for different seeds or indices.
    init(seed: UInt64, index: UInt64, purpose: UInt64) {
        state = Self.hash(seed, index, purpose)
    }

    @inline(__always)
    mutating func next() -> UInt64 {
        state &+= Self.golden
        return Self.mix(state)
    }

    /// A uniform Double in [0, 1) with 53 random bits.
    @inline(__always)
    mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// A uniform Double in the closed range (a degenerate range returns its bound without drawing twice).
    @inline(__always)
    mutating func next(in range: ClosedRange<Double>) -> Double {
        range.lowerBound + nextUnit() * (range.upperBound - range.lowerBound)
    }

    /// A uniform integer in `0..<bound` (Lemire's multiply-shift; the bias for the small bounds used here, at
    /// most a few dozen roads at a junction, is below 2^-58).
    @inline(__always)
    mutating func next(below bound: Int) -> Int {
        Int(truncatingIfNeeded: next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    /// SplitMix64's finaliser: a bijective mix of 64 bits.
    @inline(__always)
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A hash of three words; each step goes through the bijective mix, so (a, b, c) and (a', b', c') collide
    /// only by chance.
    @inline(__always)
    static func hash(_ a: UInt64, _ b: UInt64, _ c: UInt64) -> UInt64 {
        mix(mix(mix(a &+ golden) ^ b &+ golden) ^ c &+ golden)
    }
}
