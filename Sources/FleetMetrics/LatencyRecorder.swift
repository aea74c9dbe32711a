/// What a latency measures.
public enum LatencyKind: Int, CaseIterable, Sendable {
    case tcpConnect, tlsHandshake, wsUpgrade
    /// CONNECT sent to CONNACK received.
    case connect
    /// SUBSCRIBE to SUBACK, UNSUBSCRIBE to UNSUBACK.
    case subscribe, unsubscribe
    /// PUBLISH to its acks.
    case puback, pubrec, pubcomp
    /// Publish to receipt at a subscriber.
    case endToEnd
    /// Request published to its response received.
    case requestResponse
    /// How late the generator sent a message compared with its schedule.
    case scheduleLag
    /// PINGREQ written to PINGRESP received (keep alive round trip). Last, so the other kinds keep their slots.
    case pingresp
    /// With emulated network conditions (`network` on a fleet): the same as `puback` and `endToEnd` from the bytes
    /// leaving the sender's emulated link to their reaching the receiver's, so without the emulated delays: the
    /// broker's (and loopback's) part. Only the `.sent` origin is kept.
    case pubackBrokerSide, endToEndBrokerSide

    /// The key used in report.json (`latency_ms.<name>`) and the tag in latency.hlog.
    public var reportName: String {
        switch self {
        case .tcpConnect: return "tcp_connect"
        case .tlsHandshake: return "tls_handshake"
        case .wsUpgrade: return "ws_upgrade"
        case .connect: return "connect"
        case .subscribe: return "subscribe"
        case .unsubscribe: return "unsubscribe"
        case .puback: return "puback"
        case .pubrec: return "pubrec"
        case .pubcomp: return "pubcomp"
        case .endToEnd: return "end_to_end"
        case .requestResponse: return "request_response"
        case .scheduleLag: return "schedule_lag"
        case .pingresp: return "pingresp"
        case .pubackBrokerSide: return "puback_broker"
        case .endToEndBrokerSide: return "end_to_end_broker"
        }
    }

    public init?(reportName: String) {
        guard let kind = Self.allCases.first(where: { $0.reportName == reportName }) else { return nil }
        self = kind
    }
}

/// Where a latency is measured from.
public enum LatencyOrigin: Int, CaseIterable, Sendable {
    /// From the time the message should have been sent by its schedule: the headline figure, free of
    /// coordinated omission (a stalled generator shows up as latency, not as fewer samples).
    case intended
    /// From the time the bytes were actually handed to the socket.
    case sent

    public var reportName: String { self == .intended ? "intended" : "sent" }
}

/// A histogram per latency kind and origin, in microseconds. Mergeable; histograms of kinds that never record
/// allocate nothing.
public struct LatencyRecorder: Sendable {
    private var slots: HistogramSlots

    public init() { slots = HistogramSlots() }

    private static func slot(_ kind: LatencyKind, _ origin: LatencyOrigin) -> Int {
        kind.rawValue * 2 + origin.rawValue
    }

    /// Records a duration already in microseconds.
    public mutating func record(_ kind: LatencyKind, from origin: LatencyOrigin, microseconds: UInt64) {
        makeSlotsWritable()
        slots.histograms[Self.slot(kind, origin)].record(microseconds)
    }

    /// Records a message's latency from both origins: `completedAt - intendedAt` and `completedAt - sentAt`
    /// (nanoseconds of one monotonic clock, rounded to the nearest microsecond). A completion before its start (a
    /// clock anomaly) records 0 and is counted by the histogram's `clampedLowCount`.
    public mutating func record(
        _ kind: LatencyKind, intendedAt intended: UInt64, sentAt sent: UInt64, completedAt completed: UInt64
    ) {
        makeSlotsWritable()
        slots.histograms[Self.slot(kind, .intended)].record(signed: Self.microseconds(from: intended, to: completed))
        slots.histograms[Self.slot(kind, .sent)].record(signed: Self.microseconds(from: sent, to: completed))
    }

    /// Records a latency that has only an actual start (TCP connect, TLS handshake): into the `.sent` histogram.
    public mutating func record(_ kind: LatencyKind, startedAt start: UInt64, completedAt completed: UInt64) {
        makeSlotsWritable()
        slots.histograms[Self.slot(kind, .sent)].record(signed: Self.microseconds(from: start, to: completed))
    }

    /// Signed microseconds between two monotonic nanosecond readings, rounded to nearest.
    @inline(__always)
    static func microseconds(from start: UInt64, to end: UInt64) -> Int64 {
        if end >= start { return Int64(truncatingIfNeeded: (end - start) / 1000 + ((end - start) % 1000 >= 500 ? 1 : 0)) }
        return -Int64(truncatingIfNeeded: (start - end) / 1000 + ((start - end) % 1000 >= 500 ? 1 : 0))
    }

    public func histogram(_ kind: LatencyKind, from origin: LatencyOrigin) -> HDRHistogram {
        slots.histograms[Self.slot(kind, origin)]
    }

    /// Kinds with at least one sample from either origin, in declaration order.
    public var kindsWithSamples: [LatencyKind] {
        LatencyKind.allCases.filter {
            histogram($0, from: .intended).totalCount > 0 || histogram($0, from: .sent).totalCount > 0
        }
    }

    /// Adds every histogram of `other` into this recorder's (exact: same layout).
    public mutating func add(_ other: LatencyRecorder) {
        makeSlotsWritable()
        for index in slots.indices where other.slots.histograms[index].totalCount > 0
            || other.slots.histograms[index].clampedHighCount > 0
        {
            slots.histograms[index].add(other.slots.histograms[index])
        }
    }

    /// Adds one histogram (for example decoded from another process's log) into a kind and origin.
    public mutating func add(_ histogram: HDRHistogram, kind: LatencyKind, origin: LatencyOrigin) {
        makeSlotsWritable()
        slots.histograms[Self.slot(kind, origin)].add(histogram)
    }

    /// A copy whose histograms are `compacted()`: for recorders kept long, such as a run's per-second intervals.
    public func compacted() -> LatencyRecorder {
        var copy = LatencyRecorder()
        copy.makeSlotsWritable()
        for index in slots.indices where slots.histograms[index].totalCount > 0
            || slots.histograms[index].clampedHighCount > 0 || slots.histograms[index].clampedLowCount > 0
        {
            copy.slots.histograms[index] = slots.histograms[index].compacted()
        }
        return copy
    }

    /// Empties every histogram. If no snapshot shares this recorder's histograms they are zeroed in place (no
    /// allocation); otherwise the recorder starts afresh and the snapshot keeps the old ones.
    public mutating func reset() {
        if isKnownUniquelyReferenced(&slots) {
            for index in slots.indices { slots.histograms[index].reset() }
        } else {
            slots = HistogramSlots()
        }
    }

    @inline(__always)
    private mutating func makeSlotsWritable() {
        if !isKnownUniquelyReferenced(&slots) { slots = slots.copy() }
    }
}

/// The histograms of a recorder, shared copy-on-write between a recorder and its snapshots. A raw buffer rather
/// than an array in a class: an array stored in a class property pays a dynamic exclusivity check and a
/// uniqueness check on every write, which doubled the cost of a record.
private final class HistogramSlots: @unchecked Sendable {
    // Safety: written only through a LatencyRecorder holding the sole reference (checked before every write).
    static let count = LatencyKind.allCases.count * LatencyOrigin.allCases.count
    let histograms: UnsafeMutablePointer<HDRHistogram>

    init() {
        histograms = .allocate(capacity: Self.count)
        histograms.initialize(repeating: HDRHistogram(), count: Self.count)
    }

    private init(copying source: UnsafeMutablePointer<HDRHistogram>) {
        histograms = .allocate(capacity: Self.count)
        histograms.initialize(from: source, count: Self.count)
    }

    var indices: Range<Int> { 0..<Self.count }

    func copy() -> HistogramSlots { HistogramSlots(copying: histograms) }

    deinit {
        histograms.deinitialize(count: Self.count)
        histograms.deallocate()
    }
}
