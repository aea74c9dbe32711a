import FleetJSON
import FleetMetrics
import Foundation
import MQTTCodec

// report.json: written with FleetJSON's writer (keys in a fixed order, byte-for-byte stable) and read back into a
// RunReport. Every key is documented in docs/report-format.md; keep the two in step.

extension RunReport {
    /// The statistics written for every latency histogram, in this order.
    public static let latencyStatistics = ["count", "min", "mean", "p50", "p90", "p99", "p999", "max"]

    /// report.json as text (pretty-printed, final newline).
    public func jsonText() throws(ReportError) -> String {
        JSONWriter.string(from: try jsonValue())
    }

    /// report.json as a JSON tree.
    public func jsonValue() throws(ReportError) -> JSONValue {
        var root: [JSONMember] = [
            JSONMember("schema", .string(Self.schema)),
            JSONMember("tool", .object([JSONMember("version", .string(toolVersion))])),
            JSONMember("scenario", scenario.jsonValue),
            JSONMember("run", run.jsonValue),
            JSONMember("brokers", .array(brokers.map { .string($0) })),
            JSONMember("broker_embedded", .bool(brokerEmbedded)),
            JSONMember("passed", .bool(passed)),
            JSONMember("connections", connections.jsonValue),
            JSONMember("messages", messages.jsonValue),
            JSONMember("delivery", delivery.jsonValue),
            JSONMember("ack_timeouts", Self.ackTimeoutsJSON(ackTimeouts, seconds: ackTimeoutSeconds)),
            JSONMember("downgrades", downgrades.jsonValue),
            JSONMember("requests", requests.jsonValue),
            JSONMember("offline", offline.jsonValue),
            JSONMember("latency_ms", try Self.latencyJSON(latency)),
            JSONMember("thresholds", .array(thresholds.map(\.jsonValue))),
            JSONMember("generator", generatorJSON),
            JSONMember("timeline", .array(timeline.map(\.jsonValue))),
        ]
        var fleetValues: [JSONValue] = []
        for fleet in fleets { fleetValues.append(try fleet.jsonValue()) }
        root.append(JSONMember("fleets", .array(fleetValues)))
        root.append(contentsOf: networkMembers)
        if let segments {
            root.append(JSONMember("segments", .object([
                JSONMember("index", segments.index.map { .integer(Int64($0)) } ?? .null),
                JSONMember("count", .integer(Int64(segments.count))),
                JSONMember("delivery_final", .bool(segments.deliveryFinal)),
                JSONMember("unverified_pairs", .integer(Int64(clamping: segments.unverifiedPairs))),
            ])))
        }
        root.append(JSONMember("environment", environment.jsonValue))
        return .object(root)
    }

    /// Schedule lag (how late the generator sent compared with its schedule) from the latency recorder, ms.
    public var scheduleLagHistogram: HDRHistogram {
        let intended = latency.histogram(.scheduleLag, from: .intended)
        return intended.totalCount > 0 ? intended : latency.histogram(.scheduleLag, from: .sent)
    }

    var generatorJSON: JSONValue {
        let lag = scheduleLagHistogram
        let lagValue: JSONValue =
            lag.totalCount == 0
            ? .null
            : .object([
                JSONMember("p50", .real(Self.milliseconds(lag.valueAtPercentile(50)))),
                JSONMember("p99", .real(Self.milliseconds(lag.valueAtPercentile(99)))),
                JSONMember("max", .real(Self.milliseconds(lag.max))),
            ])
        return .object([
            JSONMember("schedule_lag_ms", lagValue),
            JSONMember("saturated", .bool(generator.saturated)),
            JSONMember("saturation_reasons", .array(generator.saturationReasons.map { .string($0) })),
            JSONMember("cpu_s", .real(generator.cpuSeconds)),
            JSONMember("peak_rss_bytes", .count(generator.peakRSSBytes)),
            JSONMember("lanes", .integer(Int64(generator.lanes))),
            JSONMember("receive_coalescing_us", .count(generator.receiveCoalescingMicroseconds)),
            JSONMember("receive_coalescing_pauses", .count(generator.receiveCoalescingPauses)),
            JSONMember("receive_batching_us", .count(generator.receiveBatchingMicroseconds)),
            JSONMember("receive_batching_pauses", .count(generator.receiveBatchingPauses)),
            JSONMember("send_path", .string(generator.sendPath)),
            JSONMember("io_uring_unavailable", generator.ioUringUnavailable.map { .string($0) } ?? .null),
            JSONMember("receive_path", .string(generator.receivePath)),
            JSONMember("receive_ring_unavailable", generator.receiveRingUnavailable.map { .string($0) } ?? .null),
            JSONMember("source_addresses", .array(generator.sourceAddresses.map { .string($0) })),
            JSONMember("dropped_slots", .count(generator.droppedSlots)),
            JSONMember("unsent_at_end", .count(generator.unsentAtEnd)),
            JSONMember("drain_s", .real(generator.drainSeconds)),
            JSONMember("drain_limit_s", .real(generator.drainLimitSeconds)),
            JSONMember("abandoned_publishes", .count(generator.abandonedPublishes)),
            JSONMember("foreign_messages", .count(generator.foreignMessages)),
            JSONMember("rcvlowat_fallbacks", .count(generator.lowWatermarkFallbacks)),
            JSONMember("rcvlowat_rearms", .count(generator.lowWatermarkRearms)),
            JSONMember("closed_model_streams", .array(generator.closedModelStreams.map { .string($0) })),
        ])
    }

    static func ackTimeoutsJSON(_ counts: AckTimeoutCounts, seconds: [AckKind: Double]?) -> JSONValue {
        var members = AckKind.allCases.map { JSONMember($0.reportName, .count(counts[$0])) }
        members.append(JSONMember("total", .count(counts.total)))
        if let seconds {
            let limits = AckKind.allCases.compactMap { kind in seconds[kind].map { JSONMember(kind.reportName, .real($0)) } }
            members.append(JSONMember("timeouts_s", .object(limits)))
        }
        return .object(members)
    }

    /// `latency_ms`: one object per kind with samples. The headline figures come from the intended send time when
    /// that histogram has samples (end-to-end, acks, request/response), else from the actual start (TCP connect,
    /// TLS handshake, ...); `origin` says which. `from_sent` holds the actual-send-time figures beside intended ones.
    /// `hdr` is the histogram itself (V2 compressed, base64) so a reader rebuilds every percentile exactly.
    static func latencyJSON(_ latency: LatencyRecorder) throws(ReportError) -> JSONValue {
        var members: [JSONMember] = []
        for kind in latency.kindsWithSamples {
            let intended = latency.histogram(kind, from: .intended)
            let sent = latency.histogram(kind, from: .sent)
            var entry: [JSONMember]
            if intended.totalCount > 0 {
                entry = [JSONMember("origin", .string(LatencyOrigin.intended.reportName))]
                entry += try histogramJSON(intended)
                if sent.totalCount > 0 { entry.append(JSONMember("from_sent", .object(try histogramJSON(sent)))) }
            } else {
                entry = [JSONMember("origin", .string(LatencyOrigin.sent.reportName))]
                entry += try histogramJSON(sent)
            }
            members.append(JSONMember(kind.reportName, .object(entry)))
        }
        return .object(members)
    }

    static func histogramJSON(_ histogram: HDRHistogram) throws(ReportError) -> [JSONMember] {
        let payload: String
        do {
            payload = try histogram.encodedBase64()
        } catch {
            throw ReportError("cannot encode a latency histogram: \(error.description)")
        }
        // Samples recorded as 0 because they came out negative (a receive time before the send time it
        // carries), and samples beyond the histogram's range: neither shows in the percentiles.
        return LatencySummary(histogram).members + [
            JSONMember("clamped_low", .count(histogram.clampedLowCount)),
            JSONMember("clamped_high", .count(histogram.clampedHighCount)),
            JSONMember("hdr", .string(payload)),
        ]
    }

    /// Microseconds as milliseconds (three decimals: µs precision).
    public static func milliseconds(_ microseconds: UInt64) -> Double { Double(microseconds) / 1000 }

    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-29T15:16:30.123Z`.
    public static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    public static func parseRFC3339(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

/// The statistics of one histogram as report.json writes them (ms, µs precision).
public struct LatencySummary: Equatable, Sendable {
    public var count: UInt64
    public var min: Double
    public var mean: Double
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var p999: Double
    public var max: Double

    public init(_ histogram: HDRHistogram) {
        count = histogram.totalCount
        min = RunReport.milliseconds(histogram.min)
        mean = histogram.mean.rounded() / 1000
        p50 = RunReport.milliseconds(histogram.valueAtPercentile(50))
        p90 = RunReport.milliseconds(histogram.valueAtPercentile(90))
        p99 = RunReport.milliseconds(histogram.valueAtPercentile(99))
        p999 = RunReport.milliseconds(histogram.valueAtPercentile(99.9))
        max = RunReport.milliseconds(histogram.max)
    }

    /// The statistic named as in report.json (`p99`, `mean`, ...).
    public func value(_ statistic: String) -> Double? {
        switch statistic {
        case "count": return Double(count)
        case "min": return min
        case "mean": return mean
        case "p50": return p50
        case "p90": return p90
        case "p99": return p99
        case "p999": return p999
        case "max": return max
        default: return nil
        }
    }

    var members: [JSONMember] {
        [JSONMember("count", .count(count))]
            + [("min", min), ("mean", mean), ("p50", p50), ("p90", p90), ("p99", p99), ("p999", p999), ("max", max)]
            .map { JSONMember($0.0, .real($0.1)) }
    }
}

extension JSONValue {
    /// A counter as a JSON integer (counters beyond Int64 cannot happen in practice; they saturate).
    static func count(_ value: UInt64) -> JSONValue { .integer(Int64(clamping: value)) }
}

extension ScenarioInfo {
    var jsonValue: JSONValue {
        var members = [
            JSONMember("name", .string(name)), JSONMember("file", .string(file)),
            JSONMember("sha256", .string(sha256)),
        ]
        if let description { members.append(JSONMember("description", .string(description))) }
        if let redacted { members.append(JSONMember("redacted", redacted)) }
        return .object(members)
    }
}

extension RunInfo {
    /// 16 lowercase hex digits, as `--run-id` takes it.
    public static func runIDText(_ runID: UInt64) -> String {
        let digits = String(runID, radix: 16)
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }

    var jsonValue: JSONValue {
        .object([
            JSONMember("started_at", .string(RunReport.rfc3339(startedAt))),
            JSONMember("duration_s", .real(durationSeconds)),
            JSONMember("publish_s", .real(publishSeconds)),
            JSONMember("interrupted", .bool(interrupted)),
            // Seeds beyond Int64 (JSON readers lose integers past 2^53 anyway) are written as decimal strings.
            JSONMember("seed", seed <= UInt64(Int64.max) ? .integer(Int64(seed)) : .string(String(seed))),
            // Hex, fixed width: a 64-bit id does not survive JSON readers that use doubles.
            JSONMember("run_id", .string(RunInfo.runIDText(runID))),
        ])
    }
}

extension ConnectionSummary {
    var jsonValue: JSONValue {
        .object([
            JSONMember("attempted", .count(attempted)),
            JSONMember("succeeded", .count(succeeded)),
            JSONMember("failed", .count(failed)),
            JSONMember("reconnects", .count(reconnects)),
            JSONMember("peak_connected", .count(peakConnected)),
            JSONMember("never_connected", .count(neverConnected)),
            JSONMember("retransmitted", .count(retransmitted)),
            JSONMember("window_decreases", .count(windowDecreases)),
            JSONMember("churn_skipped", .count(churnSkipped)),
            JSONMember("transport_errors", .count(transportErrorsTotal)),
            JSONMember("failed_by_reason", .object(failuresByReason.map { JSONMember($0.reason, .count($0.count)) })),
            JSONMember("disconnects_by_reason", .object(disconnectsByReason.map { JSONMember($0.reason, .count($0.count)) })),
            // Texts (OpenSSL's, an HTTP status line) are not keys: an array, most frequent first.
            JSONMember("transport_errors_by_reason", .array(transportErrors.map { entry in
                .object([JSONMember("reason", .string(entry.reason)), JSONMember("count", .count(entry.count))])
            })),
        ])
    }
}

extension DowngradeSummary {
    var jsonValue: JSONValue {
        .object([
            JSONMember("subscription_qos", .count(subscriptionQoS)),
            JSONMember("subscription_refused", .count(subscriptionRefused)),
            JSONMember("qos2_acked_as_qos1", .count(qos2AckedAsQoS1)),
        ])
    }
}

extension RequestSummary {
    var jsonValue: JSONValue {
        .object([
            JSONMember("sent", .count(sent)),
            JSONMember("answered", .count(answered)),
            JSONMember("timed_out", .count(timedOut)),
            JSONMember("late", .count(late)),
            JSONMember("responder_answered", .count(responderAnswered)),
            JSONMember("responder_unanswered", .count(responderUnanswered)),
        ])
    }
}

extension OfflineCounts {
    var jsonValue: JSONValue {
        .object([
            JSONMember("buffered", .count(buffered)),
            JSONMember("flushed", .count(flushed)),
            JSONMember("overflowed", .count(overflowed)),
        ])
    }
}

extension MessageSummary {
    var jsonValue: JSONValue {
        var members: [JSONMember] = []
        for qos in MQTTQoS.allCases {
            var entry = [JSONMember("published", .count(published[qos]))]
            if qos != .atMostOnce { entry.append(JSONMember("acked", .count(acked[qos]))) }
            entry.append(JSONMember("received", .count(received[qos])))
            entry.append(JSONMember("arrived", .count(arrived[qos])))
            if qos != .atMostOnce { entry.append(JSONMember("unacked_at_end", .count(unackedAtEnd[qos]))) }
            members.append(JSONMember("qos\(qos.rawValue)", .object(entry)))
        }
        members.append(JSONMember("bytes_in", .count(bytesIn)))
        members.append(JSONMember("bytes_out", .count(bytesOut)))
        return .object(members)
    }
}

extension DeliveryCounts {
    var jsonValue: JSONValue {
        .object([
            JSONMember("expected", .count(expected)),
            JSONMember("received", .count(received)),
            JSONMember("unique", .count(unique)),
            JSONMember("lost", .count(lost)),
            JSONMember("duplicated", .count(duplicated)),
            JSONMember("reordered", .count(reordered)),
            JSONMember("unexpected", .count(unexpected)),
            JSONMember("missed_while_offline", .count(missedWhileOffline)),
            JSONMember("untracked", .count(untracked)),
            JSONMember("rejected", .count(rejected)),
        ])
    }
}

extension DeliveryByQoS {
    var jsonValue: JSONValue {
        .object(MQTTQoS.allCases.map { JSONMember("qos\($0.rawValue)", self[$0].jsonValue) } + [
            JSONMember("foreign", .count(foreign)),
            JSONMember("retained_on_subscribe", .count(retainedOnSubscribe)),
        ])
    }
}

extension ThresholdResult {
    var jsonValue: JSONValue {
        var members = [
            JSONMember("expression", .string(expression)),
            JSONMember("metric", .string(metric)),
            JSONMember("observed", observed.map { .real($0) } ?? .null),
        ]
        if let limit { members.append(JSONMember("limit", .real(limit))) }
        members.append(JSONMember("passed", .bool(passed)))
        if let detail { members.append(JSONMember("detail", .string(detail))) }
        return .object(members)
    }
}

extension TimelinePoint {
    var jsonValue: JSONValue {
        .object([
            JSONMember("t", .real(t)),
            JSONMember("connected", .count(connected)),
            JSONMember("published", .count(published)),
            JSONMember("received", .count(received)),
            JSONMember("end_to_end_p50_ms", endToEndP50Ms.map { .real($0) } ?? .null),
            JSONMember("end_to_end_p99_ms", endToEndP99Ms.map { .real($0) } ?? .null),
            JSONMember("ack_timeouts", .count(ackTimeouts)),
        ])
    }
}

extension FleetReport {
    func jsonValue() throws(ReportError) -> JSONValue {
        .object([
            JSONMember("name", .string(name)),
            JSONMember("clients", .integer(Int64(clients))),
            JSONMember("connections", connections.jsonValue),
            JSONMember("messages", messages.jsonValue),
            JSONMember("delivery", delivery.jsonValue),
            JSONMember("ack_timeouts", RunReport.ackTimeoutsJSON(ackTimeouts, seconds: ackTimeoutSeconds)),
            JSONMember("downgrades", downgrades.jsonValue),
            JSONMember("requests", requests.jsonValue),
            JSONMember("offline", offline.jsonValue),
            JSONMember("latency_ms", try RunReport.latencyJSON(latency)),
            JSONMember("generator", .object([
                JSONMember("dropped_slots", .count(droppedSlots)),
                JSONMember("unsent_at_end", .count(unsentAtEnd)),
                JSONMember("abandoned_publishes", .count(abandonedPublishes)),
            ])),
        ])
    }
}

extension EnvironmentInfo {
    var jsonValue: JSONValue {
        .object([
            JSONMember("hostname", .string(hostname)),
            JSONMember("os", .string(os)),
            JSONMember("cores", .integer(Int64(cores))),
            JSONMember("memory_bytes", .count(memoryBytes)),
            JSONMember("fleetbench_version", .string(fleetbenchVersion)),
        ])
    }
}

/// A report that cannot be written or read: what and where (a JSON path such as `latency_ms.end_to_end.hdr`).
public struct ReportError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
