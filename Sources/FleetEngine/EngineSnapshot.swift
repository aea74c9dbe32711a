import Dispatch
import FleetMetrics

/// The whole run, once a second: cumulative counters, who is connected, and the latencies of that second.
public struct EngineSnapshot: Sendable {
    /// Seconds since the run started, at the end of this interval.
    public var t: Double
    /// The interval in monotonic nanoseconds (a run's last interval may be shorter than a second).
    public var intervalStart: UInt64
    public var intervalEnd: UInt64
    /// Clients connected at the end of the interval.
    public var connected: Int
    /// Cumulative message counts over every QoS (acked: PUBACK for QoS 1, PUBCOMP for QoS 2).
    public var published: UInt64
    public var received: UInt64
    public var acked: UInt64
    /// Cumulative ack timeouts of every kind.
    public var ackTimeouts: UInt64
    /// End-to-end latency of the messages received in this interval, from their intended send time, in
    /// milliseconds (nil when none arrived).
    public var endToEndP50Milliseconds: Double?
    public var endToEndP99Milliseconds: Double?
    /// Every latency recorded in this interval (all fleets), compacted. In `EngineResult.timeline` it is empty
    /// when the configuration's `keepsIntervalLatencies` is false (the callback always gets it).
    public var latency: LatencyRecorder
    /// Cumulative counters of the whole run so far.
    public var counters: ClientCounters
    /// The same per fleet, in configuration order.
    public var fleets: [EngineFleetSnapshot]
}

public struct EngineFleetSnapshot: Sendable {
    public var name: String
    public var connected: Int
    public var counters: ClientCounters
}

/// Wall-clock-free timestamps of a run's phases (monotonic nanoseconds, same clock as `EngineResult.origin`).
public struct EnginePhaseTimes: Sendable, Equatable {
    /// The run began: first connects scheduled (fleets with a start offset begin later).
    public var connectStart: UInt64 = 0
    /// Every client connected and subscribed (or given up by its policy); nil if that never happened.
    public var allReady: UInt64?
    public var publishStart: UInt64 = 0
    public var publishEnd: UInt64 = 0
    /// In-flight acks and deliveries settled (or the drain timeout passed).
    public var drainEnd: UInt64 = 0
    /// Every client disconnected and closed.
    public var disconnectEnd: UInt64 = 0

    public init() {}

    /// Seconds from the run's start to `time`.
    public func seconds(_ time: UInt64) -> Double { Double(time &- connectStart) / 1e9 }
}

/// Merges the lanes' per-second snapshots into the run's timeline. Used only on the engine's merge queue.
final class SnapshotMerger: @unchecked Sendable {
    let laneCount: Int
    let fleetNames: [String]
    let origin: UInt64
    let onSnapshot: (@Sendable (EngineSnapshot) -> Void)?
    let keepsIntervalLatencies: Bool
    let keepsTimeline: Bool
    private var pending: [Int: [LaneSnapshot?]] = [:]
    /// Each lane's most recent snapshot, so a second one lane has not reported yet carries its last counters.
    private var latest: [LaneSnapshot?]
    private var nextIndex = 1
    private var finalsSeen = 0
    private(set) var timeline: [EngineSnapshot] = []
    private(set) var intervals: [LatencyInterval] = []
    /// Seconds held back until every lane reported them (bounded by how far lanes drift apart).
    var pendingSeconds: Int { pending.count }
    /// Every interval summed, per fleet: the run's latency totals.
    private(set) var fleetLatency: [LatencyRecorder]

    init(laneCount: Int, fleetNames: [String], origin: UInt64, keepsIntervalLatencies: Bool,
         keepsTimeline: Bool = true, onSnapshot: (@Sendable (EngineSnapshot) -> Void)?) {
        self.keepsIntervalLatencies = keepsIntervalLatencies
        self.keepsTimeline = keepsTimeline
        self.laneCount = laneCount
        self.fleetNames = fleetNames
        self.origin = origin
        self.onSnapshot = onSnapshot
        latest = Array(repeating: nil, count: laneCount)
        fleetLatency = Array(repeating: LatencyRecorder(), count: fleetNames.count)
    }

    func add(_ snapshot: LaneSnapshot) {
        for (fleet, values) in snapshot.fleets.enumerated() where fleet < fleetLatency.count {
            fleetLatency[fleet].add(values.interval.latencies)
        }
        pending[snapshot.index, default: Array(repeating: nil, count: laneCount)][snapshot.lane] = snapshot
        if snapshot.isFinal { finalsSeen += 1 }
        // Seconds are emitted in order, each once every lane reported it; after every lane's final snapshot,
        // whatever is left goes out (a lane that stopped just before a second boundary has no snapshot for it).
        while let slots = pending[nextIndex], slots.allSatisfy({ $0 != nil }) {
            pending[nextIndex] = nil
            emit(slots)
            nextIndex += 1
        }
        if finalsSeen == laneCount {
            for index in pending.keys.sorted() {
                if let slots = pending[index] { emit(slots) }
            }
            pending.removeAll()
        }
    }

    private func emit(_ slots: [LaneSnapshot?]) {
        var latency = LatencyRecorder()
        var start = UInt64.max
        var end: UInt64 = 0
        for (lane, slot) in slots.enumerated() {
            guard let slot else { continue }
            latest[lane] = slot
            start = min(start, slot.start)
            end = max(end, slot.end)
            for fleet in slot.fleets { latency.add(fleet.interval.latencies) }
        }
        var fleets = fleetNames.map { EngineFleetSnapshot(name: $0, connected: 0, counters: ClientCounters()) }
        var counters = ClientCounters()
        var connected = 0
        for case let lane? in latest {
            for (fleet, values) in lane.fleets.enumerated() where fleet < fleets.count {
                fleets[fleet].connected += values.connected
                fleets[fleet].counters.add(values.counters)
                counters.add(values.counters)
                connected += values.connected
            }
        }
        // Kept for the whole run: compacted (a full latency histogram is ~188 KB, mostly zeros).
        let kept = latency.compacted()
        if keepsIntervalLatencies { intervals.append(LatencyInterval(start: start, end: end, latencies: kept)) }
        let endToEnd = latency.histogram(.endToEnd, from: .intended)
        let snapshot = EngineSnapshot(
            t: Double(end &- origin) / 1e9, intervalStart: start, intervalEnd: end, connected: connected,
            published: counters.published.total, received: counters.received.total, acked: counters.acked.total,
            ackTimeouts: counters.ackTimeouts.total,
            endToEndP50Milliseconds: endToEnd.totalCount > 0 ? Double(endToEnd.valueAtPercentile(50)) / 1000 : nil,
            endToEndP99Milliseconds: endToEnd.totalCount > 0 ? Double(endToEnd.valueAtPercentile(99)) / 1000 : nil,
            latency: kept, counters: counters, fleets: fleets)
        onSnapshot?(snapshot)
        if !keepsTimeline {
            // Streamed by the callback: nothing of this second stays here.
        } else if keepsIntervalLatencies {
            timeline.append(snapshot)
        } else {
            var lean = snapshot
            lean.latency = LatencyRecorder()
            timeline.append(lean)
        }
    }
}
