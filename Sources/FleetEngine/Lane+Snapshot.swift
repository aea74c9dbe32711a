import FleetMetrics

/// What one lane hands the engine once a second: cumulative counters and the interval's latencies, per fleet.
struct LaneSnapshot: Sendable {
    let lane: Int
    /// 1-based interval number: interval k ends at origin + k seconds (the final one may end earlier).
    let index: Int
    let start: UInt64
    let end: UInt64
    let fleets: [FleetLaneSnapshot]
    let isFinal: Bool
}

struct FleetLaneSnapshot: Sendable {
    let counters: ClientCounters
    let connected: Int
    let interval: LatencyInterval
}

extension Lane {
    /// Hands over every snapshot whose second has ended. Called once per turn; normally a single comparison.
    @inline(__always)
    func emitDueSnapshots() {
        while now >= nextSnapshotAt {
            emitSnapshot(end: nextSnapshotAt, isFinal: false)
            nextSnapshotAt &+= snapshotInterval
        }
    }

    /// Takes the interval ending at `end` from every fleet's recorder (recording continues at once into the
    /// spare) and sends it, with copies of the counters, to the engine's merge queue.
    func emitSnapshot(end: UInt64, isFinal: Bool) {
        snapshotIndex += 1
        var fleetSnapshots: [FleetLaneSnapshot] = []
        fleetSnapshots.reserveCapacity(metrics.fleets.count)
        var start = end
        for fleet in metrics.fleets.indices {
            let interval = metrics.fleets[fleet].latency.takeInterval(endingAt: end)
            start = min(start, interval.start)
            let values = metrics.fleets[fleet]
            fleetSnapshots.append(FleetLaneSnapshot(
                counters: values.counters, connected: values.connected, interval: interval))
        }
        let snapshot = LaneSnapshot(lane: index, index: snapshotIndex, start: start, end: end,
                                    fleets: fleetSnapshots, isFinal: isFinal)
        onSnapshot?(snapshot)
    }
}

extension Lane {
    /// When client `client` first connects: its fleet's start offset after the run's origin, then its place in
    /// the fleet's ramp (client i of n connects at offset + i * duration / n, or offset + i / rate). Clients of a
    /// fleet without a ramp are all due at once; the fleet's pacer and in-flight cap still apply.
    func firstConnectTime(_ client: Int, origin: UInt64) -> UInt64 {
        let fleet = fleets[clients[client].fleet].configuration
        let position = Double(clients[client].indexInFleet)
        let base = origin &+ fleet.startOffset
        switch fleet.ramp {
        case nil:
            return base
        case .over(let duration)?:
            return base &+ UInt64(position * Double(duration) / Double(max(fleet.count, 1)))
        case .rate(let perSecond)?:
            return base &+ UInt64(position * 1e9 / perSecond)
        }
    }
}
