import Synchronization

/// Clients connected at once across every lane, and the highest that count reached.
///
/// The lanes' own peaks cannot be added up: lanes need not peak at the same moment, so their sum is only an
/// upper bound. This gauge is updated on connect and disconnect (never per message), where an atomic add is
/// cheap. Each increment sees the true count at its place in the single modification order of `current`, so
/// the peak is exact.
final class ConnectedGauge: Sendable {
    private let current = Atomic<Int>(0)
    private let highest = Atomic<Int>(0)

    func increment() {
        let now = current.add(1, ordering: .relaxed).newValue
        var peak = highest.load(ordering: .relaxed)
        while now > peak {
            let (exchanged, original) = highest.compareExchange(expected: peak, desired: now, ordering: .relaxed)
            if exchanged { return }
            peak = original
        }
    }

    func decrement() {
        current.subtract(1, ordering: .relaxed)
    }

    var count: Int { current.load(ordering: .relaxed) }
    var peak: Int { highest.load(ordering: .relaxed) }
}

/// The run's gauges: every client, and each fleet's (by fleet index).
final class ConnectedGauges: Sendable {
    let total = ConnectedGauge()
    let fleets: [ConnectedGauge]

    init(fleetCount: Int) {
        fleets = (0..<max(fleetCount, 1)).map { _ in ConnectedGauge() }
    }
}
