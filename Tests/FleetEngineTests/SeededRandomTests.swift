import Testing
@testable import FleetEngine

@Suite("SeededRandom")
struct SeededRandomTests {
    // Reference values from a separate C implementation of the published algorithms.
    @Test("SplitMix64 from state 0 gives the published sequence")
    func splitMixReference() {
        var mixer = SplitMix64(state: 0)
        #expect([mixer.next(), mixer.next(), mixer.next()]
            == [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F])
    }

    @Test("xoshiro256** from state (1, 2, 3, 4) gives the published sequence")
    func xoshiroReference() {
        var random = SeededRandom(state: (1, 2, 3, 4))
        #expect([random.next(), random.next(), random.next(), random.next()]
            == [11520, 0, 1_509_978_240, 1_215_971_899_390_074_240])
    }

    @Test("seed and stream select a fixed, distinct sequence")
    func seedAndStream() {
        var a = SeededRandom(seed: 42, stream: 7)
        #expect([a.next(), a.next(), a.next()] == [0x8937_E68E_6020_0816, 0xC26D_7D28_CD09_654D, 0x84CD_D667_FE24_28C2])
        var b = SeededRandom(seed: 42, stream: 8)
        #expect(b.next() == 0x4B98_B1F4_74F9_F67C)
        var c = SeededRandom(seed: 42, stream: 7)
        #expect(c.next() == 0x8937_E68E_6020_0816)
    }

    @Test("bounded integers stay inside their range and cover it", arguments: [1 as UInt64, 2, 3, 7, 1000])
    func bounded(bound: UInt64) {
        var random = SeededRandom(seed: 1)
        var seen = Set<UInt64>()
        for _ in 0..<30_000 {
            let value = random.next(below: bound)
            #expect(value < bound)
            seen.insert(value)
        }
        #expect(seen.count == Int(bound))
    }

    @Test("closed ranges include both ends, negative ones too")
    func closedRanges() {
        var random = SeededRandom(seed: 9)
        var seen = Set<Int64>()
        for _ in 0..<2_000 { seen.insert(random.nextInt(in: -2...2)) }
        #expect(seen == [-2, -1, 0, 1, 2])
        #expect(random.nextInt(in: 5...5) == 5)
        _ = random.nextInt(in: Int64.min...Int64.max)  // full width must not trap
        #expect(random.nextUInt64(in: 10...10) == 10)
    }

    @Test("doubles lie in [0, 1) and their mean is near one half")
    func doubles() {
        var random = SeededRandom(seed: 5)
        var sum = 0.0
        for _ in 0..<100_000 {
            let value = random.nextDouble()
            #expect(value >= 0 && value < 1)
            sum += value
        }
        #expect(abs(sum / 100_000 - 0.5) < 0.01)
        let scaled = random.nextDouble(in: 10.0..<20.0)
        #expect(scaled >= 10 && scaled < 20)
    }

    @Test("exponential variates have the requested mean and are never negative")
    func exponential() {
        var random = SeededRandom(seed: 11)
        var sum: UInt64 = 0
        for _ in 0..<100_000 { sum += random.nextExponentialNanoseconds(mean: 1_000_000) }
        let mean = Double(sum) / 100_000
        #expect(abs(mean - 1_000_000) < 20_000)  // standard error of the mean is about 3,200 ns
        var same = SeededRandom(seed: 11)
        var again = SeededRandom(seed: 11)
        #expect(same.nextExponential(mean: 2) == again.nextExponential(mean: 2))
    }
}
