import Foundation
import FleetMetrics
import Synchronization
import MQTTCodec

/// The latest figures of a running run, for the progress line and the Prometheus endpoint. Written once a
/// second by the engine's snapshot callback, read by the progress printer and HTTP scrapes (a lock, off the
/// per-message path).
struct LiveStatus: Sendable {
    var elapsedSeconds: Double = 0
    var totalSeconds: Double = 0
    var connected = 0
    var targetClients = 0
    var counters = ClientCounters()
    /// Rates over the last second.
    var publishedPerSecond: Double = 0
    var receivedPerSecond: Double = 0
    /// Every PUBLISH received, other runs' and retained ones included (`messages.qosN.arrived`).
    var arrivedPerSecond: Double = 0
    /// Running totals of the previous snapshot, for the rates.
    var lastPublished: UInt64 = 0
    var lastReceived: UInt64 = 0
    var lastArrived: UInt64 = 0
    /// End-to-end latency of the last second (ms, from the intended send time).
    var endToEndP50Ms: Double?
    var endToEndP99Ms: Double?
}

final class LiveStatusBox: Sendable {
    private let status = Mutex(LiveStatus())

    func update(_ change: (inout LiveStatus) -> Void) {
        status.withLock { change(&$0) }
    }

    var current: LiveStatus { status.withLock { $0 } }
}

/// Prometheus text exposition format (version 0.0.4) of the live status.
enum PrometheusText {
    /// `runID` (16 hex digits) and `segment` ("K/N", "0/1" for a run that is not segmented) label every sample, so a
    /// Prometheus scraping the N segments of one run on N machines or pods can sum them per run or show them per segment.
    static func render(_ status: LiveStatus, scenario: String, runID: String, segment: String) -> String {
        var lines: [String] = []
        let label = "scenario=\"\(escape(scenario))\",run_id=\"\(escape(runID))\",segment=\"\(escape(segment))\""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, Double)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in samples {
                let all = labels.isEmpty ? label : label + "," + labels
                lines.append("\(name){\(all)} \(format(value))")
            }
        }
        let counters = status.counters
        metric("fleetbench_elapsed_seconds", "gauge", "Seconds since the run started.", [("", status.elapsedSeconds)])
        metric("fleetbench_clients_connected", "gauge", "Simulated clients connected now.", [("", Double(status.connected))])
        metric("fleetbench_clients_target", "gauge", "Simulated clients in the scenario.", [("", Double(status.targetClients))])
        metric("fleetbench_connects_total", "counter", "Connection attempts by outcome.", [
            ("outcome=\"attempted\"", Double(counters.connectsAttempted)),
            ("outcome=\"succeeded\"", Double(counters.connectsSucceeded)),
            ("outcome=\"failed\"", Double(counters.connectsFailed)),
        ])
        metric("fleetbench_connect_failures_total", "counter", "Failed connection attempts by reason.",
               counters.connectFailures.map { ("reason=\"\(escape($0.key.reportName))\"", Double($0.value)) }
                   .sorted { $0.0 < $1.0 })
        metric("fleetbench_reconnects_total", "counter", "Reconnections after a lost connection.",
               [("", Double(counters.reconnects))])
        for (name, values, help) in [
            ("fleetbench_messages_published_total", counters.published, "Messages published, by QoS."),
            ("fleetbench_messages_acked_total", counters.acked, "QoS 1/2 messages acknowledged (PUBACK/PUBCOMP), by QoS."),
            ("fleetbench_messages_received_total", counters.received, "This run's messages received, by QoS."),
            ("fleetbench_messages_arrived_total", counters.arrived,
             "Every PUBLISH received, other runs' and retained ones included, by QoS."),
        ] {
            metric(name, "counter", help, MQTTQoS.allCases.map { ("qos=\"\($0.rawValue)\"", Double(values[$0])) })
        }
        metric("fleetbench_ack_timeouts_total", "counter", "Acknowledgements not received before their deadline, by kind.",
               AckKind.allCases.map { ("kind=\"\($0.reportName)\"", Double(counters.ackTimeouts[$0])) })
        metric("fleetbench_bytes_total", "counter", "Bytes on the wire, by direction.", [
            ("direction=\"in\"", Double(counters.bytesIn)), ("direction=\"out\"", Double(counters.bytesOut)),
        ])
        var latency: [(String, Double)] = []
        if let p50 = status.endToEndP50Ms { latency.append(("quantile=\"0.5\"", p50 / 1000)) }
        if let p99 = status.endToEndP99Ms { latency.append(("quantile=\"0.99\"", p99 / 1000)) }
        metric("fleetbench_end_to_end_latency_seconds", "gauge",
               "End-to-end latency of the last second from the intended send time.", latency)
        return lines.joined(separator: "\n") + "\n"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    static func format(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
