import FleetJSON
import FleetMetrics
import Foundation
import MQTTCodec

/// Everything a run's results folder holds (report.json, report.html, junit.xml, latency.hlog), as plain data.
///
/// `fleetbench run` fills it from the engine's results; `ReportWriter` writes the folder; `RunReport(json:)`
/// reads report.json back (latency histograms are embedded in it, so `fleetbench report DIR` and
/// `fleetbench compare` need nothing else). Field meanings and units are in docs/report-format.md.
public struct RunReport: Sendable {
    /// The value of report.json's `schema` key.
    public static let schema = "fleetbench.report/1"

    public var toolVersion: String
    public var scenario: ScenarioInfo
    public var run: RunInfo
    /// Broker URLs with credentials redacted.
    public var brokers: [String]
    /// Whether fleetbench started its own mosquitto for the run.
    public var brokerEmbedded: Bool
    /// Every threshold passed (and the run was not interrupted, as the caller decides).
    public var passed: Bool
    public var connections: ConnectionSummary
    public var messages: MessageSummary
    public var delivery: DeliveryByQoS
    public var ackTimeouts: AckTimeoutCounts
    /// What the broker granted below what was asked (report.json `downgrades`).
    public var downgrades = DowngradeSummary()
    /// Request/response round trips of the requesting fleets (report.json `requests`).
    public var requests = RequestSummary()
    /// Offline store-and-forward of the publish streams that buffer while offline (report.json `offline`).
    public var offline = OfflineCounts()
    /// The deadline of each ack kind, in seconds; kinds without a deadline are absent.
    public var ackTimeoutSeconds: [AckKind: Double]
    /// Latency histograms of the whole run, both origins (intended and sent).
    public var latency: LatencyRecorder
    public var thresholds: [ThresholdResult]
    public var generator: GeneratorHealth
    /// One point a second, oldest first.
    public var timeline: [TimelinePoint]
    /// Per-second latency snapshots for latency.hlog (not part of report.json).
    public var latencyIntervals: [ReportLatencyInterval]
    /// Per-fleet breakdowns; written when the scenario has more than one fleet.
    public var fleets: [FleetReport]
    public var environment: EnvironmentInfo
    /// Segmented runs (`run --segment K/N`) and their merge; nil for an ordinary run.
    public var segments: SegmentInfo?
    /// Fleets with emulated network conditions (`NetworkReport`); empty when none has any.
    public var network: [NetworkReport] = []

    public init(
        toolVersion: String, scenario: ScenarioInfo, run: RunInfo, brokers: [String] = [],
        brokerEmbedded: Bool = false, passed: Bool = true, connections: ConnectionSummary = ConnectionSummary(),
        messages: MessageSummary = MessageSummary(), delivery: DeliveryByQoS = DeliveryByQoS(),
        ackTimeouts: AckTimeoutCounts = AckTimeoutCounts(), ackTimeoutSeconds: [AckKind: Double] = [:],
        latency: LatencyRecorder = LatencyRecorder(), thresholds: [ThresholdResult] = [],
        generator: GeneratorHealth = GeneratorHealth(), timeline: [TimelinePoint] = [],
        latencyIntervals: [ReportLatencyInterval] = [], fleets: [FleetReport] = [],
        environment: EnvironmentInfo = EnvironmentInfo()
    ) {
        self.toolVersion = toolVersion
        self.scenario = scenario
        self.run = run
        self.brokers = brokers
        self.brokerEmbedded = brokerEmbedded
        self.passed = passed
        self.connections = connections
        self.messages = messages
        self.delivery = delivery
        self.ackTimeouts = ackTimeouts
        self.ackTimeoutSeconds = ackTimeoutSeconds
        self.latency = latency
        self.thresholds = thresholds
        self.generator = generator
        self.timeline = timeline
        self.latencyIntervals = latencyIntervals
        self.fleets = fleets
        self.environment = environment
    }

    /// Fills every counted section from a run's merged counters: connections, messages, ack timeouts,
    /// downgrades, requests, offline, the arrivals outside the delivery accounting and the generator's counts
    /// (the delivery accounting itself and the latencies come separately).
    public mutating func setCounters(_ counters: ClientCounters, peakConnected: Int) {
        connections = ConnectionSummary(counters: counters, peakConnected: peakConnected)
        messages = MessageSummary(counters: counters)
        ackTimeouts = counters.ackTimeouts
        downgrades = DowngradeSummary(counters: counters)
        requests = RequestSummary(counters: counters)
        offline = counters.offline
        delivery.foreign = counters.foreignMessages
        delivery.retainedOnSubscribe = counters.retainedOnSubscribe
        generator.setCounts(counters)
    }
}

/// A broker granting less than asked, counted per kind rather than passed silently.
public struct DowngradeSummary: Equatable, Sendable {
    /// SUBACK filters granted a lower QoS than the SUBSCRIBE asked.
    public var subscriptionQoS: UInt64 = 0
    /// SUBACK filters refused (failure code 0x80 or above).
    public var subscriptionRefused: UInt64 = 0
    /// QoS 2 PUBLISH packets answered with PUBACK (the broker ran them as QoS 1).
    public var qos2AckedAsQoS1: UInt64 = 0

    public init(subscriptionQoS: UInt64 = 0, subscriptionRefused: UInt64 = 0, qos2AckedAsQoS1: UInt64 = 0) {
        self.subscriptionQoS = subscriptionQoS
        self.subscriptionRefused = subscriptionRefused
        self.qos2AckedAsQoS1 = qos2AckedAsQoS1
    }

    public init(counters: ClientCounters) {
        self.init(subscriptionQoS: counters.subscriptionsDowngraded, subscriptionRefused: counters.subscriptionsRefused,
                  qos2AckedAsQoS1: counters.qos2AckedAsQoS1)
    }

    public var total: UInt64 { subscriptionQoS &+ subscriptionRefused &+ qos2AckedAsQoS1 }

    public mutating func add(_ other: DowngradeSummary) {
        subscriptionQoS &+= other.subscriptionQoS
        subscriptionRefused &+= other.subscriptionRefused
        qos2AckedAsQoS1 &+= other.qos2AckedAsQoS1
    }
}

/// Request/response (command and control). The requester side: requests published, responses received to them,
/// requests without a response in time (no response by the end of the run, or a late one) and, of those, the
/// late ones. The responder side: requests a responder answered, and those it could not (no response topic, its
/// window full, its connection closed).
public struct RequestSummary: Equatable, Sendable {
    public var sent: UInt64 = 0
    public var answered: UInt64 = 0
    public var timedOut: UInt64 = 0
    /// Responses that arrived after the request's timeout (counted in `timedOut` too; absent from older reports: 0).
    public var late: UInt64 = 0
    /// Responder side (absent from older reports: 0).
    public var responderAnswered: UInt64 = 0
    public var responderUnanswered: UInt64 = 0

    public init(sent: UInt64 = 0, answered: UInt64 = 0, timedOut: UInt64 = 0, late: UInt64 = 0,
                responderAnswered: UInt64 = 0, responderUnanswered: UInt64 = 0) {
        self.sent = sent
        self.answered = answered
        self.timedOut = timedOut
        self.late = late
        self.responderAnswered = responderAnswered
        self.responderUnanswered = responderUnanswered
    }

    public init(counters: ClientCounters) {
        self.init(sent: counters.requestsSent, answered: counters.responsesReceived, timedOut: counters.requestsTimedOut,
                  late: counters.responsesLate, responderAnswered: counters.requestsAnswered,
                  responderUnanswered: counters.requestsUnanswered)
    }

    public mutating func add(_ other: RequestSummary) {
        sent &+= other.sent
        answered &+= other.answered
        timedOut &+= other.timedOut
        late &+= other.late
        responderAnswered &+= other.responderAnswered
        responderUnanswered &+= other.responderUnanswered
    }
}

/// The scenario a run executed.
public struct ScenarioInfo: Equatable, Sendable {
    public var name: String
    /// The path as given on the command line.
    public var file: String
    /// SHA-256 of the file's bytes, lowercase hex.
    public var sha256: String
    public var description: String?
    /// The scenario with secrets (passwords, tokens, credentials in URLs) masked.
    public var redacted: JSONValue?

    public init(name: String, file: String, sha256: String, description: String? = nil, redacted: JSONValue? = nil) {
        self.name = name
        self.file = file
        self.sha256 = sha256
        self.description = description
        self.redacted = redacted
    }
}

public struct RunInfo: Equatable, Sendable {
    /// Wall-clock start (written as RFC 3339 UTC with milliseconds).
    public var startedAt: Date
    /// Publishing duration actually run, in seconds.
    public var durationSeconds: Double
    /// Ended early by a signal or an error.
    public var interrupted: Bool
    public var seed: UInt64
    /// The publishing phase (start barrier to the end of publishing), seconds: what every rate is divided by.
    /// 0 in reports written before it was recorded (`rateSeconds` then falls back to the whole run).
    public var publishSeconds: Double
    /// The run id in every end-to-end header (written as 16 lowercase hex digits); 0 in reports written before
    /// run ids.
    public var runID: UInt64

    public init(startedAt: Date, durationSeconds: Double, interrupted: Bool = false, seed: UInt64 = 0,
                publishSeconds: Double = 0, runID: UInt64 = 0) {
        self.startedAt = startedAt
        self.durationSeconds = durationSeconds
        self.interrupted = interrupted
        self.seed = seed
        self.publishSeconds = publishSeconds
        self.runID = runID
    }

    /// The one time base of rates (`rates.published`, `rates.received`, per-second columns): the publishing
    /// phase, so connecting, ramping and draining do not dilute them; the whole run for older reports.
    public var rateSeconds: Double { publishSeconds > 0 ? publishSeconds : durationSeconds }

    /// Messages per second over `rateSeconds` (0 when there is no time base).
    public func rate(_ count: UInt64) -> Double { rateSeconds > 0 ? Double(count) / rateSeconds : 0 }
}

/// A count by reason, keyed by the reason's report name (`ConnectFailureReason.reportName`,
/// `DisconnectReason.reportName`), so a report read back keeps reasons it has no enum case for.
public struct ReasonCount: Equatable, Sendable {
    public var reason: String
    public var count: UInt64

    public init(_ reason: String, _ count: UInt64) {
        self.reason = reason
        self.count = count
    }
}

public struct ConnectionSummary: Equatable, Sendable {
    public var attempted: UInt64 = 0
    public var succeeded: UInt64 = 0
    public var failed: UInt64 = 0
    public var reconnects: UInt64 = 0
    public var peakConnected: UInt64 = 0
    /// Sorted by reason name.
    public var failuresByReason: [ReasonCount] = []
    /// Sorted by reason name.
    public var disconnectsByReason: [ReasonCount] = []
    /// Clients never accepted by a CONNACK during the whole run (absent from older reports: 0).
    public var neverConnected: UInt64 = 0
    /// Connects that needed a retransmission (SYN or CONNECT sent again) to reach CONNACK, and how often a lane
    /// halved its bound of connects in flight to a broker address for that (absent from older reports: 0).
    public var retransmitted: UInt64 = 0
    public var windowDecreases: UInt64 = 0
    /// Churn disconnects that found no connected client of the fleet on their lane (absent from older reports: 0).
    public var churnSkipped: UInt64 = 0
    /// TLS and WebSocket failures by their reason text, most frequent first, then by text (absent from older
    /// reports: empty). The failure and disconnect reasons keep only their kind (`tls_handshake_failed`, ...).
    public var transportErrors: [ReasonCount] = []

    public init(
        attempted: UInt64 = 0, succeeded: UInt64 = 0, failed: UInt64 = 0, reconnects: UInt64 = 0,
        peakConnected: UInt64 = 0, failuresByReason: [ReasonCount] = [], disconnectsByReason: [ReasonCount] = []
    ) {
        self.attempted = attempted
        self.succeeded = succeeded
        self.failed = failed
        self.reconnects = reconnects
        self.peakConnected = peakConnected
        self.failuresByReason = failuresByReason
        self.disconnectsByReason = disconnectsByReason
    }

    public init(counters: ClientCounters, peakConnected: Int) {
        attempted = counters.connectsAttempted
        succeeded = counters.connectsSucceeded
        failed = counters.connectsFailed
        reconnects = counters.reconnects
        self.peakConnected = UInt64(Swift.max(peakConnected, 0))
        failuresByReason = Self.sorted(counters.connectFailures.map { ReasonCount($0.key.reportName, $0.value) })
        disconnectsByReason = Self.sorted(counters.disconnects.map { ReasonCount($0.key.reportName, $0.value) })
        neverConnected = counters.neverConnected
        retransmitted = counters.connectsRetransmitted
        windowDecreases = counters.connectWindowDecreases
        churnSkipped = counters.churnSkipped
        transportErrors = Self.byCount(counters.transportErrors.map { ReasonCount($0.key, $0.value) })
    }

    /// Most frequent first, then by text; equal texts summed.
    static func byCount(_ counts: [ReasonCount]) -> [ReasonCount] {
        sorted(counts).sorted { $0.count != $1.count ? $0.count > $1.count : $0.reason < $1.reason }
    }

    /// Adds another process's or segment's connections (peaks add: segments run side by side).
    public mutating func add(_ other: ConnectionSummary) {
        attempted &+= other.attempted
        succeeded &+= other.succeeded
        failed &+= other.failed
        reconnects &+= other.reconnects
        peakConnected &+= other.peakConnected
        neverConnected &+= other.neverConnected
        churnSkipped &+= other.churnSkipped
        retransmitted &+= other.retransmitted
        windowDecreases &+= other.windowDecreases
        failuresByReason = Self.sorted(failuresByReason + other.failuresByReason)
        disconnectsByReason = Self.sorted(disconnectsByReason + other.disconnectsByReason)
        transportErrors = Self.byCount(transportErrors + other.transportErrors)
    }

    public var transportErrorsTotal: UInt64 { transportErrors.reduce(0) { $0 &+ $1.count } }

    /// Same names can come from distinct enum values (none today); they are summed.
    static func sorted(_ counts: [ReasonCount]) -> [ReasonCount] {
        var merged: [String: UInt64] = [:]
        for entry in counts { merged[entry.reason, default: 0] &+= entry.count }
        return merged.sorted { $0.key < $1.key }.map { ReasonCount($0.key, $0.value) }
    }

    public var disconnectsTotal: UInt64 { disconnectsByReason.reduce(0) { $0 &+ $1.count } }
}

public struct MessageSummary: Equatable, Sendable {
    public var published = PerQoSCounts()
    /// PUBACK for QoS 1, PUBCOMP for QoS 2 (QoS 0 is never acked and is not written).
    public var acked = PerQoSCounts()
    /// This run's messages received (`messages.qosN.received`; `ClientCounters.received`).
    public var received = PerQoSCounts()
    /// Every PUBLISH that arrived, other runs' and retained leftovers included (`messages.qosN.arrived`).
    public var arrived = PerQoSCounts()
    /// QoS 1/2 messages still awaiting their ack, within its deadline, when the end-of-run drain ended
    /// (`ClientCounters.unackedAtEnd`; QoS 0 is not written).
    public var unackedAtEnd = PerQoSCounts()
    public var bytesIn: UInt64 = 0
    public var bytesOut: UInt64 = 0

    public init(
        published: PerQoSCounts = PerQoSCounts(), acked: PerQoSCounts = PerQoSCounts(),
        received: PerQoSCounts = PerQoSCounts(), bytesIn: UInt64 = 0, bytesOut: UInt64 = 0
    ) {
        self.published = published
        self.acked = acked
        self.received = received
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
    }

    public init(counters: ClientCounters) {
        self.init(
            published: counters.published, acked: counters.acked, received: counters.received,
            bytesIn: counters.bytesIn, bytesOut: counters.bytesOut)
        unackedAtEnd = counters.unackedAtEnd
        arrived = counters.arrived
    }

    public mutating func add(_ other: MessageSummary) {
        published.add(other.published)
        acked.add(other.acked)
        received.add(other.received)
        arrived.add(other.arrived)
        unackedAtEnd.add(other.unackedAtEnd)
        bytesIn &+= other.bytesIn
        bytesOut &+= other.bytesOut
    }
}

/// Delivery accounting by the publishing stream's QoS.
@dynamicMemberLookup
public struct DeliveryByQoS: Equatable, Sendable {
    /// `qos0`, `qos1`, `qos2` and `[qos]` reach these.
    public var byQoS = PerQoS(repeating: DeliveryCounts())
    /// Arrivals that were not this run's: no fleetbench header, or another run's id (`delivery.foreign`).
    public var foreign: UInt64 = 0
    /// Retained messages a broker handed over on subscribe (`delivery.retained_on_subscribe`).
    public var retainedOnSubscribe: UInt64 = 0

    public init(qos0: DeliveryCounts = DeliveryCounts(), qos1: DeliveryCounts = DeliveryCounts(),
                qos2: DeliveryCounts = DeliveryCounts(), foreign: UInt64 = 0, retainedOnSubscribe: UInt64 = 0) {
        self.init(PerQoS(qos0, qos1, qos2), foreign: foreign, retainedOnSubscribe: retainedOnSubscribe)
    }

    public init(_ byQoS: PerQoS<DeliveryCounts>, foreign: UInt64 = 0, retainedOnSubscribe: UInt64 = 0) {
        self.byQoS = byQoS
        self.foreign = foreign
        self.retainedOnSubscribe = retainedOnSubscribe
    }

    public subscript(dynamicMember path: WritableKeyPath<PerQoS<DeliveryCounts>, DeliveryCounts>) -> DeliveryCounts {
        get { byQoS[keyPath: path] }
        set { byQoS[keyPath: path] = newValue }
    }

    public subscript(qos: MQTTQoS) -> DeliveryCounts {
        get { byQoS[qos] }
        set { byQoS[qos] = newValue }
    }

    public var total: DeliveryCounts { byQoS.sum(from: DeliveryCounts()) }

    public mutating func add(_ other: DeliveryByQoS) {
        byQoS.add(other.byQoS)
        foreign &+= other.foreign
        retainedOnSubscribe &+= other.retainedOnSubscribe
    }
}

/// One threshold's outcome.
public struct ThresholdResult: Equatable, Sendable {
    /// As written in the scenario, e.g. `latency.end_to_end.p99 < 50ms`.
    public var expression: String
    /// The metric path, e.g. `latency.end_to_end.p99`.
    public var metric: String
    /// The observed value in the metric's base unit (nanoseconds for times, a fraction for ratios); nil when the
    /// run did not produce the metric (which fails the threshold).
    public var observed: Double?
    /// The limit in the same unit.
    public var limit: Double?
    public var passed: Bool
    /// Words for people, e.g. "observed 61.2 ms, limit < 50 ms".
    public var detail: String?

    public init(
        expression: String, metric: String, observed: Double?, limit: Double? = nil, passed: Bool,
        detail: String? = nil
    ) {
        self.expression = expression
        self.metric = metric
        self.observed = observed
        self.limit = limit
        self.passed = passed
        self.detail = detail
    }
}

/// Whether the generator, not the broker, limited the run.
public struct GeneratorHealth: Equatable, Sendable {
    /// True when schedule lag or the generator's own CPU went beyond the stated bound.
    public var saturated: Bool = false
    /// Why, one sentence each (empty when not saturated).
    public var saturationReasons: [String] = []
    /// CPU time used by the fleetbench process (user + system), seconds.
    public var cpuSeconds: Double = 0
    public var peakRSSBytes: UInt64 = 0
    public var lanes: Int = 0
    /// How late a receive time may be under heavy inbound traffic (`EngineConfiguration.receiveCoalescing`), µs.
    public var receiveCoalescingMicroseconds: UInt64 = 0
    /// How many times a lane did pause so (0: no receive time was held back).
    public var receiveCoalescingPauses: UInt64 = 0
    /// How late a receive time may be while a lane receives a steady stream (`EngineConfiguration.receiveBatching`:
    /// the lane waits that long after a turn that received, to read what comes meanwhile in one turn), µs.
    public var receiveBatchingMicroseconds: UInt64 = 0
    /// How many times a lane did wait so (0: none; absent from older reports, which counted them as coalescing
    /// pauses or did not batch).
    public var receiveBatchingPauses: UInt64 = 0
    /// How writes reached the kernel: "io_uring" (one submission per lane turn), "send" (one send(2) per
    /// connection) or "io_uring+send"; empty in reports written before it was recorded.
    public var sendPath: String = ""
    /// Why io_uring was not used although it was asked for (the kernel's error), nil otherwise.
    public var ioUringUnavailable: String?
    /// How reads reached the lanes: "epoll+recv", "io_uring" (multishot receives) or "io_uring+epoll"; empty in
    /// reports written before it was recorded.
    public var receivePath: String = ""
    /// Why the receive ring was not used although it was asked for (the kernel's error), nil otherwise.
    public var receiveRingUnavailable: String?
    /// Local addresses clients were bound to, round-robin (named in the scenario, or 127.0.0.1, 127.0.0.2, ...
    /// chosen for a local broker); empty when the kernel chose.
    public var sourceAddresses: [String] = []
    /// Scheduled publishes skipped because the previous one had not gone out (engine `droppedSlots`).
    public var droppedSlots: UInt64 = 0
    /// QoS 1/2 publishes given up during the run: in flight when a reconnect found the session gone
    /// (engine `abandonedPublishes`).
    public var abandonedPublishes: UInt64 = 0
    /// Schedule slots due by the end of the publishing phase but never sent (engine `unsentAtEnd`).
    public var unsentAtEnd: UInt64 = 0
    /// How long the end-of-run drain lasted, and its limit (the scenario's `drain`), seconds.
    public var drainSeconds: Double = 0
    public var drainLimitSeconds: Double = 0
    /// Messages that carried no fleetbench header or an unknown stream (engine `foreignMessages`).
    public var foreignMessages: UInt64 = 0
    /// SO_RCVLOWAT batching of acks: connections whose broker was seen holding acks below a raised low watermark
    /// (Nagle's algorithm on) and were read at every byte from then on, and the times the batching was re-armed
    /// (engine `lowWatermarkFallbacks`, `lowWatermarkRearms`; absent from older reports: 0).
    public var lowWatermarkFallbacks: UInt64 = 0
    public var lowWatermarkRearms: UInt64 = 0
    /// Streams that ran closed-model (`{"type": "max"}`): each client sent as fast as its window or socket let it.
    /// Their latency counts from the actual send (they have no intended time and no schedule lag), so it is not
    /// open-model latency: it does not include waiting for the window.
    public var closedModelStreams: [String] = []

    public init(
        saturated: Bool = false, saturationReasons: [String] = [], cpuSeconds: Double = 0, peakRSSBytes: UInt64 = 0,
        lanes: Int = 0, droppedSlots: UInt64 = 0, abandonedPublishes: UInt64 = 0, foreignMessages: UInt64 = 0,
        unsentAtEnd: UInt64 = 0, drainSeconds: Double = 0, drainLimitSeconds: Double = 0,
        receiveCoalescingMicroseconds: UInt64 = 0, receiveCoalescingPauses: UInt64 = 0,
        receiveBatchingMicroseconds: UInt64 = 0, receiveBatchingPauses: UInt64 = 0,
        sendPath: String = "", ioUringUnavailable: String? = nil, receivePath: String = "",
        receiveRingUnavailable: String? = nil, sourceAddresses: [String] = [],
        closedModelStreams: [String] = []
    ) {
        self.receivePath = receivePath
        self.receiveRingUnavailable = receiveRingUnavailable
        self.closedModelStreams = closedModelStreams
        self.sourceAddresses = sourceAddresses
        self.sendPath = sendPath
        self.ioUringUnavailable = ioUringUnavailable
        self.receiveCoalescingMicroseconds = receiveCoalescingMicroseconds
        self.receiveCoalescingPauses = receiveCoalescingPauses
        self.receiveBatchingMicroseconds = receiveBatchingMicroseconds
        self.receiveBatchingPauses = receiveBatchingPauses
        self.saturated = saturated
        self.saturationReasons = saturationReasons
        self.cpuSeconds = cpuSeconds
        self.peakRSSBytes = peakRSSBytes
        self.lanes = lanes
        self.droppedSlots = droppedSlots
        self.abandonedPublishes = abandonedPublishes
        self.unsentAtEnd = unsentAtEnd
        self.drainSeconds = drainSeconds
        self.drainLimitSeconds = drainLimitSeconds
        self.foreignMessages = foreignMessages
    }

    /// The generator's counts from a run's counters.
    public mutating func setCounts(_ counters: ClientCounters) {
        droppedSlots = counters.droppedSlots
        abandonedPublishes = counters.abandonedPublishes
        unsentAtEnd = counters.unsentAtEnd
        foreignMessages = counters.foreignMessages
        lowWatermarkFallbacks = counters.lowWatermarkFallbacks
        lowWatermarkRearms = counters.lowWatermarkRearms
        receiveCoalescingPauses = counters.receiveCoalescingPauses
        receiveBatchingPauses = counters.receiveBatchingPauses
    }
}

/// One second of the run.
public struct TimelinePoint: Equatable, Sendable {
    /// Seconds since the start of the run (the end of the second this point covers).
    public var t: Double
    /// Clients connected at that moment.
    public var connected: UInt64
    /// Messages published during that second (all QoS).
    public var published: UInt64
    /// Messages received by subscribers during that second.
    public var received: UInt64
    /// End-to-end latency of that second's deliveries from the intended send time, ms; nil without samples.
    public var endToEndP50Ms: Double?
    public var endToEndP99Ms: Double?
    /// Ack timeouts (all kinds) during that second.
    public var ackTimeouts: UInt64

    public init(
        t: Double, connected: UInt64, published: UInt64, received: UInt64, endToEndP50Ms: Double? = nil,
        endToEndP99Ms: Double? = nil, ackTimeouts: UInt64 = 0
    ) {
        self.t = t
        self.connected = connected
        self.published = published
        self.received = received
        self.endToEndP50Ms = endToEndP50Ms
        self.endToEndP99Ms = endToEndP99Ms
        self.ackTimeouts = ackTimeouts
    }
}

extension TimelinePoint {
    /// Turns points whose `published`, `received` and `ackTimeouts` are running totals since the start of the run
    /// (as the engine's once-a-second snapshots carry them) into the per-second counts report.json holds. A total
    /// that goes down (it should not) gives 0 for that second rather than wrapping.
    public static func differenced(_ cumulative: [TimelinePoint]) -> [TimelinePoint] {
        var previous = TimelinePoint(t: 0, connected: 0, published: 0, received: 0)
        var result: [TimelinePoint] = []
        result.reserveCapacity(cumulative.count)
        for point in cumulative {
            var second = point
            second.published = point.published >= previous.published ? point.published - previous.published : 0
            second.received = point.received >= previous.received ? point.received - previous.received : 0
            second.ackTimeouts = point.ackTimeouts >= previous.ackTimeouts ? point.ackTimeouts - previous.ackTimeouts : 0
            result.append(second)
            previous = point
        }
        return result
    }
}

/// One interval of latency.hlog.
public struct ReportLatencyInterval: Sendable {
    /// Seconds since the run's start (`RunInfo.startedAt`).
    public var startSeconds: Double
    public var lengthSeconds: Double
    public var latencies: LatencyRecorder

    public init(startSeconds: Double, lengthSeconds: Double, latencies: LatencyRecorder) {
        self.startSeconds = startSeconds
        self.lengthSeconds = lengthSeconds
        self.latencies = latencies
    }

    /// From a lane or merged interval whose times are monotonic nanoseconds; `runStart` is the monotonic reading
    /// that corresponds to `RunInfo.startedAt`.
    public init(_ interval: LatencyInterval, runStart: UInt64) {
        let start = interval.start >= runStart ? interval.start - runStart : 0
        let end = interval.end >= interval.start ? interval.end - interval.start : 0
        self.init(
            startSeconds: Double(start) / 1e9, lengthSeconds: Double(end) / 1e9, latencies: interval.latencies)
    }
}

/// The figures of one fleet of a multi-fleet scenario.
public struct FleetReport: Sendable {
    public var name: String
    public var clients: Int
    public var connections: ConnectionSummary
    public var messages: MessageSummary
    public var ackTimeouts: AckTimeoutCounts
    /// This fleet's deadline of each ack kind, in seconds (fleets may set their own `ack_timeouts`).
    public var ackTimeoutSeconds: [AckKind: Double] = [:]
    public var delivery: DeliveryByQoS
    public var latency: LatencyRecorder
    /// What the broker granted this fleet below what it asked.
    public var downgrades = DowngradeSummary()
    /// This fleet's requests (zero for a fleet without request streams).
    public var requests = RequestSummary()
    /// This fleet's offline buffering.
    public var offline = OfflineCounts()
    /// This fleet's schedule slots never sent by the end of publishing, skipped, and QoS 1/2 publishes abandoned
    /// (the run's `generator` figures are the sums over the fleets).
    public var unsentAtEnd: UInt64 = 0
    public var droppedSlots: UInt64 = 0
    public var abandonedPublishes: UInt64 = 0

    public init(
        name: String, clients: Int, connections: ConnectionSummary = ConnectionSummary(),
        messages: MessageSummary = MessageSummary(), ackTimeouts: AckTimeoutCounts = AckTimeoutCounts(),
        delivery: DeliveryByQoS = DeliveryByQoS(), latency: LatencyRecorder = LatencyRecorder()
    ) {
        self.name = name
        self.clients = clients
        self.connections = connections
        self.messages = messages
        self.ackTimeouts = ackTimeouts
        self.delivery = delivery
        self.latency = latency
    }

    public init(
        name: String, clients: Int, counters: ClientCounters, peakConnected: Int, delivery: DeliveryByQoS,
        latency: LatencyRecorder
    ) {
        self.init(
            name: name, clients: clients, connections: ConnectionSummary(counters: counters, peakConnected: peakConnected),
            messages: MessageSummary(counters: counters), ackTimeouts: counters.ackTimeouts, delivery: delivery,
            latency: latency)
        downgrades = DowngradeSummary(counters: counters)
        requests = RequestSummary(counters: counters)
        offline = counters.offline
        self.delivery.foreign = counters.foreignMessages
        self.delivery.retainedOnSubscribe = counters.retainedOnSubscribe
        unsentAtEnd = counters.unsentAtEnd
        droppedSlots = counters.droppedSlots
        abandonedPublishes = counters.abandonedPublishes
    }
}

/// The machine the run ran on.
public struct EnvironmentInfo: Equatable, Sendable {
    public var hostname: String = ""
    /// e.g. "Linux 6.1.0 x86_64" or the PRETTY_NAME of /etc/os-release.
    public var os: String = ""
    public var cores: Int = 0
    public var memoryBytes: UInt64 = 0
    public var fleetbenchVersion: String = ""

    public init(hostname: String = "", os: String = "", cores: Int = 0, memoryBytes: UInt64 = 0,
                fleetbenchVersion: String = "") {
        self.hostname = hostname
        self.os = os
        self.cores = cores
        self.memoryBytes = memoryBytes
        self.fleetbenchVersion = fleetbenchVersion
    }

    /// This machine, as Foundation sees it.
    public static func current(fleetbenchVersion: String) -> EnvironmentInfo {
        let info = ProcessInfo.processInfo
        var os = info.operatingSystemVersionString
        if let release = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8) {
            for line in release.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
                os = line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    + " (" + info.operatingSystemVersionString + ")"
            }
        }
        return EnvironmentInfo(
            hostname: info.hostName, os: os, cores: info.activeProcessorCount, memoryBytes: info.physicalMemory,
            fleetbenchVersion: fleetbenchVersion)
    }
}

/// report.json's `segments`: which segment a result is, or that it is the merge of all of them.
public struct SegmentInfo: Equatable, Sendable {
    /// This result's segment (K of `run --segment K/N`); nil for a merged result.
    public var index: Int?
    /// N: how many segments the run has.
    public var count: Int
    /// False in a segment's own result (N > 1): delivery across segments is settled only by `fleetbench merge`.
    public var deliveryFinal: Bool
    /// Merged results: (subscriber, stream) pairs across segments whose subscriber was not entitled for the whole
    /// run (subscribed after the common publishing start, or cut before the end): what arrived is taken as
    /// expected, so their loss is not known.
    public var unverifiedPairs: UInt64

    public init(index: Int?, count: Int, deliveryFinal: Bool, unverifiedPairs: UInt64 = 0) {
        self.index = index
        self.count = count
        self.deliveryFinal = deliveryFinal
        self.unverifiedPairs = unverifiedPairs
    }
}
