import Dispatch
import Testing
@testable import FleetEngine

@Suite("ConnectedGauge: clients connected at once across lanes")
struct ConnectedGaugeTests {
    @Test("the peak is the highest count reached, not a sum of peaks reached at different times")
    func sequence() {
        let gauge = ConnectedGauge()
        // Lane A connects 3 and loses them; then lane B connects 2: lanes' peaks 3 and 2 sum to 5, the run's is 3.
        for _ in 0..<3 { gauge.increment() }
        for _ in 0..<3 { gauge.decrement() }
        for _ in 0..<2 { gauge.increment() }
        #expect(gauge.peak == 3)
        #expect(gauge.count == 2)
    }

    @Test("two threads connecting and disconnecting at once leave an exact count and an exact peak")
    func concurrent() {
        let gauge = ConnectedGauge()
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<10_000 {
                gauge.increment()
                gauge.decrement()
            }
            for _ in 0..<500 { gauge.increment() }
        }
        #expect(gauge.count == 1_000)
        // A thread holds at most 1 while cycling and 500 at the end: the most held at once is 500 + 500.
        #expect(gauge.peak == 1_000)
    }
}
