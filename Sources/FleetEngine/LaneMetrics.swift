import FleetMetrics

/// Everything one lane measures, touched only by that lane's queue (no locks, no atomics on the hot path) and
/// merged with the other lanes' at the end. Plain values, so merging across processes works the same way.
///
/// Counters and latencies are kept per fleet (index: the fleet's position in the configuration) so results can
/// be reported per fleet without recording anything twice; the lane's totals are the sum of its fleets.
public struct LaneMetrics: Sendable {
    public var fleets: [FleetLaneMetrics]
    /// Per (subscriber, stream) accounting: `deliveryKeys` maps `subscriber << 32 | stream` to the dense
    /// tracker stream index so one subscriber's copy of a stream is never mixed with another's. Members of a
    /// shared-subscription group record under the group's key instead (`Engine.groupDeliveryKey`, top bit set),
    /// so the group is one subscriber; the engine merges a group's state across lanes at the end.
    public var delivery = DeliveryTracker()
    public var deliveryKeys: [UInt64: Int] = [:]
    /// Closed entitlement windows by delivery key (`subscriber << 32 | stream`): what each subscriber was owed.
    public var entitlement: [UInt64: [EntitlementWindow]] = [:]
    /// What the lane counts that is no fleet's (`ClientCounters.receiveCoalescingPauses`, `receiveBatchingPauses`):
    /// added to the run's totals only.
    public var lane = ClientCounters()

    public init(fleetCount: Int, start: UInt64) {
        fleets = Array(repeating: FleetLaneMetrics(start: start), count: max(fleetCount, 1))
    }

    /// The lane's counters over every fleet, and its own.
    public var counters: ClientCounters {
        var total = lane
        for fleet in fleets { total.add(fleet.counters) }
        return total
    }
}

/// What one fleet's clients on one lane measured: its counters (the type the engine's results and report.json
/// are made of), its latencies and the generator's lateness.
public struct FleetLaneMetrics: Sendable {
    public var counters = ClientCounters()
    /// Latencies of the current one-second interval; the lane hands finished intervals to the engine.
    public var latency: IntervalLatencyRecorder
    /// How late each message left beyond both its slot and the moment its client could send (connected, window
    /// open, socket writable), µs: the generator's own lateness, which a broker outage or backpressure does not
    /// inflate (schedule lag includes both). What the saturation check judges.
    public var generatorLag = HDRHistogram()
    /// Emulated network conditions: stalls, drops, outages, delays (`Lane+Network`).
    public var network = NetworkCounters()
    /// Clients of the fleet connected now (the run's peaks are kept by `ConnectedGauge`: lanes' peaks do not add).
    public var connected = 0

    public init(start: UInt64) { latency = IntervalLatencyRecorder(startingAt: start) }
}
