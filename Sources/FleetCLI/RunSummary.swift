import FleetMetrics
import FleetReports
import MQTTCodec

/// The table printed at the end of a run: the same numbers as report.json.
enum RunSummary {
    /// Ended connections by cause: the clients' own (end of run, churn), the links the scenario cut on purpose
    /// (tunnels, emulated drops and outages: expected, not errors) and errors, each with its reasons. Nil for none.
    static func disconnectsLine(_ reasons: [ReasonCount]) -> String? {
        guard !reasons.isEmpty else { return nil }
        var parts: [String] = []
        for (cause, title) in [(DisconnectReason.Cause.client, "by the client"), (.linkCut, "link cuts"), (.error, "errors")] {
            let these = reasons.filter { DisconnectReason.cause(ofReportName: $0.reason) == cause && $0.count > 0 }
            let total = these.reduce(0) { $0 &+ $1.count }
            guard total > 0 || cause == .error else { continue }
            parts.append("\(title) \(total)" + (these.isEmpty ? ""
                : " (" + these.map { "\($0.reason) \($0.count)" }.joined(separator: ", ") + ")"))
        }
        return "                disconnects: " + parts.joined(separator: "; ")
    }

    static func render(_ report: RunReport, directory: String?) -> String {
        var lines: [String] = []
        let verdict = report.run.interrupted ? "INTERRUPTED" : (report.passed ? "PASSED" : "FAILED")
        lines.append("")
        lines.append("\(report.scenario.name): \(verdict) after \(format(report.run.durationSeconds)) s")
        if let segments = report.segments {
            if let index = segments.index, !segments.deliveryFinal {
                lines.append("  segment       \(index)/\(segments.count): delivery across segments is final only after "
                    + "`fleetbench merge`; here, messages from other segments count as expected when they arrive")
            } else if segments.index == nil {
                var line = "  segments      \(segments.count) merged"
                if segments.unverifiedPairs > 0 {
                    line += "; \(segments.unverifiedPairs) subscriber-stream pairs across segments unverified (subscribed "
                        + "after the common start or cut before the end: what arrived counts as expected)"
                }
                lines.append(line)
            }
        }
        let connections = report.connections
        lines.append("  connections   attempted \(connections.attempted), succeeded \(connections.succeeded), "
            + "failed \(connections.failed), reconnects \(connections.reconnects), peak \(connections.peakConnected)")
        for failure in connections.failuresByReason {
            lines.append("                failed \(failure.reason)\(refusalMeaning(failure.reason)): \(failure.count)")
        }
        if let line = disconnectsLine(connections.disconnectsByReason) { lines.append(line) }
        if connections.retransmitted > 0 {
            lines.append("                retransmitted: \(connections.retransmitted) (a SYN or CONNECT sent again: the broker's "
                + "listen queue was full), bound per broker halved \(connections.windowDecreases) time\(connections.windowDecreases == 1 ? "" : "s")")
        }
        if connections.neverConnected > 0 {
            lines.append("                never connected: \(connections.neverConnected) client\(connections.neverConnected == 1 ? "" : "s")")
        }
        if connections.transportErrorsTotal > 0 {
            // The texts themselves are in report.json (`connections.transport_errors_by_reason`) and on stderr.
            lines.append("                transport errors: \(connections.transportErrorsTotal)"
                + perFleet(report) { $0.connections.transportErrorsTotal })
        }
        if connections.churnSkipped > 0 {
            lines.append("                churn skipped: \(connections.churnSkipped) (no connected client of the fleet on the lane)"
                + perFleet(report) { $0.connections.churnSkipped })
        }
        for level in MQTTQoS.allCases {
            let published = report.messages.published[level]
            let received = report.messages.received[level]
            let arrived = report.messages.arrived[level]
            guard published > 0 || arrived > 0 else { continue }
            let delivery = report.delivery[level]
            var line = "  qos\(level.rawValue)          published \(published)"
            if level != .atMostOnce {
                line += ", acked \(report.messages.acked[level]), unacked at end \(report.messages.unackedAtEnd[level])"
            }
            line += ", received \(received)"
            if arrived > received { line += ", arrived \(arrived)" }
            line += "; expected \(delivery.expected), lost \(delivery.lost), "
                + "duplicated \(delivery.duplicated), reordered \(delivery.reordered)"
            if delivery.missedWhileOffline > 0 { line += ", missed while offline \(delivery.missedWhileOffline)" }
            if delivery.untracked > 0 { line += ", untracked \(delivery.untracked)" }
            lines.append(line)
        }
        if report.delivery.foreign > 0 || report.delivery.retainedOnSubscribe > 0 {
            // The qos lines' `received` is this run's messages (messages.qosN.received); these are only in
            // `arrived` (messages.qosN.arrived).
            lines.append("  not counted   foreign \(report.delivery.foreign) (not this run's), "
                + "retained on subscribe \(report.delivery.retainedOnSubscribe); in arrived only, not in received, "
                + "expected, lost or duplicated")
        }
        let downgrades = report.downgrades
        if downgrades.total > 0 {
            var kinds: [String] = []
            if downgrades.subscriptionQoS > 0 { kinds.append("subscription_qos \(downgrades.subscriptionQoS)") }
            if downgrades.subscriptionRefused > 0 { kinds.append("subscription_refused \(downgrades.subscriptionRefused)") }
            if downgrades.qos2AckedAsQoS1 > 0 { kinds.append("qos2_acked_as_qos1 \(downgrades.qos2AckedAsQoS1)") }
            lines.append("  downgrades    " + kinds.joined(separator: ", ")
                + perFleet(report) { $0.downgrades.total })
        }
        if report.ackTimeouts.total > 0 {
            let kinds = AckKind.allCases.filter { report.ackTimeouts[$0] > 0 }
                .map { "\($0.reportName) \(report.ackTimeouts[$0])" }.joined(separator: ", ")
            lines.append("  ack timeouts  \(kinds)")
        }
        // A healthy drain adds well under a second; a long one is why a run lasted longer than its plan.
        if report.generator.drainSeconds >= 1 {
            lines.append("  drain         \(format(report.generator.drainSeconds)) s of at most "
                + "\(format(report.generator.drainLimitSeconds)) s after publishing stopped: acks and deliveries "
                + "still outstanding were waited for, on clients offline at the end until they reconnected")
        }
        if report.generator.unsentAtEnd > 0 || report.generator.droppedSlots > 0 {
            lines.append("  schedule      unsent at end \(report.generator.unsentAtEnd)"
                + perFleet(report) { $0.unsentAtEnd } + ", dropped \(report.generator.droppedSlots)"
                + perFleet(report) { $0.droppedSlots })
        }
        if report.offline.buffered > 0 {
            lines.append("  offline       buffered \(report.offline.buffered)" + perFleet(report) { $0.offline.buffered }
                + ", flushed \(report.offline.flushed)" + perFleet(report) { $0.offline.flushed }
                + ", overflowed \(report.offline.overflowed)" + perFleet(report) { $0.offline.overflowed })
        }
        if report.requests.sent > 0 || report.requests.responderAnswered > 0 || report.requests.responderUnanswered > 0 {
            lines.append("  requests      sent \(report.requests.sent), answered \(report.requests.answered), "
                + "timed out \(report.requests.timedOut)" + perFleet(report) { $0.requests.timedOut }
                + (report.requests.late > 0 ? ", of them late \(report.requests.late)" : "")
                + "; responders answered \(report.requests.responderAnswered), could not answer "
                + "\(report.requests.responderUnanswered)" + perFleet(report) { $0.requests.responderUnanswered })
        }
        if !report.generator.closedModelStreams.isEmpty {
            // Not open-model latency: a closed-model message waits for the window before it counts.
            lines.append("  closed model  \(report.generator.closedModelStreams.joined(separator: ", ")): as fast as the "
                + "window or socket allowed; latency from the actual send, not from a planned time")
        }
        if report.generator.abandonedPublishes > 0 {
            // Given up, not acknowledged and not timed out: the broker lost the session they were in flight in.
            lines.append("  abandoned     \(report.generator.abandonedPublishes) QoS 1/2 publishes in flight when a reconnect found the session gone")
        }
        for network in report.network {
            lines.append("  network       \(network.fleet): \(network.profile) on \(network.clients) clients (\(network.description))")
            lines.append("                stalls \(network.stalls), drops \(network.drops), outages \(network.outages) ("
                + format(network.outageSeconds) + " s), mean added delay up " + format(network.meanDelayUpMilliseconds)
                + " ms, down " + format(network.meanDelayDownMilliseconds) + " ms"
                + (network.heldForBandwidth > 0 ? ", publishing waited for bandwidth \(network.heldForBandwidth) times" : "")
                + (network.readPauses > 0 ? ", reading paused for the downlink \(network.readPauses) times" : ""))
        }
        lines.append("  latency (ms)  kind                 count      p50      p90      p99    p99.9      max")
        for kind in report.latency.kindsWithSamples {
            let origin: LatencyOrigin = [.puback, .pubrec, .pubcomp, .endToEnd, .requestResponse, .scheduleLag].contains(kind)
                ? .intended : .sent
            let histogram = report.latency.histogram(kind, from: origin)
            guard histogram.totalCount > 0 else { continue }
            func ms(_ percentile: Double) -> String { pad(format(Double(histogram.valueAtPercentile(percentile)) / 1000), 9) }
            lines.append("                " + kind.reportName.padding(toLength: 17, withPad: " ", startingAt: 0)
                + pad(String(histogram.totalCount), 9) + ms(50) + ms(90) + ms(99) + ms(99.9)
                + pad(format(Double(histogram.max) / 1000), 9))
        }
        // Samples the percentiles above cannot show (report.json latency_ms.<kind>[.from_sent].clamped_low/_high),
        // for every kind and both origins: printed only when some are non-zero.
        var clamped: [String] = []
        for kind in report.latency.kindsWithSamples {
            for origin in LatencyOrigin.allCases {
                let histogram = report.latency.histogram(kind, from: origin)
                guard histogram.clampedLowCount > 0 || histogram.clampedHighCount > 0 else { continue }
                var parts: [String] = []
                if histogram.clampedLowCount > 0 { parts.append("\(histogram.clampedLowCount) below 0 recorded as 0") }
                if histogram.clampedHighCount > 0 { parts.append("\(histogram.clampedHighCount) beyond 1 h recorded as 1 h") }
                clamped.append("\(kind.reportName) from \(origin == .intended ? "intended" : "sent") "
                    + parts.joined(separator: ", "))
            }
        }
        if !clamped.isEmpty { lines.append("  clamped       " + clamped.joined(separator: "; ")) }
        for threshold in report.thresholds {
            lines.append("  threshold     \(threshold.passed ? "pass" : "FAIL")  \(threshold.expression)"
                + (threshold.observed.map { "  (observed \(formatObserved($0, metric: threshold.metric)))" } ?? "  (not measured)"))
        }
        lines.append("  generator     cpu \(format(report.generator.cpuSeconds)) s, peak rss "
            + "\(report.generator.peakRSSBytes / 1_048_576) MiB, lanes \(report.generator.lanes)"
            + (report.generator.receiveCoalescingPauses > 0
                ? ", receive times up to \(report.generator.receiveCoalescingMicroseconds) µs late in turns reading at "
                    + "64,000 msg/s or more, bursts included "
                    + "(\(report.generator.receiveCoalescingPauses) pauses; --receive-coalescing 0 to read at once)"
                : "")
            + (report.generator.receiveBatchingPauses > 0
                ? ", steady receive streams read in batches: receive times up to "
                    + "\(report.generator.receiveBatchingMicroseconds) µs late (\(report.generator.receiveBatchingPauses) "
                    + "waits; --receive-coalescing 0 to read at once)"
                : "")
            + (report.generator.ioUringUnavailable.map { ", writes by send(2): io_uring unavailable (\($0))" } ?? "")
            + (report.generator.receiveRingUnavailable.map { ", reads by epoll + recv(2): io_uring receives not used (\($0))" } ?? "")
            + (report.generator.lowWatermarkFallbacks > 0
                ? ", ack batching fell back \(report.generator.lowWatermarkFallbacks) times (the broker held acks: "
                    + "Nagle's algorithm on), re-armed \(report.generator.lowWatermarkRearms)"
                : ""))
        if let directory { lines.append("  results       \(directory)") }
        return lines.joined(separator: "\n")
    }

    /// " (fleet-a 3, fleet-b 1)": the fleets with a non-zero share of a figure, when the report has fleets and
    /// the figure is not zero; empty otherwise.
    static func perFleet(_ report: RunReport, _ value: (FleetReport) -> UInt64) -> String {
        let shares = report.fleets.filter { value($0) > 0 }.map { "\($0.name) \(value($0))" }
        return shares.isEmpty ? "" : " (" + shares.joined(separator: ", ") + ")"
    }

    static func formatObserved(_ value: Double, metric: String) -> String {
        switch MetricCatalog.unit(of: metric) {
        case .time: return format(value / 1e6) + " ms"
        case .ratio: return format(value * 100) + " %"
        default: return format(value)
        }
    }

    static func format(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        let scaled = (value * 1000).rounded() / 1000
        return String(scaled)
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? " " + text : String(repeating: " ", count: width - text.count) + text
    }

    /// " (bad user name or password)" after `connack_refused_0x86`: what the CONNACK code means (3.1.1 codes are
    /// reported as their 5.0 equivalents); empty for other reasons.
    static func refusalMeaning(_ reason: String) -> String {
        let prefix = "connack_refused_0x"
        guard reason.hasPrefix(prefix), let byte = UInt8(reason.dropFirst(prefix.count), radix: 16),
              let code = MQTTReasonCode(rawValue: byte) else { return "" }
        return " (\(code.description))"
    }
}
