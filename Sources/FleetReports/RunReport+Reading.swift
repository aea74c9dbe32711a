import FleetJSON
import FleetMetrics
import Foundation
import MQTTCodec

// Reading report.json back into a RunReport: what `fleetbench report DIR` and `fleetbench compare` use. Strict
// about the keys the writer always writes (a wrong type or a missing key is an error naming its path), lenient
// about keys it does not know (a newer writer may add some). Latency histograms come back from their `hdr`
// payloads, so every percentile is exact.

extension RunReport {
    /// Reads a report.json file.
    public static func load(path: String) throws(ReportError) -> RunReport {
        let document: JSONDocument
        do {
            document = try JSONDocument.load(path: path)
        } catch {
            throw ReportError(error.description)
        }
        do {
            return try RunReport(json: document.root)
        } catch {
            throw ReportError("\(path): \(error.message)")
        }
    }

    /// Parses report.json text (`file` names it in messages).
    public static func parse(text: String, file: String = "report.json") throws(ReportError) -> RunReport {
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(text: text, file: file)
        } catch {
            throw ReportError(error.description)
        }
        do {
            return try RunReport(json: document.root)
        } catch {
            throw ReportError("\(file): \(error.message)")
        }
    }

    /// Builds a report from a parsed report.json tree. `latencyIntervals` stay empty (they live in latency.hlog).
    public init(json root: JSONValue) throws(ReportError) {
        let top = JSONField(root, path: "")
        let schema = try top.string("schema")
        guard schema == Self.schema else {
            throw ReportError("schema: expected \"\(Self.schema)\", found \"\(schema)\"")
        }
        let scenario = try top.object("scenario")
        let run = try top.object("run")
        guard let startedAt = Self.parseRFC3339(try run.string("started_at")) else {
            throw ReportError("run.started_at: not an RFC 3339 date")
        }
        let seed: UInt64
        switch run.value["seed"] {
        case .integer(let value)? where value >= 0: seed = UInt64(value)
        case .string(let text)?:
            guard let parsed = UInt64(text) else { throw ReportError("run.seed: not an unsigned integer") }
            seed = parsed
        default: throw ReportError("run.seed: expected an unsigned integer")
        }
        var runID: UInt64 = 0
        if let text = try run.optionalString("run_id") {
            guard let parsed = UInt64(text, radix: 16) else { throw ReportError("run.run_id: not 16 hex digits") }
            runID = parsed
        }
        let ackObject = try top.object("ack_timeouts")
        var ackSeconds: [AckKind: Double] = [:]
        if let limits = try ackObject.optionalObject("timeouts_s") {
            for kind in AckKind.allCases {
                if let seconds = try limits.optionalNumber(kind.reportName) { ackSeconds[kind] = seconds }
            }
        }
        let generator = try top.object("generator")
        var fleets: [FleetReport] = []
        for fleet in try top.array("fleets") { fleets.append(try FleetReport(fleet)) }
        let environment = try top.object("environment")
        self.init(
            toolVersion: try top.object("tool").string("version"),
            scenario: ScenarioInfo(
                name: try scenario.string("name"), file: try scenario.string("file"),
                sha256: try scenario.string("sha256"), description: try scenario.optionalString("description"),
                redacted: scenario.value["redacted"]),
            run: RunInfo(
                startedAt: startedAt, durationSeconds: try run.number("duration_s"),
                interrupted: try run.bool("interrupted"), seed: seed,
                publishSeconds: try run.optionalNumber("publish_s") ?? 0, runID: runID),
            brokers: try top.array("brokers").map { element throws(ReportError) in try element.stringValue() },
            brokerEmbedded: try top.bool("broker_embedded"),
            passed: try top.bool("passed"),
            connections: try ConnectionSummary(try top.object("connections")),
            messages: try MessageSummary(try top.object("messages")),
            delivery: try DeliveryByQoS(try top.object("delivery")),
            ackTimeouts: try AckTimeoutCounts(ackObject),
            ackTimeoutSeconds: ackSeconds,
            latency: try LatencyRecorder(try top.object("latency_ms")),
            thresholds: try top.array("thresholds").map { element throws(ReportError) in
                try ThresholdResult(try element.asObject())
            },
            generator: GeneratorHealth(
                saturated: try generator.bool("saturated"),
                saturationReasons: try generator.array("saturation_reasons").map { element throws(ReportError) in
                    try element.stringValue()
                },
                cpuSeconds: try generator.number("cpu_s"), peakRSSBytes: try generator.count("peak_rss_bytes"),
                lanes: Int(try generator.count("lanes")), droppedSlots: try generator.count("dropped_slots"),
                abandonedPublishes: try generator.count("abandoned_publishes"),
                foreignMessages: try generator.count("foreign_messages"),
                unsentAtEnd: UInt64(try generator.optionalNumber("unsent_at_end") ?? 0),
                drainSeconds: try generator.optionalNumber("drain_s") ?? 0,
                drainLimitSeconds: try generator.optionalNumber("drain_limit_s") ?? 0,
                // Absent from reports written before it existed (they read every message at once).
                receiveCoalescingMicroseconds: UInt64(try generator.optionalNumber("receive_coalescing_us") ?? 0),
                receiveCoalescingPauses: UInt64(try generator.optionalNumber("receive_coalescing_pauses") ?? 0),
                receiveBatchingMicroseconds: UInt64(try generator.optionalNumber("receive_batching_us") ?? 0),
                receiveBatchingPauses: UInt64(try generator.optionalNumber("receive_batching_pauses") ?? 0),
                sendPath: try generator.optionalString("send_path") ?? "",
                ioUringUnavailable: try generator.optionalString("io_uring_unavailable"),
                receivePath: try generator.optionalString("receive_path") ?? "",
                receiveRingUnavailable: try generator.optionalString("receive_ring_unavailable"),
                sourceAddresses: try generator.optionalArray("source_addresses")?.map { element throws(ReportError) in
                    try element.stringValue()
                } ?? [],
                // Absent from reports written before closed-model streams existed (none ran so).
                closedModelStreams: try generator.optionalArray("closed_model_streams")?.map { element throws(ReportError) in
                    try element.stringValue()
                } ?? []),
            timeline: try top.array("timeline").map { element throws(ReportError) in
                try TimelinePoint(try element.asObject())
            },
            fleets: fleets,
            environment: EnvironmentInfo(
                hostname: try environment.string("hostname"), os: try environment.string("os"),
                cores: Int(try environment.count("cores")), memoryBytes: try environment.count("memory_bytes"),
                fleetbenchVersion: try environment.string("fleetbench_version")))
        // Absent from reports written before they were reported: 0.
        self.generator.lowWatermarkFallbacks = try generator.optionalCount("rcvlowat_fallbacks") ?? 0
        self.generator.lowWatermarkRearms = try generator.optionalCount("rcvlowat_rearms") ?? 0
        downgrades = try DowngradeSummary(try top.optionalObject("downgrades"))
        requests = try RequestSummary(try top.optionalObject("requests"))
        offline = try OfflineCounts(try top.optionalObject("offline"))
        network = try Self.readNetwork(top)
        if let object = try top.optionalObject("segments") {
            var index: Int?
            if case .integer(let value)? = object.value["index"] { index = Int(value) }
            segments = SegmentInfo(index: index, count: Int(try object.count("count")),
                                   deliveryFinal: try object.bool("delivery_final"),
                                   unverifiedPairs: try object.count("unverified_pairs"))
        }
    }
}

extension RequestSummary {
    /// Absent from reports written before it existed: all zero.
    init(_ object: JSONField?) throws(ReportError) {
        self.init()
        guard let object else { return }
        sent = UInt64(try object.optionalNumber("sent") ?? 0)
        answered = UInt64(try object.optionalNumber("answered") ?? 0)
        timedOut = UInt64(try object.optionalNumber("timed_out") ?? 0)
        late = try object.optionalCount("late") ?? 0
        responderAnswered = try object.optionalCount("responder_answered") ?? 0
        responderUnanswered = try object.optionalCount("responder_unanswered") ?? 0
    }
}

extension OfflineCounts {
    /// Absent from reports written before offline buffering existed: all zero.
    init(_ object: JSONField?) throws(ReportError) {
        self.init()
        guard let object else { return }
        buffered = UInt64(try object.optionalNumber("buffered") ?? 0)
        flushed = UInt64(try object.optionalNumber("flushed") ?? 0)
        overflowed = UInt64(try object.optionalNumber("overflowed") ?? 0)
    }
}

extension ConnectionSummary {
    init(_ object: JSONField) throws(ReportError) {
        self.init(
            attempted: try object.count("attempted"), succeeded: try object.count("succeeded"),
            failed: try object.count("failed"), reconnects: try object.count("reconnects"),
            peakConnected: try object.count("peak_connected"),
            failuresByReason: try object.object("failed_by_reason").reasonCounts(),
            disconnectsByReason: try object.object("disconnects_by_reason").reasonCounts())
        neverConnected = UInt64(try object.optionalNumber("never_connected") ?? 0)
        retransmitted = UInt64(try object.optionalNumber("retransmitted") ?? 0)
        windowDecreases = UInt64(try object.optionalNumber("window_decreases") ?? 0)
        // Absent from reports written before they were reported: 0, none.
        churnSkipped = try object.optionalCount("churn_skipped") ?? 0
        transportErrors = try object.optionalArray("transport_errors_by_reason")?.map { element throws(ReportError) in
            let entry = try element.asObject()
            return ReasonCount(try entry.string("reason"), try entry.count("count"))
        } ?? []
        if let total = try object.optionalCount("transport_errors"), total != transportErrorsTotal {
            throw ReportError("\(object.path).transport_errors: \(total) is not the sum of transport_errors_by_reason (\(transportErrorsTotal))")
        }
    }
}

extension DowngradeSummary {
    /// Absent from reports written before it existed: all zero.
    init(_ object: JSONField?) throws(ReportError) {
        self.init()
        guard let object else { return }
        subscriptionQoS = UInt64(try object.optionalNumber("subscription_qos") ?? 0)
        subscriptionRefused = UInt64(try object.optionalNumber("subscription_refused") ?? 0)
        qos2AckedAsQoS1 = UInt64(try object.optionalNumber("qos2_acked_as_qos1") ?? 0)
    }
}

extension MessageSummary {
    init(_ object: JSONField) throws(ReportError) {
        self.init()
        for qos in MQTTQoS.allCases {
            let entry = try object.object("qos\(qos.rawValue)")
            published[qos] = try entry.count("published")
            if qos != .atMostOnce { acked[qos] = try entry.count("acked") }
            received[qos] = try entry.count("received")
            // Absent from reports written before received meant this run's messages only: their `received`
            // counted every arrival, which is what `arrived` is.
            arrived[qos] = try entry.optionalCount("arrived") ?? received[qos]
            // Absent from reports written before the end-of-run drain counted them.
            if qos != .atMostOnce { unackedAtEnd[qos] = UInt64(try entry.optionalNumber("unacked_at_end") ?? 0) }
        }
        bytesIn = try object.count("bytes_in")
        bytesOut = try object.count("bytes_out")
    }
}

extension DeliveryByQoS {
    init(_ object: JSONField) throws(ReportError) {
        self.init()
        for qos in MQTTQoS.allCases {
            let entry = try object.object("qos\(qos.rawValue)")
            // Reports before range tracking said `out_of_range` for what is now `untracked`.
            let untracked = try entry.optionalCount("untracked")
            let outOfRange = try entry.optionalCount("out_of_range")
            var counts = DeliveryCounts(
                expected: try entry.count("expected"), received: try entry.count("received"),
                unique: try entry.count("unique"), duplicated: try entry.count("duplicated"),
                reordered: try entry.count("reordered"),
                untracked: untracked ?? outOfRange ?? 0,
                rejected: try entry.count("rejected"),
                missedWhileOffline: try entry.optionalCount("missed_while_offline") ?? 0)
            // Sums of streams: losses and surpluses were summed per stream, not derived from the totals.
            counts.lost = try entry.count("lost")
            counts.unexpected = try entry.count("unexpected")
            self[qos] = counts
        }
        foreign = try object.optionalCount("foreign") ?? 0
        retainedOnSubscribe = try object.optionalCount("retained_on_subscribe") ?? 0
    }
}

extension AckTimeoutCounts {
    init(_ object: JSONField) throws(ReportError) {
        self.init()
        for kind in AckKind.allCases { self[kind] = try object.count(kind.reportName) }
    }
}

extension LatencyRecorder {
    /// From `latency_ms`: each kind's `hdr` payload (and `from_sent.hdr`) decoded into its origin's histogram.
    /// Kinds this version does not know are skipped.
    init(_ object: JSONField) throws(ReportError) {
        self.init()
        for member in object.members {
            guard let kind = LatencyKind(reportName: member.key) else { continue }
            let entry = try object.object(member.key)
            let originName = try entry.string("origin")
            guard let origin = LatencyOrigin.allCases.first(where: { $0.reportName == originName }) else {
                throw ReportError("\(entry.path).origin: expected \"intended\" or \"sent\", found \"\(originName)\"")
            }
            add(try entry.histogram(), kind: kind, origin: origin)
            if origin == .intended, let sent = try entry.optionalObject("from_sent") {
                add(try sent.histogram(), kind: kind, origin: .sent)
            }
        }
    }
}

extension ThresholdResult {
    init(_ object: JSONField) throws(ReportError) {
        self.init(
            expression: try object.string("expression"), metric: try object.string("metric"),
            observed: try object.optionalNumber("observed"), limit: try object.optionalNumber("limit"),
            passed: try object.bool("passed"), detail: try object.optionalString("detail"))
    }
}

extension TimelinePoint {
    init(_ object: JSONField) throws(ReportError) {
        self.init(
            t: try object.number("t"), connected: try object.count("connected"),
            published: try object.count("published"), received: try object.count("received"),
            endToEndP50Ms: try object.optionalNumber("end_to_end_p50_ms"),
            endToEndP99Ms: try object.optionalNumber("end_to_end_p99_ms"),
            ackTimeouts: try object.count("ack_timeouts"))
    }
}

extension FleetReport {
    init(_ element: JSONField) throws(ReportError) {
        let object = try element.asObject()
        self.init(
            name: try object.string("name"), clients: Int(try object.count("clients")),
            connections: try ConnectionSummary(try object.object("connections")),
            messages: try MessageSummary(try object.object("messages")),
            ackTimeouts: try AckTimeoutCounts(try object.object("ack_timeouts")),
            delivery: try DeliveryByQoS(try object.object("delivery")),
            latency: try LatencyRecorder(try object.object("latency_ms")))
        // Absent from reports written before fleets had their own.
        downgrades = try DowngradeSummary(try object.optionalObject("downgrades"))
        requests = try RequestSummary(try object.optionalObject("requests"))
        offline = try OfflineCounts(try object.optionalObject("offline"))
        if let generator = try object.optionalObject("generator") {
            droppedSlots = UInt64(try generator.optionalNumber("dropped_slots") ?? 0)
            unsentAtEnd = UInt64(try generator.optionalNumber("unsent_at_end") ?? 0)
            abandonedPublishes = UInt64(try generator.optionalNumber("abandoned_publishes") ?? 0)
        }
        if let limits = try object.object("ack_timeouts").optionalObject("timeouts_s") {
            for kind in AckKind.allCases {
                if let seconds = try limits.optionalNumber(kind.reportName) { ackTimeoutSeconds[kind] = seconds }
            }
        }
    }
}

/// A value inside report.json with its path, for typed access with messages that say where.
struct JSONField {
    let value: JSONValue
    let path: String

    init(_ value: JSONValue, path: String) {
        self.value = value
        self.path = path
    }

    var members: [JSONMember] { value.objectMembers ?? [] }

    private func childPath(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private func required(_ key: String) throws(ReportError) -> JSONValue {
        guard case .object = value else { throw ReportError("\(path.isEmpty ? "report" : path): expected an object") }
        guard let child = value[key] else { throw ReportError("\(childPath(key)): missing") }
        return child
    }

    private func mismatch(_ key: String, _ expected: String, _ found: JSONValue) -> ReportError {
        ReportError("\(childPath(key)): expected \(expected), found \(found.kindDescription)")
    }

    func asObject() throws(ReportError) -> JSONField {
        guard case .object = value else { throw ReportError("\(path): expected an object, found \(value.kindDescription)") }
        return self
    }

    func stringValue() throws(ReportError) -> String {
        guard case .string(let text) = value else {
            throw ReportError("\(path): expected a string, found \(value.kindDescription)")
        }
        return text
    }

    func object(_ key: String) throws(ReportError) -> JSONField {
        let child = try required(key)
        guard case .object = child else { throw mismatch(key, "an object", child) }
        return JSONField(child, path: childPath(key))
    }

    func optionalObject(_ key: String) throws(ReportError) -> JSONField? {
        guard let child = value[key], child != .null else { return nil }
        guard case .object = child else { throw mismatch(key, "an object", child) }
        return JSONField(child, path: childPath(key))
    }

    func array(_ key: String) throws(ReportError) -> [JSONField] {
        let child = try required(key)
        guard case .array(let elements) = child else { throw mismatch(key, "an array", child) }
        var fields: [JSONField] = []
        for (index, element) in elements.enumerated() {
            fields.append(JSONField(element, path: "\(childPath(key))[\(index)]"))
        }
        return fields
    }

    /// nil when the key is absent or null (fields added after the first report version).
    func optionalArray(_ key: String) throws(ReportError) -> [JSONField]? {
        guard let child = value[key], child != .null else { return nil }
        return try array(key)
    }

    func string(_ key: String) throws(ReportError) -> String {
        let child = try required(key)
        guard case .string(let text) = child else { throw mismatch(key, "a string", child) }
        return text
    }

    func optionalString(_ key: String) throws(ReportError) -> String? {
        guard let child = value[key], child != .null else { return nil }
        guard case .string(let text) = child else { throw mismatch(key, "a string", child) }
        return text
    }

    func bool(_ key: String) throws(ReportError) -> Bool {
        let child = try required(key)
        guard case .bool(let flag) = child else { throw mismatch(key, "true or false", child) }
        return flag
    }

    func number(_ key: String) throws(ReportError) -> Double {
        let child = try required(key)
        guard let number = child.numberValue, number.isFinite else { throw mismatch(key, "a number", child) }
        return number
    }

    func optionalNumber(_ key: String) throws(ReportError) -> Double? {
        guard let child = value[key], child != .null else { return nil }
        guard let number = child.numberValue, number.isFinite else { throw mismatch(key, "a number", child) }
        return number
    }

    /// A non-negative integer.
    func count(_ key: String) throws(ReportError) -> UInt64 {
        let child = try required(key)
        guard case .integer(let number) = child, number >= 0 else {
            throw mismatch(key, "a non-negative integer", child)
        }
        return UInt64(number)
    }

    /// A non-negative integer, nil when absent (members added after the first report format).
    func optionalCount(_ key: String) throws(ReportError) -> UInt64? {
        guard value[key] != nil else { return nil }
        return try count(key)
    }

    /// Every member as a reason and its count, in the order written.
    func reasonCounts() throws(ReportError) -> [ReasonCount] {
        var counts: [ReasonCount] = []
        for member in members { counts.append(ReasonCount(member.key, try count(member.key))) }
        return counts
    }

    /// The histogram of a latency entry, from its `hdr` payload.
    func histogram() throws(ReportError) -> HDRHistogram {
        let payload = try string("hdr")
        // Absent from reports written before they were recorded.
        let clampedLow = UInt64(try optionalNumber("clamped_low") ?? 0)
        let clampedHigh = UInt64(try optionalNumber("clamped_high") ?? 0)
        do {
            var histogram = try HDRHistogram(decodingBase64: payload)
            histogram.restoreClampedCounts(low: clampedLow, high: clampedHigh)
            return histogram
        } catch {
            throw ReportError("\(childPath("hdr")): \(error.description)")
        }
    }
}
