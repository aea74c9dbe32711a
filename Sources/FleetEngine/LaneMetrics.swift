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
    /// Turns after which the lane paused to let a heavy inbound stream gather (`receiveCoalescing`).
    public var coalescingPauses: UInt64 = 0
    /// Fallbacks from the batching of acks: a connection's broker seen holding acks below a raised SO_RCVLOWAT
    /// (`Lane.probeLowWatermark`). A connection may fall back again after each re-arm.
    public var lowWatermarkFallbacks: UInt64 = 0
    /// Times the batching was tried again after a fallback (`EngineConfiguration.ackBatchingRetry`).
    public var lowWatermarkRearms: UInt64 = 0

    public init(fleetCount: Int, start: UInt64) {
        fleets = Array(repeating: FleetLaneMetrics(start: start), count: max(fleetCount, 1))
    }

    static let transportErrorKinds = 32

    /// The lane's counters over every fleet.
    public var counters: ClientCounters {
        var total = ClientCounters()
        for fleet in fleets { total.add(fleet.counters) }
        return total
    }
}

/// What one fleet's clients on one lane measured.
public struct FleetLaneMetrics: Sendable {
    public var counters = ClientCounters()
    /// Latencies of the current one-second interval; the lane hands finished intervals to the engine.
    public var latency: IntervalLatencyRecorder
    /// Messages received that carried no fleetbench header (foreign publishers, will messages) or another
    /// run's id (`delivery.foreign`).
    public var foreignMessages: UInt64 = 0
    /// Messages a broker handed over because of a subscription, from its retained store
    /// (`delivery.retained_on_subscribe`): not counted as deliveries, no latency.
    public var retainedOnSubscribe: UInt64 = 0
    /// Slots a `drop` stream skipped because it was behind.
    public var droppedSlots: UInt64 = 0
    /// In-flight messages given up (session lost on reconnect, or connection closed for good).
    public var abandonedPublishes: UInt64 = 0
    /// Schedule slots due by the end of the publishing phase that were never sent (window or socket full, the
    /// client offline): counted once, when publishing stops.
    public var unsentAtEnd: UInt64 = 0
    /// QoS 1/2 messages still awaiting their ack, within its deadline, when the drain ended (by QoS).
    public var unackedAtEnd = PerQoSCounts()
    /// How late each message left beyond both its slot and the moment its client could send (connected, window
    /// open, socket writable), µs: the generator's own lateness, which a broker outage or backpressure does not
    /// inflate (schedule lag includes both). What the saturation check judges.
    public var generatorLag = HDRHistogram()
    /// Responder side: requests answered, and requests that could not be (no reply topic, window full).
    public var requestsAnswered: UInt64 = 0
    public var requestsUnanswered: UInt64 = 0
    /// Requester side: requests sent, replies received to them, and replies that came after the timeout.
    public var requestsSent: UInt64 = 0
    public var responsesReceived: UInt64 = 0
    public var responsesLate: UInt64 = 0
    /// Churn disconnects that found no connected client of the fleet on the lane.
    public var churnSkipped: UInt64 = 0
    /// Offline store-and-forward (`Lane+Offline`).
    public var offline = OfflineCounts()
    /// TLS/WebSocket failures by reason text, at most `LaneMetrics.transportErrorKinds` distinct texts (further
    /// ones counted under "other transport error") so a hostile peer cannot grow it without bound.
    public var transportErrors: [String: UInt64] = [:]
    /// Clients of the fleet connected now (the run's peaks are kept by `ConnectedGauge`: lanes' peaks do not add).
    public var connected = 0

    public init(start: UInt64) { latency = IntervalLatencyRecorder(startingAt: start) }
}
