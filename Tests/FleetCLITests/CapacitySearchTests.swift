import Testing
@testable import FleetCLI

@Suite("capacity: the search")
struct CapacitySearchTests {
    @Test("a doubling ramp from LOW, then bisection down to a gap of 1 (whole numbers)")
    func rampThenBisect() {
        // The broker holds up to 700.
        let result = CapacitySearch.levels(low: 100, high: 5000, wholeNumbers: true, precision: 0) { $0 <= 700 }
        #expect(result.levels == [100, 200, 400, 800, 600, 700, 750, 725, 712, 706, 703, 701])
        #expect(result.maxPassing == 700)
    }

    @Test("the default 5 % precision stops the bisection earlier")
    func precision() {
        let result = CapacitySearch.levels(low: 100, high: 5000, wholeNumbers: true) { $0 <= 700 }
        // 600 | 800 -> 700 passes; 700 | 800 -> 750 fails; 700 | 750: 50 > 35 -> 725 fails; 700 | 725: 25 <= 35.
        #expect(result.levels == [100, 200, 400, 800, 600, 700, 750, 725])
        #expect(result.maxPassing == 700)
    }

    @Test("HIGH is the last ramp step; passing there ends the search with HIGH")
    func highPasses() {
        let result = CapacitySearch.levels(low: 100, high: 1000, wholeNumbers: true) { _ in true }
        #expect(result.levels == [100, 200, 400, 800, 1000])
        #expect(result.maxPassing == 1000)
    }

    @Test("LOW failing ends the search at once with no passing level")
    func lowFails() {
        let result = CapacitySearch.levels(low: 100, high: 1000, wholeNumbers: true) { _ in false }
        #expect(result.levels == [100])
        #expect(result.maxPassing == nil)
    }

    @Test("LOW == HIGH tries that one level")
    func single() {
        #expect(CapacitySearch.levels(low: 7, high: 7, wholeNumbers: true) { _ in true }.levels == [7])
        #expect(CapacitySearch.levels(low: 7, high: 7, wholeNumbers: true) { _ in false }.maxPassing == nil)
    }

    @Test("failing at HIGH after the ramp reached it bisects below HIGH")
    func failsAtHigh() {
        let result = CapacitySearch.levels(low: 100, high: 1000, wholeNumbers: true, precision: 0.1) { $0 < 950 }
        // 800 | 1000 -> 900 passes; 900 | 1000: 100 > 90 -> 950 fails; 900 | 950: 50 <= 90.
        #expect(result.levels == [100, 200, 400, 800, 1000, 900, 950])
        #expect(result.maxPassing == 900)
    }

    @Test("decimal levels bisect in steps of 0.001")
    func decimals() {
        let result = CapacitySearch.levels(low: 0.5, high: 10, wholeNumbers: false, precision: 0.1) { $0 <= 3 }
        // 0.5 1 2 4(fail) -> 3 (pass) -> 3.5 (fail): 0.5 > 0.3 -> 3.25 (fail): 0.25 <= 0.3.
        #expect(result.levels == [0.5, 1, 2, 4, 3, 3.5, 3.25])
        #expect(result.maxPassing == 3)
    }

    @Test("a flaky oracle (pass above a failure) still ends, and max passing is the highest level that passed")
    func nonMonotonic() {
        let result = CapacitySearch.levels(low: 10, high: 100, wholeNumbers: true, precision: 0) { $0 != 40 }
        // 10 20 40(fail) -> 30 35 37 38 39 (all pass): gap 1.
        #expect(result.levels == [10, 20, 40, 30, 35, 37, 38, 39])
        #expect(result.maxPassing == 39)
    }

    @Test("the number of levels is bounded")
    func bounded() {
        let result = CapacitySearch.levels(low: 1, high: 1_000_000_000, wholeNumbers: true, precision: 0, maxLevels: 12) { _ in true }
        #expect(result.levels.count == 12)
        #expect(result.levels == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048])
        #expect(result.maxPassing == 2048)
    }
}
