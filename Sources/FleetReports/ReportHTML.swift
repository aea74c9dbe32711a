import FleetJSON
import FleetMetrics
import Foundation
import MQTTCodec

/// report.html: one self-contained page (inline CSS and SVG; no scripts, fonts or anything fetched) that a person
/// reads first. Sections, each with a stable id: verdict, thresholds, timeline, latency, connections, delivery,
/// messages, generator, fleets (with more than one fleet), scenario, environment. Everything that comes from the
/// scenario or the network is HTML-escaped.
public enum ReportHTML {
    /// The section ids, in page order (fleets only when the report has more than one fleet).
    public static let sectionIDs = [
        "verdict", "thresholds", "timeline", "latency", "connections", "delivery", "messages", "generator", "fleets",
        "scenario", "environment",
    ]

    static let palette = ["#1f5fbf", "#c0392b", "#2e8b57", "#8e44ad", "#d35400", "#16a085", "#7f8c8d"]

    public static func render(_ report: RunReport) -> String {
        var page = HTML.pageStart(
            toolVersion: report.toolVersion,
            title: "fleetbench: \(HTML.escape(report.scenario.name)) \(report.passed ? "passed" : "FAILED")", css: css)
        page += verdict(report)
        page += thresholds(report)
        page += timeline(report)
        page += latency(report)
        page += connections(report)
        page += delivery(report)
        page += messages(report)
        page += generator(report)
        if report.fleets.count > 1 { page += fleets(report) }
        if !report.network.isEmpty { page += network(report) }
        page += scenario(report)
        page += environment(report)
        page += "<footer>Written by fleetbench \(HTML.escape(report.toolVersion)) · schema \(RunReport.schema)</footer>\n"
        page += "</main>\n</body>\n</html>\n"
        return page
    }

    // MARK: Sections

    static func verdict(_ report: RunReport) -> String {
        let failed = report.thresholds.filter { !$0.passed }.count
        var notes: [String] = []
        if report.run.interrupted { notes.append("The run was interrupted before its planned end.") }
        if let segments = report.segments {
            if let index = segments.index, !segments.deliveryFinal {
                notes.append("This is segment \(index)/\(segments.count) of a run: delivery across segments is final only "
                    + "after fleetbench merge; here, messages from other segments count as expected when they arrive.")
            } else if segments.index == nil {
                notes.append("Merged from \(segments.count) segments"
                    + (segments.unverifiedPairs > 0 ? "; \(segments.unverifiedPairs) subscriber-stream pairs across "
                        + "segments unverified (what arrived counts as expected)." : "."))
            }
        }
        if report.generator.saturated {
            let why = report.generator.saturationReasons.joined(separator: "; ")
            notes.append("The generator was saturated, so the broker may not be what limited this run"
                + (why.isEmpty ? "." : ": " + why))
        }
        if !report.generator.closedModelStreams.isEmpty {
            notes.append("Closed model: " + report.generator.closedModelStreams.joined(separator: ", ")
                + " published as fast as each client's in-flight window or socket allowed. Their latency counts "
                + "from the actual send, so it is not open-model latency (it leaves out the wait for the window).")
        }
        let e2e = report.latency.histogram(.endToEnd, from: .intended)
        var figures: [(String, String)] = [
            ("Duration", MetricFormat.decimal(report.run.durationSeconds, places: 1) + " s"),
            ("Peak connected", MetricFormat.grouped(report.connections.peakConnected)),
            ("Published", MetricFormat.grouped(report.messages.published.total)),
            ("Received", MetricFormat.grouped(report.messages.received.total)),
            ("Lost", MetricFormat.grouped(report.delivery.total.lost)),
            ("Ack timeouts", MetricFormat.grouped(report.ackTimeouts.total)),
        ]
        if report.messages.unackedAtEnd.total > 0 {
            figures.append(("Unacked at end", MetricFormat.grouped(report.messages.unackedAtEnd.total)))
        }
        if report.generator.unsentAtEnd > 0 {
            figures.append(("Unsent at end", MetricFormat.grouped(report.generator.unsentAtEnd)))
        }
        if report.offline.buffered > 0 {
            figures.append(("Buffered offline", MetricFormat.grouped(report.offline.buffered)))
            figures.append(("Flushed", MetricFormat.grouped(report.offline.flushed)))
            figures.append(("Overflowed", MetricFormat.grouped(report.offline.overflowed)))
        }
        if e2e.totalCount > 0 {
            figures.append(("End-to-end p99", ms(e2e.valueAtPercentile(99))))
        }
        if report.requests.sent > 0 {
            figures.append(("Requests answered", MetricFormat.grouped(report.requests.answered) + " of "
                + MetricFormat.grouped(report.requests.sent)))
            figures.append(("Requests timed out", MetricFormat.grouped(report.requests.timedOut)))
        }
        var html = "<header id=\"verdict\" class=\"verdict \(report.passed ? "pass" : "fail")\">\n"
        html += "<div class=\"badge\">\(report.passed ? "PASSED" : "FAILED")</div>\n"
        html += "<div class=\"headline\"><h1>\(HTML.escape(report.scenario.name))</h1>\n"
        html += "<p>\(HTML.escape(RunReport.rfc3339(report.run.startedAt))) · "
            + (report.thresholds.isEmpty
                ? "no thresholds"
                : "\(report.thresholds.count - failed) of \(report.thresholds.count) thresholds passed")
            + " · " + HTML.escape(report.brokers.joined(separator: ", "))
            + (report.brokerEmbedded ? " (embedded mosquitto)" : "") + "</p></div>\n"
        html += "</header>\n"
        for note in notes { html += "<p class=\"warning\">\(HTML.escape(note))</p>\n" }
        html += "<dl class=\"figures\">"
        for (name, value) in figures { html += "<div><dt>\(HTML.escape(name))</dt><dd>\(HTML.escape(value))</dd></div>" }
        html += "</dl>\n"
        return html
    }

    static func thresholds(_ report: RunReport) -> String {
        var html = "<section id=\"thresholds\">\n<h2>Thresholds</h2>\n"
        guard !report.thresholds.isEmpty else {
            return html + "<p class=\"muted\">The scenario sets no thresholds.</p>\n</section>\n"
        }
        html += "<table>\n<thead><tr><th>Threshold</th><th class=\"num\">Observed</th><th class=\"num\">Limit</th><th>Result</th></tr></thead>\n<tbody>\n"
        for threshold in report.thresholds {
            let observed = threshold.observed.map { MetricFormat.format($0, metric: threshold.metric) } ?? "not observed"
            let limit = threshold.limit.map { MetricFormat.format($0, metric: threshold.metric) } ?? ""
            html += "<tr class=\"\(threshold.passed ? "pass" : "fail")\"><td><code>\(HTML.escape(threshold.expression))</code>"
            if let detail = threshold.detail, !detail.isEmpty { html += "<div class=\"muted\">\(HTML.escape(detail))</div>" }
            html += "</td><td class=\"num\">\(HTML.escape(observed))</td><td class=\"num\">\(HTML.escape(limit))</td>"
            html += "<td class=\"result\">\(threshold.passed ? "✓ passed" : "✗ failed")</td></tr>\n"
        }
        return html + "</tbody>\n</table>\n</section>\n"
    }

    static func timeline(_ report: RunReport) -> String {
        var html = "<section id=\"timeline\">\n<h2>Over time</h2>\n"
        let points = downsampled(report.timeline, to: maximumChartPoints)
        guard !points.isEmpty else {
            return html + "<p class=\"muted\">No timeline was recorded for this run.</p>\n</section>\n"
        }
        let (publishRate, receiveRate) = messageRates(points)
        let lastT = Swift.max(points.last?.t ?? 1, 1)
        var charts = [
            LineChart(
                title: "Connected clients", xLabel: "seconds since start", yLabel: "clients",
                series: [ChartSeries(name: "connected", color: palette[0], points: points.map { ($0.t, Double($0.connected)) })]),
            LineChart(
                title: "Message rates", xLabel: "seconds since start", yLabel: "messages / s",
                series: [
                    ChartSeries(name: "published / s", color: palette[0], points: publishRate),
                    ChartSeries(name: "received / s", color: palette[2], points: receiveRate, dashed: true),
                ]),
            LineChart(
                title: "End-to-end latency", xLabel: "seconds since start", yLabel: "ms (from intended send time)",
                series: [
                    ChartSeries(name: "p50", color: palette[0], points: points.map { ($0.t, $0.endToEndP50Ms) }),
                    ChartSeries(name: "p99", color: palette[1], points: points.map { ($0.t, $0.endToEndP99Ms) }),
                ]),
        ]
        for index in charts.indices {
            charts[index].xRange = 0...lastT
            charts[index].height = 220
        }
        for chart in charts {
            html += "<figure><figcaption>\(HTML.escape(chart.title))</figcaption>\n\(chart.svg())\n</figure>\n"
        }
        let timeouts = points.filter { $0.ackTimeouts > 0 }
        if !timeouts.isEmpty {
            html += "<p>Ack timeouts occurred in \(timeouts.count) second\(timeouts.count == 1 ? "" : "s"), first at t = "
                + MetricFormat.decimal(timeouts[0].t, places: 1) + " s.</p>\n"
        }
        return html + "</section>\n"
    }

    static func latency(_ report: RunReport) -> String {
        var html = "<section id=\"latency\">\n<h2>Latency</h2>\n"
        let kinds = report.latency.kindsWithSamples
        guard !kinds.isEmpty else { return html + "<p class=\"muted\">No latency samples.</p>\n</section>\n" }
        html += "<p class=\"muted\">Milliseconds. End-to-end and ack latencies are measured from the time the "
            + "schedule intended the message to be sent (free of coordinated omission); the lighter rows measure "
            + "from the time it was actually sent.</p>\n"
        html += latencyTable(report.latency)
        html += "<div class=\"grid2\">\n"
        for kind in kinds {
            let intended = report.latency.histogram(kind, from: .intended)
            let sent = report.latency.histogram(kind, from: .sent)
            var series: [ChartSeries] = []
            var highest = 2.0
            if intended.totalCount > 0 {
                let (points, top) = percentileCurve(intended)
                highest = Swift.max(highest, top)
                series.append(ChartSeries(name: "from intended send time", color: palette[0], points: points))
            }
            if sent.totalCount > 0 {
                let (points, top) = percentileCurve(sent)
                highest = Swift.max(highest, top)
                let measuredOnly = intended.totalCount == 0
                series.append(ChartSeries(
                    name: measuredOnly ? "measured" : "from actual send time", color: palette[measuredOnly ? 0 : 1],
                    points: points, dashed: !measuredOnly))
            }
            let decades = Int(highest.rounded(.up))
            // The 100 % point sits at the right edge: log10 of 1/(1-1) is infinite.
            series = series.map { line in
                var line = line
                line.points = line.points.map { ($0.x.isFinite ? $0.x : Double(decades), $0.y) }
                return line
            }
            let chart = LineChart(
                title: "\(kind.reportName) latency by percentile", xLabel: "percentile", yLabel: "ms",
                series: series, xTicks: LineChart.percentileTicks(decades: decades),
                xRange: 0...Double(decades), width: 520, height: 270)
            html += "<figure><figcaption>\(HTML.escape(kind.reportName)) · percentile distribution</figcaption>\n"
                + chart.svg() + "\n</figure>\n"
        }
        return html + "</div>\n</section>\n"
    }

    /// Published and received messages per second at each timeline point, over the span since the point before.
    /// A last point that closes a stub of a second (the run's end, 11 ms after the last whole second, say) is
    /// merged into the point before: one message over 11 ms would draw as a spike to 90 msg/s at the end of
    /// every chart; merged, the counts are summed over the summed span, so the rate stays exact.
    static func messageRates(_ points: [TimelinePoint])
        -> (published: [(x: Double, y: Double?)], received: [(x: Double, y: Double?)]) {
        var spans: [(t: Double, span: Double, published: UInt64, received: UInt64)] = []
        var previous = 0.0
        for point in points {
            let span = point.t - previous > 0 ? point.t - previous : 1
            spans.append((point.t, span, point.published, point.received))
            previous = point.t
        }
        if spans.count >= 2, let last = spans.last, last.span < spans[spans.count - 2].span / 2 {
            let before = spans.removeLast()
            let merged = spans.removeLast()
            spans.append((before.t, merged.span + before.span, merged.published &+ before.published,
                          merged.received &+ before.received))
        }
        return (spans.map { ($0.t, Double($0.published) / $0.span) }, spans.map { ($0.t, Double($0.received) / $0.span) })
    }

    /// Timeline charts draw at most this many points, so a day-long soak still makes a small page.
    static let maximumChartPoints = 1200

    /// Merges runs of consecutive seconds so at most `limit` points remain: counts are summed (rates stay exact
    /// over the merged span), `connected` is the last value, p50 the mean of the medians and p99 the worst p99
    /// (a spike must stay visible).
    static func downsampled(_ points: [TimelinePoint], to limit: Int) -> [TimelinePoint] {
        guard points.count > limit, limit > 0 else { return points }
        let group = (points.count + limit - 1) / limit
        var result: [TimelinePoint] = []
        result.reserveCapacity(limit)
        var start = 0
        while start < points.count {
            let slice = points[start..<Swift.min(start + group, points.count)]
            let last = slice[slice.endIndex - 1]
            let medians = slice.compactMap(\.endToEndP50Ms)
            result.append(TimelinePoint(
                t: last.t, connected: last.connected, published: slice.reduce(0) { $0 &+ $1.published },
                received: slice.reduce(0) { $0 &+ $1.received },
                endToEndP50Ms: medians.isEmpty ? nil : medians.reduce(0, +) / Double(medians.count),
                endToEndP99Ms: slice.compactMap(\.endToEndP99Ms).max(),
                ackTimeouts: slice.reduce(0) { $0 &+ $1.ackTimeouts }))
            start += group
        }
        return result
    }

    /// The percentile distribution as (log-percentile x, ms y) and the highest finite x.
    static func percentileCurve(_ histogram: HDRHistogram) -> ([(x: Double, y: Double?)], Double) {
        var points: [(x: Double, y: Double?)] = []
        var highest = 0.0
        for point in histogram.percentileDistribution() {
            let x = LineChart.percentileX(point.percentile)
            if x.isFinite { highest = Swift.max(highest, x) }
            points.append((x, Double(point.value) / 1000))
        }
        return (points, highest)
    }

    static func latencyTable(_ latency: LatencyRecorder) -> String {
        var html = "<table>\n<thead><tr><th>Kind</th><th>From</th>"
        for statistic in RunReport.latencyStatistics { html += "<th class=\"num\">\(statistic)</th>" }
        // Samples the percentiles cannot show: negative ones recorded as 0 (report.json clamped_low) and ones
        // beyond the histogram's hour recorded as its maximum (clamped_high).
        html += "<th class=\"num\" title=\"samples that came out negative, recorded as 0\">clamped &lt; 0</th>"
            + "<th class=\"num\" title=\"samples beyond the histogram's range (1 h), recorded as its maximum\">clamped &gt; 1 h</th>"
        html += "</tr></thead>\n<tbody>\n"
        for kind in latency.kindsWithSamples {
            for origin in LatencyOrigin.allCases {
                let histogram = latency.histogram(kind, from: origin)
                guard histogram.totalCount > 0 else { continue }
                let summary = LatencySummary(histogram)
                let secondary = origin == .sent && latency.histogram(kind, from: .intended).totalCount > 0
                html += "<tr\(secondary ? " class=\"secondary\"" : "")><td>\(HTML.escape(kind.reportName))</td>"
                html += "<td>\(origin == .intended ? "intended" : "sent")</td>"
                html += "<td class=\"num\">\(MetricFormat.grouped(summary.count))</td>"
                for value in [summary.min, summary.mean, summary.p50, summary.p90, summary.p99, summary.p999, summary.max] {
                    html += "<td class=\"num\">\(MetricFormat.decimal(value, places: 3))</td>"
                }
                for clamped in [histogram.clampedLowCount, histogram.clampedHighCount] {
                    html += "<td class=\"num\(clamped > 0 ? " bad" : "")\">\(MetricFormat.grouped(clamped))</td>"
                }
                html += "</tr>\n"
            }
        }
        return html + "</tbody>\n</table>\n"
    }

    static func connections(_ report: RunReport) -> String {
        let summary = report.connections
        var html = "<section id=\"connections\">\n<h2>Connections, failures and ack timeouts</h2>\n<div class=\"columns\">\n"
        html += keyValueTable("Connections", [
            ("attempted", MetricFormat.grouped(summary.attempted)),
            ("succeeded", MetricFormat.grouped(summary.succeeded)),
            ("failed", MetricFormat.grouped(summary.failed)),
            ("reconnects", MetricFormat.grouped(summary.reconnects)),
            ("peak connected", MetricFormat.grouped(summary.peakConnected)),
        ])
        // Counts that are zero in a healthy run: any other value is highlighted.
        html += keyValueTable("Connection trouble", [
            ("never connected", MetricFormat.grouped(summary.neverConnected)),
            ("connects retransmitted", MetricFormat.grouped(summary.retransmitted)),
            ("connect window decreases", MetricFormat.grouped(summary.windowDecreases)),
            ("churn skipped", MetricFormat.grouped(summary.churnSkipped)),
        ], highlightNonZero: true)
        html += reasonTable("Connect failures by reason", summary.failuresByReason)
        html += reasonTable("Disconnects by reason", summary.disconnectsByReason)
        html += reasonTable("Transport errors by reason", summary.transportErrors, keepUnderscores: true)
        var timeouts: [(String, String)] = AckKind.allCases.map { kind in
            let limit = report.ackTimeoutSeconds[kind].map { " (after " + MetricFormat.decimal($0, places: 3) + " s)" } ?? ""
            return (kind.reportName + limit, MetricFormat.grouped(report.ackTimeouts[kind]))
        }
        timeouts.append(("total", MetricFormat.grouped(report.ackTimeouts.total)))
        html += keyValueTable("Ack timeouts", timeouts, highlightNonZero: true)
        html += keyValueTable("Granted less than asked", [
            ("subscriptions at a lower QoS", MetricFormat.grouped(report.downgrades.subscriptionQoS)),
            ("subscriptions refused", MetricFormat.grouped(report.downgrades.subscriptionRefused)),
            ("QoS 2 answered with PUBACK", MetricFormat.grouped(report.downgrades.qos2AckedAsQoS1)),
        ], highlightNonZero: true)
        let requests = report.requests
        if requests.sent > 0 || requests.responderAnswered > 0 || requests.responderUnanswered > 0 {
            html += keyValueTable("Requests and responses", [
                ("requests sent", MetricFormat.grouped(requests.sent)),
                ("answered", MetricFormat.grouped(requests.answered)),
                ("timed out", MetricFormat.grouped(requests.timedOut)),
                ("answered after the timeout", MetricFormat.grouped(requests.late)),
                ("responder answered", MetricFormat.grouped(requests.responderAnswered)),
                ("responder left unanswered", MetricFormat.grouped(requests.responderUnanswered)),
            ])
        }
        return html + "</div>\n</section>\n"
    }

    static func delivery(_ report: RunReport) -> String {
        var html = "<section id=\"delivery\">\n<h2>Delivery accounting</h2>\n"
        html += "<p class=\"muted\">Per publishing QoS, summed over every subscriber that should have received each stream. "
            + "Exact: every sequence number is tracked.</p>\n"
        html += deliveryTable(report.delivery)
        html += "<p class=\"muted\">Not this run's (no header or another run id): \(MetricFormat.grouped(report.delivery.foreign)); "
            + "retained messages delivered on subscribe: \(MetricFormat.grouped(report.delivery.retainedOnSubscribe)). "
            + "Both are in the messages' arrived count, not in received.</p>\n"
        return html + "</section>\n"
    }

    static func deliveryTable(_ delivery: DeliveryByQoS) -> String {
        let columns: [(String, (DeliveryCounts) -> UInt64)] = [
            ("expected", \.expected), ("received", \.received), ("unique", \.unique), ("lost", \.lost),
            ("duplicated", \.duplicated), ("reordered", \.reordered), ("unexpected", \.unexpected),
            ("untracked", \.untracked), ("missed offline", \.missedWhileOffline), ("rejected", \.rejected),
        ]
        var html = "<table>\n<thead><tr><th>QoS</th>"
        for column in columns { html += "<th class=\"num\">\(column.0)</th>" }
        html += "<th class=\"num\">loss</th></tr></thead>\n<tbody>\n"
        for qos in MQTTQoS.allCases {
            let counts = delivery[qos]
            html += "<tr><td>QoS \(qos.rawValue)</td>"
            for column in columns {
                let value = column.1(counts)
                let bad = value > 0 && ["lost", "duplicated", "unexpected", "rejected"].contains(column.0)
                html += "<td class=\"num\(bad ? " bad" : "")\">\(MetricFormat.grouped(value))</td>"
            }
            let ratio = counts.expected > 0 ? Double(counts.lost) / Double(counts.expected) * 100 : 0
            html += "<td class=\"num\">\(MetricFormat.decimal(ratio, places: 4)) %</td></tr>\n"
        }
        return html + "</tbody>\n</table>\n"
    }

    static func messages(_ report: RunReport) -> String {
        var html = "<section id=\"messages\">\n<h2>Messages</h2>\n"
        html += messageTable(report.messages, duration: report.run.rateSeconds)
        html += "<p class=\"muted\">Bytes in: \(MetricFormat.bytes(report.messages.bytesIn)) · bytes out: "
            + "\(MetricFormat.bytes(report.messages.bytesOut))</p>\n"
        return html + "</section>\n"
    }

    static func messageTable(_ messages: MessageSummary, duration: Double) -> String {
        // Arrivals of other runs' messages and retained leftovers get columns of their own, only when there were
        // any: received is this run's messages.
        let showArrived = messages.arrived.total > messages.received.total
        var html = "<table>\n<thead><tr><th>QoS</th><th class=\"num\">published</th><th class=\"num\">acked</th>"
            + "<th class=\"num\">unacked at end</th>"
            + "<th class=\"num\">received</th><th class=\"num\">published / s</th><th class=\"num\">received / s</th>"
            + (showArrived ? "<th class=\"num\">arrived (all senders)</th><th class=\"num\">arrived / s</th>" : "")
            + "</tr></thead>\n<tbody>\n"
        for qos in MQTTQoS.allCases {
            let acked = qos == .atMostOnce ? "–" : MetricFormat.grouped(messages.acked[qos])
            let unacked = qos == .atMostOnce ? "–" : MetricFormat.grouped(messages.unackedAtEnd[qos])
            let unackedClass = qos != .atMostOnce && messages.unackedAtEnd[qos] > 0 ? "num bad" : "num"
            html += "<tr><td>QoS \(qos.rawValue)</td><td class=\"num\">\(MetricFormat.grouped(messages.published[qos]))</td>"
                + "<td class=\"num\">\(acked)</td><td class=\"\(unackedClass)\">\(unacked)</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(messages.received[qos]))</td>"
                + "<td class=\"num\">\(rate(messages.published[qos], duration))</td>"
                + "<td class=\"num\">\(rate(messages.received[qos], duration))</td>"
                + (showArrived ? "<td class=\"num\">\(MetricFormat.grouped(messages.arrived[qos]))</td>"
                    + "<td class=\"num\">\(rate(messages.arrived[qos], duration))</td>" : "")
                + "</tr>\n"
        }
        if showArrived {
            html += "</tbody>\n</table>\n<p class=\"muted\">received: this run's messages; arrived: every PUBLISH, "
                + "other runs' and publishers' (delivery.foreign) and retained leftovers (delivery.retained_on_subscribe) included.</p>\n"
            return html
        }
        return html + "</tbody>\n</table>\n"
    }

    /// The generator's read path in words.
    static func receivePathText(_ health: GeneratorHealth) -> String {
        let unavailable = health.receiveRingUnavailable.map { " (io_uring receives not used: \($0))" } ?? ""
        switch health.receivePath {
        case "io_uring": return "io_uring multishot receives, one wait per lane turn"
        case "epoll+recv": return "epoll, then recv(2) per ready socket" + unavailable
        case "io_uring+epoll": return "io_uring multishot receives on some lanes, epoll on others" + unavailable
        case "": return "–"
        default: return health.receivePath
        }
    }

    /// The generator's write path in words (CPU per message differs by about a third between the two).
    static func sendPathText(_ health: GeneratorHealth) -> String {
        let unavailable = health.ioUringUnavailable.map { " (io_uring unavailable: \($0))" } ?? ""
        switch health.sendPath {
        case "io_uring": return "io_uring, one submission per lane turn"
        case "send": return "send(2), one per connection and turn" + unavailable
        case "io_uring+send": return "io_uring, and send(2) after a lane's ring failed" + unavailable
        case "": return "–"
        default: return health.sendPath
        }
    }

    static func generator(_ report: RunReport) -> String {
        let health = report.generator
        let lag = report.scheduleLagHistogram
        var html = "<section id=\"generator\">\n<h2>Generator health</h2>\n"
        html += "<p class=\"\(health.saturated ? "warning" : "ok")\">"
            + (health.saturated
                ? "Saturated: " + HTML.escape(health.saturationReasons.joined(separator: "; "))
                : "Not saturated: while publishing, the generator sent each message on time whenever its client "
                    + "could send (schedule lag below includes waits for the broker and reconnects), within its CPU bound.")
            + "</p>\n"
        html += "<div class=\"columns\">\n"
        html += keyValueTable("Load generator", [
            ("schedule lag p50", lag.totalCount > 0 ? ms(lag.valueAtPercentile(50)) : "–"),
            ("schedule lag p99", lag.totalCount > 0 ? ms(lag.valueAtPercentile(99)) : "–"),
            ("schedule lag max", lag.totalCount > 0 ? ms(lag.max) : "–"),
            ("CPU", MetricFormat.decimal(health.cpuSeconds, places: 2) + " s"
                + (report.run.durationSeconds > 0
                    ? " (" + MetricFormat.decimal(health.cpuSeconds / report.run.durationSeconds * 100, places: 1) + " % of a core)"
                    : "")),
            ("peak RSS", MetricFormat.bytes(health.peakRSSBytes)),
            ("lanes", String(health.lanes)),
            ("receive coalescing", health.receiveCoalescingMicroseconds == 0
                ? "off (every message read at once)"
                : "\(health.receiveCoalescingMicroseconds) µs at 64,000 msg/s or more per lane; paused "
                    + MetricFormat.grouped(health.receiveCoalescingPauses) + " times"),
            ("receive batching", health.receiveBatchingMicroseconds == 0
                ? "off (or not recorded)"
                : "\(health.receiveBatchingMicroseconds) µs at 4,000 msg/s or more per lane; waited "
                    + MetricFormat.grouped(health.receiveBatchingPauses) + " times"),
            ("writes", Self.sendPathText(health)),
            ("reads", Self.receivePathText(health)),
            ("source addresses", health.sourceAddresses.isEmpty
                ? "chosen by the kernel" : health.sourceAddresses.joined(separator: ", ")),
            ("end-of-run drain", MetricFormat.decimal(health.drainSeconds, places: 2) + " s of at most "
                + MetricFormat.decimal(health.drainLimitSeconds, places: 2) + " s"),
        ])
        html += keyValueTable("Skipped and stray work", [
            ("dropped schedule slots", MetricFormat.grouped(health.droppedSlots)),
            ("slots unsent at end", MetricFormat.grouped(health.unsentAtEnd)),
            ("abandoned publishes", MetricFormat.grouped(health.abandonedPublishes)),
            ("foreign messages", MetricFormat.grouped(health.foreignMessages)),
            ("ack batching fallbacks (SO_RCVLOWAT)", MetricFormat.grouped(health.lowWatermarkFallbacks)),
        ], highlightNonZero: true)
        if health.lowWatermarkFallbacks > 0 || health.lowWatermarkRearms > 0 {
            html += "<p class=\"muted\">A fallback means a broker held its acks below the raised low watermark (Nagle's "
                + "algorithm on): that connection was read at every byte until the batching was re-armed ("
                + MetricFormat.grouped(health.lowWatermarkRearms) + " re-arms).</p>\n"
        }
        return html + "</div>\n</section>\n"
    }

    static func fleets(_ report: RunReport) -> String {
        var html = "<section id=\"fleets\">\n<h2>Fleets</h2>\n"
        html += "<table>\n<thead><tr><th>Fleet</th><th class=\"num\">clients</th><th class=\"num\">connected (peak)</th>"
            + "<th class=\"num\">connect failures</th><th class=\"num\">published</th><th class=\"num\">received</th>"
            + "<th class=\"num\">lost</th><th class=\"num\">duplicated</th><th class=\"num\">ack timeouts</th>"
            + "<th class=\"num\">e2e p50 ms</th><th class=\"num\">e2e p99 ms</th></tr></thead>\n<tbody>\n"
        for fleet in report.fleets {
            let e2e = fleet.latency.histogram(.endToEnd, from: .intended)
            let total = fleet.delivery.total
            html += "<tr><td>\(HTML.escape(fleet.name))</td><td class=\"num\">\(fleet.clients)</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(fleet.connections.peakConnected))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(fleet.connections.failed))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(fleet.messages.published.total))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(fleet.messages.received.total))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(total.lost))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(total.duplicated))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(fleet.ackTimeouts.total))</td>"
                + "<td class=\"num\">\(e2e.totalCount > 0 ? MetricFormat.decimal(Double(e2e.valueAtPercentile(50)) / 1000, places: 3) : "–")</td>"
                + "<td class=\"num\">\(e2e.totalCount > 0 ? MetricFormat.decimal(Double(e2e.valueAtPercentile(99)) / 1000, places: 3) : "–")</td></tr>\n"
        }
        return html + "</tbody>\n</table>\n</section>\n"
    }

    static func scenario(_ report: RunReport) -> String {
        let info = report.scenario
        var html = "<section id=\"scenario\">\n<h2>Scenario</h2>\n"
        if let description = info.description, !description.isEmpty {
            html += "<p>\(HTML.escape(description))</p>\n"
        }
        html += keyValueTable(nil, [
            ("name", info.name), ("file", info.file), ("sha256", info.sha256),
            ("brokers", report.brokers.joined(separator: ", ") + (report.brokerEmbedded ? " (embedded)" : "")),
            ("started", RunReport.rfc3339(report.run.startedAt)),
            ("duration", MetricFormat.decimal(report.run.durationSeconds, places: 3) + " s"),
            ("interrupted", report.run.interrupted ? "yes" : "no"),
            ("seed", String(report.run.seed)),
        ], wide: true)
        if let redacted = info.redacted {
            html += "<details open><summary>Scenario as run (secrets masked)</summary>\n<pre>"
                + HTML.escape(JSONWriter.string(from: redacted)) + "</pre></details>\n"
        }
        return html + "</section>\n"
    }

    static func environment(_ report: RunReport) -> String {
        let environment = report.environment
        var html = "<section id=\"environment\">\n<h2>Environment</h2>\n"
        html += keyValueTable(nil, [
            ("host", environment.hostname), ("operating system", environment.os),
            ("cores", String(environment.cores)), ("memory", MetricFormat.bytes(environment.memoryBytes)),
            ("fleetbench", environment.fleetbenchVersion),
        ], wide: true)
        return html + "</section>\n"
    }

    // MARK: Pieces

    /// One row per network profile of each fleet: its clients, what it emulates and what it did.
    static func network(_ report: RunReport) -> String {
        var html = "<section id=\"network\">\n<h2>Network conditions</h2>\n"
        html += "<table>\n<thead><tr><th>Fleet</th><th>Profile</th><th class=\"num\">clients</th><th>Emulated</th>"
            + "<th class=\"num\">stalls</th><th class=\"num\">drops</th><th class=\"num\">outages</th>"
            + "<th class=\"num\">outage s</th><th class=\"num\">added delay up ms</th><th class=\"num\">down ms</th>"
            + "<th class=\"num\">waited for bandwidth</th><th class=\"num\">read pauses</th></tr></thead>\n<tbody>\n"
        for entry in report.network {
            html += "<tr><td>\(HTML.escape(entry.fleet))</td><td>\(HTML.escape(entry.profile))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(UInt64(entry.clients)))</td>"
                + "<td>\(HTML.escape(entry.description))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(entry.stalls))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(entry.drops))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(entry.outages))</td>"
                + "<td class=\"num\">\(MetricFormat.decimal(entry.outageSeconds, places: 1))</td>"
                + "<td class=\"num\">\(MetricFormat.decimal(entry.meanDelayUpMilliseconds, places: 1))</td>"
                + "<td class=\"num\">\(MetricFormat.decimal(entry.meanDelayDownMilliseconds, places: 1))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(entry.heldForBandwidth))</td>"
                + "<td class=\"num\">\(MetricFormat.grouped(entry.readPauses))</td></tr>\n"
        }
        return html + "</tbody>\n</table>\n</section>\n"
    }

    static func keyValueTable(
        _ caption: String?, _ rows: [(String, String)], highlightNonZero: Bool = false, wide: Bool = false
    ) -> String {
        var html = "<table class=\"kv\(wide ? " wide" : "")\">"
        if let caption { html += "<caption>\(HTML.escape(caption))</caption>" }
        html += "\n<tbody>\n"
        for (key, value) in rows {
            let bad = highlightNonZero && value != "0" && key != "total" ? " bad" : ""
            html += "<tr><th>\(HTML.escape(key))</th><td class=\"num\(bad)\">\(HTML.escape(value))</td></tr>\n"
        }
        return html + "</tbody></table>\n"
    }

    /// `keepUnderscores`: the reasons are texts as the system gave them (transport errors), not report.json keys.
    static func reasonTable(_ caption: String, _ counts: [ReasonCount], keepUnderscores: Bool = false) -> String {
        guard !counts.isEmpty else {
            return "<table class=\"kv\"><caption>\(HTML.escape(caption))</caption>\n<tbody><tr><td class=\"muted\">none</td></tr></tbody></table>\n"
        }
        return keyValueTable(caption, counts.map {
            (keepUnderscores ? $0.reason : $0.reason.replacingOccurrences(of: "_", with: " "), MetricFormat.grouped($0.count))
        })
    }

    static func ms(_ microseconds: UInt64) -> String {
        MetricFormat.decimal(Double(microseconds) / 1000, places: 3) + " ms"
    }

    static func rate(_ count: UInt64, _ seconds: Double) -> String {
        guard seconds > 0 else { return "–" }
        return MetricFormat.decimal(Double(count) / seconds, places: 1)
    }

    static let css = """

        :root { --ink: #1c2330; --muted: #5d6675; --line: #d9dee6; --pass: #1e7d44; --fail: #b3261e; --warn: #9a6700; }
        * { box-sizing: border-box; }
        body { margin: 0; color: var(--ink); background: #f4f6f9;
          font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", "DejaVu Sans", sans-serif; }
        main { max-width: 1100px; margin: 0 auto; padding: 20px 24px 40px; background: #fff; }
        h1 { font-size: 22px; margin: 0; word-break: break-word; }
        h2 { font-size: 17px; margin: 0 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
        section { margin-top: 26px; }
        .verdict { display: flex; align-items: center; gap: 18px; padding: 14px 18px; border-radius: 8px; color: #fff; }
        .verdict.pass { background: var(--pass); }
        .verdict.fail { background: var(--fail); }
        .verdict p { margin: 4px 0 0; opacity: .92; word-break: break-word; }
        .badge { font-size: 26px; font-weight: 700; letter-spacing: .04em; padding: 4px 14px; border: 3px solid #fff;
          border-radius: 6px; }
        .warning { background: #fff4d6; border-left: 4px solid var(--warn); padding: 8px 12px; margin: 10px 0; }
        .ok { color: var(--pass); margin: 6px 0; }
        .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(130px, 1fr)); gap: 10px; margin: 14px 0 0; }
        .figures div { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
        .figures dt { color: var(--muted); font-size: 12px; }
        .figures dd { margin: 0; font-size: 18px; font-weight: 600; font-variant-numeric: tabular-nums; }
        table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; font-variant-numeric: tabular-nums; }
        th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
        thead th { background: #eef1f5; font-weight: 600; font-size: 12.5px; }
        td.num, th.num { text-align: right; white-space: nowrap; }
        td.bad { color: var(--fail); font-weight: 600; }
        tr.fail td.result { color: var(--fail); font-weight: 700; }
        tr.pass td.result { color: var(--pass); font-weight: 600; }
        tr.fail { background: #fdecea; }
        tr.secondary td { color: var(--muted); }
        table.kv { width: auto; min-width: 240px; }
        table.kv.wide { width: 100%; }
        table.kv th { font-weight: 500; color: var(--muted); white-space: nowrap; }
        table.kv.wide th { width: 11em; }
        table.kv.wide td { text-align: left; word-break: break-all; }
        caption { text-align: left; font-weight: 600; padding: 4px 0; }
        .columns { display: flex; flex-wrap: wrap; gap: 8px 28px; align-items: flex-start; }
        figure { margin: 10px 0 16px; }
        .grid2 { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 4px 24px; }
        figcaption { font-weight: 600; margin-bottom: 2px; }
        svg.chart { width: 100%; height: auto; display: block; }
        svg .grid { stroke: #e6e9ee; stroke-width: 1; }
        svg .frame { fill: none; stroke: #9aa3b0; stroke-width: 1; }
        svg text { font-family: inherit; fill: #3b4452; }
        svg .tick { font-size: 11px; }
        svg .axis { font-size: 12px; fill: var(--muted); }
        svg .legend { font-size: 12px; }
        code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 13px; word-break: break-word; }
        pre { background: #f6f8fa; border: 1px solid var(--line); padding: 10px; overflow-x: auto; font-size: 12px;
          font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-all; }
        .muted { color: var(--muted); }
        summary { cursor: pointer; font-weight: 600; margin: 8px 0; }
        footer { margin-top: 30px; color: var(--muted); font-size: 12px; }
        @media screen and (max-width: 760px) { .grid2 { grid-template-columns: minmax(0, 1fr); } }
        @media print {
          @page { margin: 14mm; }
          body { background: #fff; font-size: 11px; }
          main { max-width: none; padding: 0; }
          .verdict { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
          tr.fail, thead th, .warning { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
          figure, table, .columns, .verdict, .figures { break-inside: avoid; page-break-inside: avoid; }
          .grid2 { grid-template-columns: repeat(2, minmax(0, 1fr)); }
          h2 { break-after: avoid; page-break-after: avoid; }
          details > summary { list-style: none; }
          pre { font-size: 9px; max-height: none; }
        }

        """
}

/// HTML text helpers.
enum HTML {
    /// The opening of a self-contained page up to `<main>`, the same for every page fleetbench writes. `title` is
    /// HTML: escape what it quotes from a scenario or a report.
    static func pageStart(toolVersion: String, title: String, css: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="generator" content="fleetbench \(escape(toolVersion))">
        <title>\(title)</title>
        <style>\(css)</style>
        </head>
        <body>
        <main>

        """
    }

    /// Escapes `& < > " '` so text from a scenario or the network can never open a tag or leave an attribute.
    static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.unicodeScalars.append(character)
            }
        }
        return output
    }
}
