import FleetMetrics
import Synchronization

/// Why a fault call was refused.
public struct EngineFaultError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Numbers the fault calls of a run, so each draws its own seeded random choices.
final class FaultSequence: Sendable {
    private let counter = Mutex<UInt64>(0)
    func next() -> UInt64 { counter.withLock { $0 += 1; return $0 } }
}

/// Faults on running clients, for a scenario's stage runner. Call them from any thread except a lane's while
/// `run` is running; they act on the lanes through their queues.
extension Engine {
    func fleetIndex(named name: String) throws(EngineFaultError) -> Int {
        guard let fleet = fleets.first(where: { $0.configuration.name == name }) else {
            let known = fleets.map { "'\($0.configuration.name)'" }.joined(separator: ", ")
            throw EngineFaultError(message: "no fleet named '\(name)' (fleets: \(known))")
        }
        return fleet.index
    }

    /// Cuts a seeded random `fraction` (0...1, rounded to whole clients) of the fleet's connected clients at
    /// once: RST without DISCONNECT, so the broker publishes their wills. Each stays down for a uniform random
    /// outage in `outage` (ns), then reconnects by its fleet's policy (the outage replaces the policy's first
    /// delay; a policy of `.none` leaves it down). Counted as disconnects of reason `.tunnel`. Returns how many
    /// were cut. Blocks until every lane did its part.
    @discardableResult
    public func tunnel(fleet name: String, fraction: Double, outage: ClosedRange<UInt64>) throws(EngineFaultError) -> Int {
        let fleet = try fleetIndex(named: name)
        guard fraction >= 0 && fraction <= 1 else {
            throw EngineFaultError(message: "tunnel fraction must be in 0...1, got \(fraction)")
        }
        var connected: [Int] = []
        for lane in lanes {
            let globals = lane.queue.sync {
                lane.fleetClients[fleet].filter { lane.clients[$0].phase == .connected }.map { lane.clients[$0].globalIndex }
            }
            connected.append(contentsOf: globals)
        }
        connected.sort()
        let victims = Int((fraction * Double(connected.count)).rounded())
        var random = SeededRandom(seed: configuration.seed ^ 0x7475_6E6E_656C, stream: faultSequence.next())
        // Partial Fisher-Yates: the first `victims` entries become a uniform random choice.
        for position in 0..<victims {
            let other = position + Int(random.next(below: UInt64(connected.count - position)))
            connected.swapAt(position, other)
        }
        var perLane: [[(client: Int, outage: UInt64)]] = Array(repeating: [], count: lanes.count)
        for global in connected.prefix(victims) {
            let (lane, position) = Self.location(global, segments: configuration.segmentCount, lanes: lanes.count)
            perLane[lane].append((position, random.nextUInt64(in: outage)))
        }
        var cut = 0
        for (index, list) in perLane.enumerated() where !list.isEmpty {
            let lane = lanes[index]
            cut += lane.queue.sync {
                lane.now = MonotonicClock.now()
                var count = 0
                for victim in list where lane.cutForTunnel(victim.client, outage: victim.outage) { count += 1 }
                lane.turn()
                return count
            }
        }
        return cut
    }

    /// Starts churn on a fleet: `ratePerSecond` clean disconnects (DISCONNECT, no will) a second for `duration`
    /// ns, each of a randomly chosen connected client, which reconnects at once (paced by its fleet). The
    /// round(rate x duration) disconnects are spread evenly over the lanes holding the fleet's clients; counted as
    /// disconnects of reason `.churn` (and `churnSkipped` when no client of the fleet was connected on the lane).
    /// Returns the number of disconnects planned; does not wait for them.
    @discardableResult
    public func churn(fleet name: String, ratePerSecond: Double, duration: UInt64) throws(EngineFaultError) -> Int {
        let fleet = try fleetIndex(named: name)
        guard ratePerSecond > 0 && ratePerSecond.isFinite else {
            throw EngineFaultError(message: "churn rate must be greater than 0, got \(ratePerSecond)")
        }
        let total = Int((ratePerSecond * Double(duration) / 1e9).rounded())
        let holders = lanes.filter { !$0.fleetClients[fleet].isEmpty }
        guard total > 0, !holders.isEmpty else { return 0 }
        let spacing = UInt64(1e9 / ratePerSecond)
        let sequence = faultSequence.next()
        let start = MonotonicClock.now()
        // Disconnect k (0-based) is due at start + k * spacing on holder k mod holders.
        for (position, lane) in holders.enumerated() {
            let share = total / holders.count + (position < total % holders.count ? 1 : 0)
            let plan = ChurnPlan(
                fleet: fleet, remaining: share, spacing: spacing &* UInt64(holders.count),
                next: start &+ UInt64(position) &* spacing,
                random: SeededRandom(seed: configuration.seed ^ 0x6368_7572_6E, stream: sequence << 16 | UInt64(lane.index)))
            lane.queue.async {
                lane.addChurn(plan)
                lane.turn()
            }
        }
        return total
    }
}
