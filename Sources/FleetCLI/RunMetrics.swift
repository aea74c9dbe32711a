import FleetEngine
import FleetMetrics
import FleetReports

/// The metric paths of thresholds (`latency.end_to_end.p99`, `delivery.qos1.lost`, ...; every threshold entry of
/// MetricCatalog) looked up in a run's merged result. Time values are in nanoseconds (thresholds compare in nanoseconds); nil when the run did
/// not produce the metric (a threshold on it then fails).
struct RunMetrics {
    let result: EngineResult
    /// Seconds spent publishing, for rates.
    let publishSeconds: Double

    func value(_ path: String) -> Double? {
        let parts = path.split(separator: ".").map(String.init)
        guard parts.count >= 2 else { return nil }
        switch parts[0] {
        case "latency":
            guard parts.count == 3, let entry = MetricCatalog.latency(named: parts[1]) else { return nil }
            let histogram = result.latency.histogram(entry.kind, from: entry.origin)
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
            if parts.count == 2 {
                switch parts[1] {
                case "foreign": return Double(result.foreignMessages)
                case "retained_on_subscribe": return Double(result.retainedOnSubscribe)
                case "missed_while_offline": return Double(result.delivery.reduce(0) { $0 + $1.missedWhileOffline })
                case "untracked": return Double(result.delivery.reduce(0) { $0 + $1.untracked })
                default: return nil
                }
            }
            guard parts.count == 3, let qos = Self.qosIndex(parts[1]) else { return nil }
            let delivery = result.delivery[qos]
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
            if parts[1] == "bytes_in" { return Double(result.counters.bytesIn) }
            if parts[1] == "bytes_out" { return Double(result.counters.bytesOut) }
            guard parts.count == 3, let qos = Self.qosIndex(parts[1]), let level = QoSLevel(rawValue: qos) else { return nil }
            switch parts[2] {
            case "published": return Double(result.counters.published[level])
            case "acked": return qos == 0 ? nil : Double(result.counters.acked[level])
            case "received": return Double(result.counters.received[level])
            case "unacked_at_end": return qos == 0 ? nil : Double(result.unackedAtEnd[level])
            default: return nil
            }
        case "ack_timeouts":
            if parts[1] == "total" { return Double(result.counters.ackTimeouts.total) }
            guard let kind = AckKind.allCases.first(where: { $0.reportName == parts[1] }) else { return nil }
            return Double(result.counters.ackTimeouts[kind])
        case "connections":
            let counters = result.counters
            switch parts[1] {
            case "attempted": return Double(counters.connectsAttempted)
            case "succeeded": return Double(counters.connectsSucceeded)
            case "failed": return Double(counters.connectsFailed)
            case "failed_ratio":
                return counters.connectsAttempted == 0 ? 0 : Double(counters.connectsFailed) / Double(counters.connectsAttempted)
            case "reconnects": return Double(counters.reconnects)
            case "peak_connected": return Double(result.peakConnected)
            case "disconnects": return Double(counters.disconnectsTotal)
            case "never_connected": return Double(counters.neverConnected)
            default: return nil
            }
        case "downgrades":
            let counters = result.counters
            switch parts[1] {
            case "subscription_qos": return Double(counters.subscriptionsDowngraded)
            case "subscription_refused": return Double(counters.subscriptionsRefused)
            case "qos2_acked_as_qos1": return Double(counters.qos2AckedAsQoS1)
            default: return nil
            }
        case "generator":
            let lag = result.latency.histogram(.scheduleLag, from: .intended)
            switch parts[1] {
            case "schedule_lag_p50": return lag.totalCount == 0 ? 0 : Double(lag.valueAtPercentile(50)) * 1000
            case "schedule_lag_p99": return lag.totalCount == 0 ? 0 : Double(lag.valueAtPercentile(99)) * 1000
            case "schedule_lag_max": return lag.totalCount == 0 ? 0 : Double(lag.max) * 1000
            case "dropped": return Double(result.droppedSlots)
            case "unsent_at_end": return Double(result.unsentAtEnd)
            case "abandoned_publishes": return Double(result.abandonedPublishes)
            case "foreign_messages": return Double(result.foreignMessages)
            case "receive_coalescing_pauses": return Double(result.coalescingPauses)
            default: return nil
            }
        case "rates":
            guard publishSeconds > 0 else { return nil }
            switch parts[1] {
            case "published": return Double(result.counters.published.total) / publishSeconds
            case "received": return Double(result.counters.received.total) / publishSeconds
            default: return nil
            }
        case "requests":
            let requests = result.fleets.values.reduce(into: RequestSummary()) { $0.add(RunCommand.requests($1)) }
            switch parts[1] {
            case "sent": return Double(requests.sent)
            case "answered": return Double(requests.answered)
            case "timed_out": return Double(requests.timedOut)
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
