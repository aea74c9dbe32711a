import FleetMetrics

/// What one segment of a segmented run (`EngineConfiguration.segmentIndex` of `segmentCount`) knows of delivery,
/// in the form `fleetbench merge` needs to settle it exactly across segments. A subscriber's expected count comes
/// from its publisher's count, and the publisher may sit in another segment:
/// - pairs whose publisher and subscriber are both in this segment are final here (`local`, per fleet and QoS);
/// - pairs whose publisher is elsewhere keep what arrived (`remotePairs`); merge takes the expected count from the
///   publishing segment's `published`, when the subscriber was entitled for the whole run (`whole`);
/// - share groups keep their arrivals' sequence ranges (`groupStreams`), united over the segments at merge,
///   because a group's members may sit in every segment.
public struct SegmentDelivery: Sendable {
    public var index = 0
    public var count = 1
    /// This segment's tracked streams that published: (global stream id, messages published).
    public var published: [(stream: Int, count: UInt64)] = []
    /// Per fleet, per QoS (0...2): the final figures of pairs local to this segment.
    public var local: [PerQoS<DeliveryCounts>]
    public var remotePairs: [SegmentRemotePair] = []
    public var groupStreams: [SegmentGroupStream] = []

    public init(fleetCount: Int) {
        local = Array(repeating: PerQoS(repeating: DeliveryCounts()), count: fleetCount)
    }
}

/// A (subscriber, stream) pair whose stream another segment publishes.
public struct SegmentRemotePair: Sendable, Equatable {
    public var fleet: Int
    public var subscriber: Int
    public var stream: Int
    public var qos: Int
    /// Subscribed before the segments' common publishing start and never cut before the end: owed every message
    /// the stream published. False: owed an unknown part (the pair's loss cannot be known; merge counts it).
    public var whole: Bool
    /// What arrived (`expected` 0: only received, unique, duplicated, reordered and untracked count).
    public var counts: DeliveryCounts

    public init(fleet: Int, subscriber: Int, stream: Int, qos: Int, whole: Bool, counts: DeliveryCounts) {
        self.fleet = fleet
        self.subscriber = subscriber
        self.stream = stream
        self.qos = qos
        self.whole = whole
        self.counts = counts
    }
}

/// One (share group, stream) of a segment: the sequence numbers its members here received.
public struct SegmentGroupStream: Sendable, Equatable {
    public var group: Int
    public var stream: Int
    public var fleet: Int
    public var qos: Int
    public var ranges: [Range<UInt64>]
    public var counts: DeliveryCounts

    public init(group: Int, stream: Int, fleet: Int, qos: Int, ranges: [Range<UInt64>], counts: DeliveryCounts) {
        self.group = group
        self.stream = stream
        self.fleet = fleet
        self.qos = qos
        self.ranges = ranges
        self.counts = counts
    }
}
