/// What a metric measures, which decides the units its threshold value may carry and how people see it.
public enum MetricUnit: Equatable, Sendable {
    /// Nanoseconds in thresholds (a threshold value needs a time unit: ns, us, ms, s, m, h); report.json writes
    /// the `ms` keys in milliseconds and the `_s` keys in seconds.
    case time
    /// A count or a rate; a plain number.
    case number
    /// A ratio 0...1; a plain number or a percentage (`0.1%` is 0.001).
    case ratio
    /// Not a number: a text, flag or list in report.json that says how the run was measured (send path,
    /// saturation reasons, an encoded histogram). Never a threshold.
    case text
}

/// Something a run must do before it can produce a metric. validate refuses a threshold on a metric whose
/// activity the scenario never has (it would fail every run "not observed").
public enum RunActivity: String, CaseIterable, Sendable {
    /// A fleet publishes (publish streams, heartbeats, requests or responses).
    case publishes
    /// A fleet publishes at QoS 1 (PUBACK) or QoS 2 (PUBREC, PUBCOMP).
    case qos1Publishes, qos2Publishes
    /// A fleet subscribes (subscriptions, a responder's command topic, a requester's reply filter).
    case subscribes
    /// A fleet publishes and a fleet subscribes: end-to-end deliveries are possible.
    case deliveries
    /// A fleet sends requests to another fleet's responder.
    case requests
    /// A broker or a fleet uses TLS (mqtts://, wss://).
    case tls
    /// A broker or a fleet uses WebSocket (ws://, wss://).
    case webSocket
    /// A fleet's keep alive is on and shorter than the run: a client idle that long sends PINGREQ.
    case keepAlive
    /// A fleet emulates network conditions (`network`).
    case network

    /// For the refusal message: "… needs <this>".
    public var explanation: String {
        switch self {
        case .publishes: return "a fleet that publishes"
        case .qos1Publishes: return "a fleet that publishes at QoS 1"
        case .qos2Publishes: return "a fleet that publishes at QoS 2"
        case .subscribes: return "a fleet that subscribes"
        case .deliveries: return "a fleet that publishes and a fleet that subscribes"
        case .requests: return "a fleet with requests"
        case .tls: return "a TLS broker or fleet (mqtts://, wss://, \"transport\": \"mqtts\")"
        case .webSocket: return "a WebSocket broker or fleet (ws://, wss://, \"transport\": \"ws\")"
        case .keepAlive: return "a fleet whose keepalive is on and shorter than the run (an idle client then pings)"
        case .network: return "a fleet with emulated network conditions (\"network\")"
        }
    }
}

/// Whether, and when, a run produces a metric.
public enum MetricSource: Equatable, Sendable {
    /// Every run: counters start at 0, latencies of every connection.
    case always
    /// Only a run that does this.
    case needs(RunActivity)
    /// No run does: kept because report.json has always written it (schema 1 never removes a key). The text
    /// says why, for the refusal.
    case never(String)
}

/// One metric: its path (what thresholds, compare and people call it), its unit, where report.json holds it and
/// how a run produces it.
public struct Metric: Sendable {
    /// Dotted path, e.g. `latency.end_to_end.p99`. A `*` component stands for any key (reasons, kinds).
    public let path: String
    public let unit: MetricUnit
    /// The dotted key in report.json (`latency_ms.connect.p99`), or nil when the value is derived at run time
    /// (ratios, rates) and not stored.
    public let report: String?
    public let source: MetricSource
    /// Whether a threshold may name it.
    public let threshold: Bool
    /// How a run produces it, for people (scenarios/README.md, docs/report-format.md, errors).
    public let meaning: String

    /// A metric every run produces.
    public init(_ path: String, _ unit: MetricUnit, report: String?, threshold: Bool = true, _ meaning: String) {
        self.init(path, unit, report: report, .always, threshold: threshold, meaning)
    }

    public init(_ path: String, _ unit: MetricUnit, report: String?, _ source: MetricSource,
                threshold: Bool = true, _ meaning: String) {
        self.path = path
        self.unit = unit
        self.report = report
        self.source = source
        self.threshold = threshold && unit != .text
        self.meaning = meaning
    }
}

/// The one list of every metric a run produces. Threshold parsing and validation, the threshold lookup of a run,
/// report.json's keys, compare and the way summaries print a value all go through it; tests check that a run
/// produces every entry and that report.json holds nothing else.
///
/// Adding a metric: add its line here (path, unit, report.json key, source, meaning), write it into report.json
/// under that key, return it from the CLI's ReportMetrics.value for a threshold, and describe it in
/// docs/report-format.md and scenarios/README.md.
public enum MetricCatalog {
    /// The latency kinds of `latency.<kind>.<statistic>`: threshold name, recorder kind and origin, report.json
    /// key (`latency_ms.<key>`), what produces it.
    public struct LatencyEntry: Sendable {
        public let name: String
        public let kind: LatencyKind
        public let origin: LatencyOrigin
        public let report: String
        public let source: MetricSource
        public let meaning: String
    }

    public static let latencies: [LatencyEntry] = [
        LatencyEntry(name: "tcp_connect", kind: .tcpConnect, origin: .sent, report: "tcp_connect", source: .always,
                     meaning: "TCP connect started to connection established"),
        LatencyEntry(name: "tls_handshake", kind: .tlsHandshake, origin: .sent, report: "tls_handshake", source: .needs(.tls),
                     meaning: "TLS handshake started to finished"),
        LatencyEntry(name: "ws_upgrade", kind: .wsUpgrade, origin: .sent, report: "ws_upgrade", source: .needs(.webSocket),
                     meaning: "WebSocket upgrade request sent to 101 received"),
        LatencyEntry(name: "connack", kind: .connect, origin: .sent, report: "connect", source: .always,
                     meaning: "CONNECT sent to CONNACK received"),
        LatencyEntry(name: "suback", kind: .subscribe, origin: .sent, report: "subscribe", source: .needs(.subscribes),
                     meaning: "SUBSCRIBE sent to SUBACK received"),
        LatencyEntry(name: "unsuback", kind: .unsubscribe, origin: .sent, report: "unsubscribe",
                     source: .never("fleetbench never unsubscribes"), meaning: "UNSUBSCRIBE sent to UNSUBACK received"),
        LatencyEntry(name: "puback", kind: .puback, origin: .intended, report: "puback", source: .needs(.qos1Publishes),
                     meaning: "QoS 1 PUBLISH intended send to PUBACK received"),
        LatencyEntry(name: "pubrec", kind: .pubrec, origin: .intended, report: "pubrec", source: .needs(.qos2Publishes),
                     meaning: "QoS 2 PUBLISH intended send to PUBREC received"),
        LatencyEntry(name: "pubcomp", kind: .pubcomp, origin: .intended, report: "pubcomp", source: .needs(.qos2Publishes),
                     meaning: "QoS 2 PUBLISH intended send to PUBCOMP received"),
        LatencyEntry(name: "pingresp", kind: .pingresp, origin: .sent, report: "pingresp", source: .needs(.keepAlive),
                     meaning: "PINGREQ sent to PINGRESP received"),
        LatencyEntry(name: "end_to_end", kind: .endToEnd, origin: .intended, report: "end_to_end", source: .needs(.deliveries),
                     meaning: "intended send to receipt at a subscriber"),
        LatencyEntry(name: "end_to_end_actual", kind: .endToEnd, origin: .sent, report: "end_to_end.from_sent",
                     source: .needs(.deliveries), meaning: "actual send to receipt at a subscriber"),
        LatencyEntry(name: "request_response", kind: .requestResponse, origin: .intended, report: "request_response",
                     source: .needs(.requests), meaning: "request's intended send to its response received"),
        LatencyEntry(name: "schedule_lag", kind: .scheduleLag, origin: .intended, report: "schedule_lag",
                     source: .needs(.publishes), meaning: "how late a message left compared with its schedule"),
        LatencyEntry(name: "puback_broker", kind: .pubackBrokerSide, origin: .sent, report: "puback_broker",
                     source: .needs(.network),
                     meaning: "QoS 1 PUBLISH leaving the vehicle's emulated link to its PUBACK reaching it: puback without the emulated delays"),
        LatencyEntry(name: "end_to_end_broker", kind: .endToEndBrokerSide, origin: .sent, report: "end_to_end_broker",
                     source: .needs(.network),
                     meaning: "a message leaving the publisher's emulated link to reaching the subscriber's: end_to_end without the emulated delays"),
    ]

    /// The statistics of every latency kind, in report.json's order.
    public static let latencyStatistics = ["count", "min", "mean", "p50", "p90", "p99", "p999", "max"]

    /// Every metric. One line per metric; `perQoS` repeats a line for qos0, qos1 and qos2 (`{q}` in the path).
    public static let all: [Metric] = latencyMetrics + [
        // Connections.
        Metric("connections.attempted", .number, report: "connections.attempted", "connection attempts, reconnects included"),
        Metric("connections.succeeded", .number, report: "connections.succeeded", "attempts that reached a successful CONNACK"),
        Metric("connections.failed", .number, report: "connections.failed", "attempts that did not"),
        Metric("connections.failed_ratio", .ratio, report: nil, "failed ÷ attempted"),
        Metric("connections.reconnects", .number, report: "connections.reconnects", "attempts after a lost connection"),
        Metric("connections.peak_connected", .number, report: "connections.peak_connected", "most clients connected at once"),
        Metric("connections.disconnects", .number, report: nil, "ends of established connections, every reason"),
        Metric("connections.never_connected", .number, report: "connections.never_connected",
               "clients no CONNACK accepted during the whole run (such a client fails the run unless a threshold on connections.* accepts it)"),
        Metric("connections.retransmitted", .number, report: "connections.retransmitted",
               "connects that reached CONNACK only after a SYN or the CONNECT was sent again (a full listen queue)"),
        Metric("connections.window_decreases", .number, report: "connections.window_decreases",
               "times a lane halved its bound of connects in flight to a broker address"),
        Metric("connections.churn_skipped", .number, report: "connections.churn_skipped",
               "churn disconnects that found no connected client of the fleet on their lane (nothing to disconnect)"),
        Metric("connections.transport_errors", .number, report: "connections.transport_errors",
               "TLS and WebSocket failures (handshake, certificate, upgrade, framing), connect failures and lost connections alike"),
        Metric("connections.transport_errors_by_reason", .text, report: "connections.transport_errors_by_reason",
               "the transport errors by their reason text (OpenSSL's, the HTTP status line), most frequent first"),
        Metric("connections.failed_by_reason.*", .number, report: "connections.failed_by_reason.*", threshold: false,
               "failed attempts by reason"),
        Metric("connections.disconnects_by_reason.*", .number, report: "connections.disconnects_by_reason.*", threshold: false,
               "ends of established connections by reason"),
    ] + perQoS { q in [
        // Messages.
        Metric("messages.qos\(q).published", .number, report: "messages.qos\(q).published", "PUBLISH packets sent at this QoS"),
        Metric("messages.qos\(q).received", .number, report: "messages.qos\(q).received",
               "this run's messages received at this QoS, duplicates included (not delivery.foreign or delivery.retained_on_subscribe)"),
        Metric("messages.qos\(q).arrived", .number, report: "messages.qos\(q).arrived",
               "every PUBLISH received at this QoS, whoever sent it: received plus other runs' messages and retained leftovers"),
    ] } + [
        Metric("messages.qos1.acked", .number, report: "messages.qos1.acked", .needs(.qos1Publishes), "PUBACKs received"),
        Metric("messages.qos2.acked", .number, report: "messages.qos2.acked", .needs(.qos2Publishes), "PUBCOMPs received"),
        Metric("messages.qos0.acked", .number, report: nil, .never("QoS 0 publishes are never acknowledged"),
               "(no such count)"),
        Metric("messages.qos1.unacked_at_end", .number, report: "messages.qos1.unacked_at_end", .needs(.qos1Publishes),
               "QoS 1 publishes still awaiting PUBACK within their deadline when the end-of-run drain ended"),
        Metric("messages.qos2.unacked_at_end", .number, report: "messages.qos2.unacked_at_end", .needs(.qos2Publishes),
               "QoS 2 publishes still awaiting PUBREC or PUBCOMP within their deadline when the end-of-run drain ended"),
        Metric("messages.bytes_in", .number, report: "messages.bytes_in", "bytes read from brokers"),
        Metric("messages.bytes_out", .number, report: "messages.bytes_out", "bytes written to brokers"),
    ] + perQoS { q in [
        // Delivery accounting of the streams published at this QoS.
        Metric("delivery.qos\(q).expected", .number, report: "delivery.qos\(q).expected",
               "messages published while a subscriber was entitled to them (subscribed, or its persistent session lived)"),
        Metric("delivery.qos\(q).received", .number, report: "delivery.qos\(q).received", "arrivals, duplicates included"),
        Metric("delivery.qos\(q).unique", .number, report: "delivery.qos\(q).unique", "distinct messages received"),
        Metric("delivery.qos\(q).lost", .number, report: "delivery.qos\(q).lost", "owed (expected) but never received"),
        Metric("delivery.qos\(q).duplicated", .number, report: "delivery.qos\(q).duplicated", "arrivals of a message already received"),
        Metric("delivery.qos\(q).reordered", .number, report: "delivery.qos\(q).reordered", "arrivals below the highest sequence seen"),
        Metric("delivery.qos\(q).unexpected", .number, report: "delivery.qos\(q).unexpected", "more distinct messages than were owed"),
        Metric("delivery.qos\(q).missed_while_offline", .number, report: "delivery.qos\(q).missed_while_offline",
               "published while the subscriber was not entitled (not yet subscribed, offline without a persistent session)"),
        Metric("delivery.qos\(q).untracked", .number, report: "delivery.qos\(q).untracked",
               "arrivals past the tracker's range limit: received, never counted lost"),
        Metric("delivery.qos\(q).rejected", .number, report: "delivery.qos\(q).rejected", "arrivals with a negative stream index"),
        Metric("delivery.qos\(q).loss_ratio", .ratio, report: nil, "lost ÷ expected"),
    ] } + [
        // Arrivals outside the per-stream accounting, and the per-QoS figures summed.
        Metric("delivery.foreign", .number, report: "delivery.foreign",
               "arrivals that are not this run's: no fleetbench header, or another run id"),
        Metric("delivery.retained_on_subscribe", .number, report: "delivery.retained_on_subscribe",
               "retained messages a broker handed over on subscribe (outside the accounting and latencies)"),
        Metric("delivery.missed_while_offline", .number, report: nil, "delivery.qosN.missed_while_offline over every QoS"),
        Metric("delivery.untracked", .number, report: nil, "delivery.qosN.untracked over every QoS"),
    ] + AckKind.allCases.map { kind in
        // Ack timeouts.
        Metric("ack_timeouts.\(kind.reportName)", .number, report: "ack_timeouts.\(kind.reportName)",
               kind == .unsuback ? .never("fleetbench never unsubscribes") : .always,
               "\(kind.reportName.uppercased()) not received before its deadline")
    } + [
        Metric("ack_timeouts.total", .number, report: "ack_timeouts.total", "every ack timeout"),
        // What the broker granted below what was asked.
        Metric("downgrades.subscription_qos", .number, report: "downgrades.subscription_qos", .needs(.subscribes),
               "SUBACK filters granted a lower QoS than asked"),
        Metric("downgrades.subscription_refused", .number, report: "downgrades.subscription_refused", .needs(.subscribes),
               "SUBACK filters refused (failure code 0x80 or above)"),
        Metric("downgrades.qos2_acked_as_qos1", .number, report: "downgrades.qos2_acked_as_qos1", .needs(.qos2Publishes),
               "QoS 2 messages answered with PUBACK (the broker ran them as QoS 1)"),
        Metric("ack_timeouts.timeouts_s.*", .time, report: "ack_timeouts.timeouts_s.*", threshold: false,
               "the deadline used for each ack kind (s)"),
        // Rates.
        Metric("rates.published", .number, report: nil, .needs(.publishes), "messages published per second of the publishing phase"),
        Metric("rates.received", .number, report: nil, .needs(.publishes),
               "this run's messages received per second of the publishing phase (messages.qosN.received)"),
        Metric("rates.arrived", .number, report: nil, .needs(.subscribes),
               "PUBLISH packets arrived per second of the publishing phase, other runs' and retained ones included (messages.qosN.arrived)"),
        // Requests.
        Metric("requests.sent", .number, report: "requests.sent", "requests published"),
        Metric("requests.answered", .number, report: "requests.answered", "responses received to them"),
        Metric("requests.timed_out", .number, report: "requests.timed_out",
               "requests without a response by the end of the run, plus responses later than the request's timeout"),
        Metric("requests.late", .number, report: "requests.late",
               "responses later than the request's timeout (counted in timed_out too)"),
        Metric("requests.responder_answered", .number, report: "requests.responder_answered",
               "requests a responder fleet answered"),
        Metric("requests.responder_unanswered", .number, report: "requests.responder_unanswered",
               "requests a responder fleet received but could not answer (no response topic, its window full, its connection closed)"),
        // Offline store-and-forward (publish streams with `offline`).
        Metric("offline.buffered", .number, report: "offline.buffered", .needs(.publishes),
               "messages that came due while their client was offline (streams with an offline buffer)"),
        Metric("offline.flushed", .number, report: "offline.flushed", .needs(.publishes),
               "buffered messages sent after the reconnect"),
        Metric("offline.overflowed", .number, report: "offline.overflowed", .needs(.publishes),
               "buffered messages lost to a full buffer (never published, owed to no subscriber)"),
        // Emulated network conditions, over every fleet with a `network` key (per fleet: report.json `network`).
        Metric("network.stalls", .number, report: nil, .needs(.network),
               "sends that stalled one retransmission timeout (emulated bursty loss)"),
        Metric("network.drops", .number, report: nil, .needs(.network), "emulated link drops that ended a connection"),
        Metric("network.outages", .number, report: nil, .needs(.network), "emulated outages that cut a connection"),
        // The generator's own health.
        Metric("generator.schedule_lag_p50", .time, report: "generator.schedule_lag_ms.p50", "median schedule lag"),
        Metric("generator.schedule_lag_p99", .time, report: "generator.schedule_lag_ms.p99", "schedule lag, 99th percentile"),
        Metric("generator.schedule_lag_max", .time, report: "generator.schedule_lag_ms.max", "largest schedule lag"),
        Metric("generator.dropped", .number, report: "generator.dropped_slots",
               "scheduled publishes skipped because the client could not send in time"),
        Metric("generator.unsent_at_end", .number, report: "generator.unsent_at_end", .needs(.publishes),
               "schedule slots due by the end of publishing but never sent (window or socket full, client offline)"),
        Metric("generator.abandoned_publishes", .number, report: "generator.abandoned_publishes",
               "QoS 1/2 publishes given up when a reconnect found the session gone"),
        Metric("generator.drain_s", .time, report: "generator.drain_s", threshold: false,
               "how long the end-of-run drain lasted (s)"),
        Metric("generator.drain_limit_s", .time, report: "generator.drain_limit_s", threshold: false,
               "the scenario's drain: the longest the end-of-run drain may last (s)"),
        Metric("generator.foreign_messages", .number, report: "generator.foreign_messages",
               "the same as delivery.foreign: messages without a fleetbench header or with another run's id"),
        Metric("generator.receive_coalescing_pauses", .number, report: "generator.receive_coalescing_pauses",
               "times a lane paused between reads under heavy receive load"),
        Metric("generator.receive_batching_pauses", .number, report: "generator.receive_batching_pauses",
               "times a lane waited after a turn to read a steady receive stream in batches"),
        Metric("generator.rcvlowat_fallbacks", .number, report: "generator.rcvlowat_fallbacks",
               "connections whose broker held acks back below a raised SO_RCVLOWAT (Nagle's algorithm on), read at every byte from then on until re-armed"),
        Metric("generator.rcvlowat_rearms", .number, report: "generator.rcvlowat_rearms",
               "times the SO_RCVLOWAT batching of acks was tried again after a fallback"),
        Metric("generator.cpu_s", .time, report: "generator.cpu_s", threshold: false, "CPU time of the fleetbench process (s)"),
        Metric("generator.peak_rss_bytes", .number, report: "generator.peak_rss_bytes", threshold: false,
               "peak resident memory of the fleetbench process"),
        Metric("generator.lanes", .number, report: "generator.lanes", threshold: false, "event-loop lanes"),
        Metric("generator.receive_coalescing_us", .number, report: "generator.receive_coalescing_us", threshold: false,
               "the receive coalescing setting (µs)"),
        Metric("generator.receive_batching_us", .number, report: "generator.receive_batching_us", threshold: false,
               "the receive batching setting (µs)"),
        Metric("generator.saturated", .text, report: "generator.saturated", "whether the generator limited the run"),
        Metric("generator.saturation_reasons", .text, report: "generator.saturation_reasons", "why"),
        Metric("generator.send_path", .text, report: "generator.send_path", "io_uring, send or io_uring+send"),
        Metric("generator.io_uring_unavailable", .text, report: "generator.io_uring_unavailable", "why io_uring was not used"),
        Metric("generator.receive_path", .text, report: "generator.receive_path", "epoll+recv, io_uring or io_uring+epoll"),
        Metric("generator.receive_ring_unavailable", .text, report: "generator.receive_ring_unavailable",
               "why io_uring receives were not used"),
        Metric("generator.source_addresses", .text, report: "generator.source_addresses", "local addresses clients bound to"),
        Metric("generator.closed_model_streams", .text, report: "generator.closed_model_streams",
               "streams that ran closed-model ({\"type\": \"max\"}): latency from the actual send, no schedule lag"),
    ]

    /// `latency.<kind>.<statistic>` for every kind and statistic, plus report.json's own keys of each kind.
    static var latencyMetrics: [Metric] {
        var metrics: [Metric] = []
        for entry in latencies {
            for statistic in latencyStatistics {
                metrics.append(Metric("latency.\(entry.name).\(statistic)", statistic == "count" ? .number : .time,
                                      report: "latency_ms.\(entry.report).\(statistic)", entry.source,
                                      "\(entry.meaning): \(statistic == "count" ? "samples" : statistic)"))
            }
            for clamped in ["clamped_low", "clamped_high"] {
                metrics.append(Metric("latency.\(entry.name).\(clamped)", .number,
                                      report: "latency_ms.\(entry.report).\(clamped)", entry.source, threshold: false,
                                      "\(entry.meaning): " + Self.clampedMeaning(clamped)))
            }
            if entry.origin == .sent && entry.report.hasSuffix(".from_sent") { continue }
            metrics.append(Metric("latency.\(entry.name).origin", .text, report: "latency_ms.\(entry.report).origin",
                                  entry.source, "what the figures are measured from: intended or sent"))
            metrics.append(Metric("latency.\(entry.name).hdr", .text, report: "latency_ms.\(entry.report).hdr",
                                  entry.source, "the histogram, HdrHistogram V2 compressed, base64"))
            // Schedule lag has no actual-send twin (it is the gap between the two).
            let hasActualTwin = entry.origin == .intended && entry.kind != .scheduleLag
            if hasActualTwin, !latencies.contains(where: { $0.report == entry.report + ".from_sent" }) {
                // The actual-send-time twin report.json writes beside the headline; end_to_end has its own entry
                // (end_to_end_actual), the others are in the report only.
                for statistic in latencyStatistics {
                    metrics.append(Metric("latency.\(entry.name).from_sent.\(statistic)", statistic == "count" ? .number : .time,
                                          report: "latency_ms.\(entry.report).from_sent.\(statistic)", entry.source,
                                          threshold: false, "\(entry.meaning), from the actual send: \(statistic)"))
                }
                for clamped in ["clamped_low", "clamped_high"] {
                    metrics.append(Metric("latency.\(entry.name).from_sent.\(clamped)", .number,
                                          report: "latency_ms.\(entry.report).from_sent.\(clamped)", entry.source,
                                          threshold: false, "\(entry.meaning), from the actual send: " + Self.clampedMeaning(clamped)))
                }
            }
            if hasActualTwin {
                metrics.append(Metric("latency.\(entry.name).from_sent.hdr", .text,
                                      report: "latency_ms.\(entry.report).from_sent.hdr", entry.source,
                                      "the actual-send-time histogram"))
            }
        }
        return metrics
    }

    static func perQoS(_ lines: (Int) -> [Metric]) -> [Metric] { (0...2).flatMap(lines) }

    static func clampedMeaning(_ key: String) -> String {
        key == "clamped_low"
            ? "samples that came out negative, recorded as 0"
            : "samples beyond the histogram's range (1 h), recorded as its maximum"
    }

    /// The metric a threshold may name at `path`, if any.
    public static func metric(_ path: String) -> Metric? { byPath[path] }

    private static let byPath: [String: Metric] = {
        var table: [String: Metric] = [:]
        for metric in all { table[metric.path] = metric }
        return table
    }()

    /// The catalog entry holding a report.json key (dotted, `fleets[]` already stripped), if any.
    public static func metric(reportKey key: String) -> Metric? {
        if let exact = byReport[key] { return exact }
        let parts = key.split(separator: ".", omittingEmptySubsequences: false)
        return all.first { metric in
            guard let pattern = metric.report?.split(separator: ".", omittingEmptySubsequences: false),
                  pattern.count == parts.count else { return false }
            return zip(pattern, parts).allSatisfy { $0 == "*" || $0 == $1 }
        }
    }

    private static let byReport: [String: Metric] = {
        var table: [String: Metric] = [:]
        for metric in all { if let report = metric.report, !report.contains("*") { table[report] = metric } }
        return table
    }()

    /// The unit of a metric path (nil when there is no such metric).
    public static func unit(of path: String) -> MetricUnit? { byPath[path]?.unit }

    /// The latency entry of a threshold kind name (`connack`, `end_to_end_actual`, ...).
    public static func latency(named name: String) -> LatencyEntry? { latencies.first { $0.name == name } }

    /// The threshold path of a latency statistic from a report kind (`connect`, `p99` → `latency.connack.p99`).
    public static func latencyPath(kind: LatencyKind, origin: LatencyOrigin, statistic: String) -> String {
        let entry = latencies.first { $0.kind == kind && $0.origin == origin } ?? latencies.first { $0.kind == kind }
        return "latency.\(entry?.name ?? kind.reportName).\(statistic)"
    }

    /// Families (first path component) in catalog order.
    public static let families: [String] = {
        var seen: [String] = []
        for metric in all {
            let family = String(metric.path.prefix { $0 != "." })
            if !seen.contains(family) { seen.append(family) }
        }
        return seen
    }()
}

extension MetricSource {
    /// False for `.never`: no run produces the metric.
    public var producible: Bool {
        if case .never = self { return false }
        return true
    }
}
