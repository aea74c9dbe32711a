import FleetMetrics
import FleetReports
import MQTTCodec

/// The metric paths of thresholds (`latency.end_to_end.p99`, `delivery.qos1.lost`, ...; every threshold entry of
/// MetricCatalog) looked up in a report: the one `run` has just filled from its result, or the one `merge` made of
/// segments, so a threshold reads exactly what report.json says. Time values are in nanoseconds (thresholds compare
/// in nanoseconds); nil when the run did not produce the metric (a threshold on it then fails).
struct ReportMetrics {
    let report: RunReport

    func value(_ path: String) -> Double? {
        let parts = path.split(separator: ".").map(String.init)
        guard parts.count >= 2 else { return nil }
        switch parts[0] {
        case "latency":
            guard parts.count == 3, let entry = MetricCatalog.latency(named: parts[1]) else { return nil }
            let histogram = report.latency.histogram(entry.kind, from: entry.origin)
            guard histogram.totalCount > 0 else { return parts[2] == "count" ? 0 : nil }
            let microseconds: Double
            switch parts[2] {
            case "count": return Double(histogram.totalCount)
            case "min": microseconds = Double(histogram.min)
            case "max": microseconds = Double(histogram.max)
            case "mean": microseconds = histogram.mean
            case "p50": microseconds = Double(histogram.valueAtPercentile(50))
            case "p90": microseconds = Double(histogram.valueAtPercentile(90))
            case "p99": microseconds = Double(histogram.valueAtPercentile(99))
            case "p999": microseconds = Double(histogram.valueAtPercentile(99.9))
            default: return nil
            }
            return microseconds * 1000
        case "delivery":
            let all = report.delivery.byQoS.levels
            if parts.count == 2 {
                switch parts[1] {
                case "foreign": return Double(report.delivery.foreign)
                case "retained_on_subscribe": return Double(report.delivery.retainedOnSubscribe)
                case "missed_while_offline": return Double(all.reduce(0) { $0 + $1.missedWhileOffline })
                case "untracked": return Double(all.reduce(0) { $0 + $1.untracked })
                default: return nil
                }
            }
            guard parts.count == 3, let qos = Self.qosIndex(parts[1]) else { return nil }
            let delivery = all[qos]
            switch parts[2] {
            case "lost": return Double(delivery.lost)
            case "duplicated": return Double(delivery.duplicated)
            case "reordered": return Double(delivery.reordered)
            case "received": return Double(delivery.received)
            case "expected": return Double(delivery.expected)
            case "unique": return Double(delivery.unique)
            case "unexpected": return Double(delivery.unexpected)
            case "rejected": return Double(delivery.rejected)
            case "loss_ratio": return delivery.expected == 0 ? 0 : Double(delivery.lost) / Double(delivery.expected)
            case "missed_while_offline": return Double(delivery.missedWhileOffline)
            case "untracked": return Double(delivery.untracked)
            default: return nil
            }
        case "messages":
            if parts[1] == "bytes_in" { return Double(report.messages.bytesIn) }
            if parts[1] == "bytes_out" { return Double(report.messages.bytesOut) }
            guard parts.count == 3, let qos = Self.qosIndex(parts[1]), let level = UInt8(exactly: qos).flatMap(MQTTQoS.init(rawValue:)) else { return nil }
            switch parts[2] {
            case "published": return Double(report.messages.published[level])
            case "acked": return qos == 0 ? nil : Double(report.messages.acked[level])
            case "received": return Double(report.messages.received[level])
            case "arrived": return Double(report.messages.arrived[level])
            case "unacked_at_end": return qos == 0 ? nil : Double(report.messages.unackedAtEnd[level])
            default: return nil
            }
        case "ack_timeouts":
            if parts[1] == "total" { return Double(report.ackTimeouts.total) }
            guard let kind = AckKind.allCases.first(where: { $0.reportName == parts[1] }) else { return nil }
            return Double(report.ackTimeouts[kind])
        case "connections":
            let connections = report.connections
            switch parts[1] {
            case "attempted": return Double(connections.attempted)
            case "succeeded": return Double(connections.succeeded)
            case "failed": return Double(connections.failed)
            case "failed_ratio": return connections.attempted == 0 ? 0 : Double(connections.failed) / Double(connections.attempted)
            case "reconnects": return Double(connections.reconnects)
            case "peak_connected": return Double(connections.peakConnected)
            case "disconnects": return Double(connections.disconnectsTotal)
            case "never_connected": return Double(connections.neverConnected)
            case "retransmitted": return Double(connections.retransmitted)
            case "window_decreases": return Double(connections.windowDecreases)
            case "churn_skipped": return Double(connections.churnSkipped)
            case "transport_errors": return Double(connections.transportErrorsTotal)
            default: return nil
            }
        case "downgrades":
            switch parts[1] {
            case "subscription_qos": return Double(report.downgrades.subscriptionQoS)
            case "subscription_refused": return Double(report.downgrades.subscriptionRefused)
            case "qos2_acked_as_qos1": return Double(report.downgrades.qos2AckedAsQoS1)
            default: return nil
            }
        case "generator":
            let lag = report.latency.histogram(.scheduleLag, from: .intended)
            switch parts[1] {
            case "schedule_lag_p50": return lag.totalCount == 0 ? 0 : Double(lag.valueAtPercentile(50)) * 1000
            case "schedule_lag_p99": return lag.totalCount == 0 ? 0 : Double(lag.valueAtPercentile(99)) * 1000
            case "schedule_lag_max": return lag.totalCount == 0 ? 0 : Double(lag.max) * 1000
            case "dropped": return Double(report.generator.droppedSlots)
            case "unsent_at_end": return Double(report.generator.unsentAtEnd)
            case "abandoned_publishes": return Double(report.generator.abandonedPublishes)
            case "foreign_messages": return Double(report.generator.foreignMessages)
            case "receive_coalescing_pauses": return Double(report.generator.receiveCoalescingPauses)
            case "receive_batching_pauses": return Double(report.generator.receiveBatchingPauses)
            case "rcvlowat_fallbacks": return Double(report.generator.lowWatermarkFallbacks)
            case "rcvlowat_rearms": return Double(report.generator.lowWatermarkRearms)
            default: return nil
            }
        case "rates":
            let seconds = report.run.rateSeconds
            guard seconds > 0 else { return nil }
            switch parts[1] {
            case "published": return Double(report.messages.published.total) / seconds
            case "received": return Double(report.messages.received.total) / seconds
            case "arrived": return Double(report.messages.arrived.total) / seconds
            default: return nil
            }
        case "offline":
            switch parts[1] {
            case "buffered": return Double(report.offline.buffered)
            case "flushed": return Double(report.offline.flushed)
            case "overflowed": return Double(report.offline.overflowed)
            default: return nil
            }
        case "network":
            switch parts[1] {
            case "stalls": return Double(report.network.reduce(0) { $0 &+ $1.stalls })
            case "drops": return Double(report.network.reduce(0) { $0 &+ $1.drops })
            case "outages": return Double(report.network.reduce(0) { $0 &+ $1.outages })
            default: return nil
            }
        case "requests":
            switch parts[1] {
            case "sent": return Double(report.requests.sent)
            case "answered": return Double(report.requests.answered)
            case "timed_out": return Double(report.requests.timedOut)
            case "late": return Double(report.requests.late)
            case "responder_answered": return Double(report.requests.responderAnswered)
            case "responder_unanswered": return Double(report.requests.responderUnanswered)
            default: return nil
            }
        default:
            return nil
        }
    }

    static func qosIndex(_ text: String) -> Int? {
        switch text {
        case "qos0": return 0
        case "qos1": return 1
        case "qos2": return 2
        default: return nil
        }
    }
}
