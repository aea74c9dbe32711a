import FleetMetrics

/// Everything one lane measures, touched only by that lane's queue (no locks, no atomics on the hot path) and
/// merged with the other lanes' at the end. Plain values, so merging across processes works the same way.
public struct LaneMetrics: Sendable {
    public var counters = ClientCounters()
    public var latency = LatencyRecorder()
    /// Per (subscriber, stream) accounting: `deliveryKeys` maps `subscriber << 32 | stream` to the dense
    /// tracker stream index so one subscriber's copy of a stream is never mixed with another's.
    public var delivery = DeliveryTracker()
    public var deliveryKeys: [UInt64: Int] = [:]
    /// Messages each publisher stream sent (index: global stream id), for expected counts at the end.
    public var publishedPerStream: [UInt64] = []
    /// Messages received that carried no fleetbench header (foreign publishers, will messages).
    public var foreignMessages: UInt64 = 0
    /// Slots a `drop` stream skipped because it was behind.
    public var droppedSlots: UInt64 = 0
    /// In-flight messages given up (session lost on reconnect, or connection closed for good).
    public var abandonedPublishes: UInt64 = 0
    /// Peak of clients connected at once on this lane.
    public var peakConnected = 0

    public init() {}
}
