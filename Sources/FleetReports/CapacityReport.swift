import FleetJSON
import FleetMetrics
import Foundation

/// One level of a capacity search: the value tried, its verdict and the key figures of its run.
public struct CapacityLevel: Equatable, Sendable {
    /// The value set at the varied path.
    public var level: Double
    /// "ramp" or "bisect": which part of the search chose it.
    public var phase: String
    public var passed: Bool
    /// Messages published and received per second of the publishing phase.
    public var publishedPerSecond: Double
    public var receivedPerSecond: Double
    /// End-to-end latency of the level's run, ms (nil without deliveries).
    public var endToEndP50Ms: Double?
    public var endToEndP99Ms: Double?
    public var connectionsFailed: UInt64
    public var lost: UInt64
    public var ackTimeouts: UInt64
    /// Whether the generator (not the broker) may have limited this level.
    public var saturated: Bool
    public var thresholds: [ThresholdResult]
    /// The level's results folder (report.json, report.html, ...).
    public var results: String

    public init(level: Double, phase: String, passed: Bool, publishedPerSecond: Double, receivedPerSecond: Double,
                endToEndP50Ms: Double?, endToEndP99Ms: Double?, connectionsFailed: UInt64, lost: UInt64,
                ackTimeouts: UInt64, saturated: Bool, thresholds: [ThresholdResult], results: String) {
        self.level = level
        self.phase = phase
        self.passed = passed
        self.publishedPerSecond = publishedPerSecond
        self.receivedPerSecond = receivedPerSecond
        self.endToEndP50Ms = endToEndP50Ms
        self.endToEndP99Ms = endToEndP99Ms
        self.connectionsFailed = connectionsFailed
        self.lost = lost
        self.ackTimeouts = ackTimeouts
        self.saturated = saturated
        self.thresholds = thresholds
        self.results = results
    }

    /// The figures of one level's run report.
    public init(level: Double, phase: String, report: RunReport, results: String) {
        let e2e = report.latency.histogram(.endToEnd, from: .intended)
        self.init(
            level: level, phase: phase, passed: report.passed,
            publishedPerSecond: report.run.rate(report.messages.published.total),
            receivedPerSecond: report.run.rate(report.messages.received.total),
            endToEndP50Ms: e2e.totalCount > 0 ? Double(e2e.valueAtPercentile(50)) / 1000 : nil,
            endToEndP99Ms: e2e.totalCount > 0 ? Double(e2e.valueAtPercentile(99)) / 1000 : nil,
            connectionsFailed: report.connections.failed, lost: report.delivery.total.lost,
            ackTimeouts: report.ackTimeouts.total, saturated: report.generator.saturated,
            thresholds: report.thresholds, results: results)
    }
}

/// capacity.json and capacity.html: every level a capacity search tried and the highest that passed.
public struct CapacityReport: Equatable, Sendable {
    public static let schema = 1
    public static let jsonName = "capacity.json"
    public static let htmlName = "capacity.html"

    public var toolVersion: String
    public var scenario: String
    public var scenarioFile: String
    public var startedAt: Date
    /// The varied path and its range, as given to --vary.
    public var vary: String
    public var low: Double
    public var high: Double
    /// The thresholds every level was judged by (--until, else the scenario's).
    public var thresholds: [String]
    public var stepSeconds: Double
    public var warmUpSeconds: Double
    /// "embedded" (a fresh mosquitto per level) or the broker URLs.
    public var broker: String
    public var levels: [CapacityLevel] = []
    /// The highest level that passed (nil: even LOW failed) and the lowest that failed (nil: HIGH passed).
    public var maxPassing: Double?
    public var minFailing: Double?
    public var elapsedSeconds: Double = 0
    /// Set when the search stopped early (Ctrl-C, a level that could not run).
    public var stoppedEarly: String?

    public init(toolVersion: String, scenario: String, scenarioFile: String, startedAt: Date, vary: String,
                low: Double, high: Double, thresholds: [String], stepSeconds: Double, warmUpSeconds: Double,
                broker: String) {
        self.toolVersion = toolVersion
        self.scenario = scenario
        self.scenarioFile = scenarioFile
        self.startedAt = startedAt
        self.vary = vary
        self.low = low
        self.high = high
        self.thresholds = thresholds
        self.stepSeconds = stepSeconds
        self.warmUpSeconds = warmUpSeconds
        self.broker = broker
    }

    /// The varied path alone (`fleets.vehicles.count`).
    public var path: String { String(vary.split(separator: "=", maxSplits: 1).first ?? "") }

    static func number(_ value: Double) -> JSONValue {
        value == value.rounded() && abs(value) < 1e15 ? .integer(Int64(value)) : .real(value)
    }

    public var jsonValue: JSONValue {
        func optionalReal(_ value: Double?) -> JSONValue { value.map { .real($0) } ?? .null }
        let formatter = ISO8601DateFormatter()
        return .object([
            JSONMember("schema", .integer(Int64(Self.schema))),
            JSONMember("tool_version", .string(toolVersion)),
            JSONMember("scenario", .string(scenario)),
            JSONMember("scenario_file", .string(scenarioFile)),
            JSONMember("started_at", .string(formatter.string(from: startedAt))),
            JSONMember("vary", .object([
                JSONMember("path", .string(path)), JSONMember("low", Self.number(low)), JSONMember("high", Self.number(high)),
            ])),
            JSONMember("thresholds", .array(thresholds.map { .string($0) })),
            JSONMember("step_s", .real(stepSeconds)),
            JSONMember("warm_up_s", .real(warmUpSeconds)),
            JSONMember("broker", .string(broker)),
            JSONMember("max_passing", maxPassing.map(Self.number) ?? .null),
            JSONMember("min_failing", minFailing.map(Self.number) ?? .null),
            JSONMember("elapsed_s", .real(elapsedSeconds)),
            JSONMember("stopped_early", stoppedEarly.map { .string($0) } ?? .null),
            JSONMember("levels", .array(levels.map { level in
                .object([
                    JSONMember("level", Self.number(level.level)),
                    JSONMember("phase", .string(level.phase)),
                    JSONMember("verdict", .string(level.passed ? "pass" : "fail")),
                    JSONMember("published_per_s", .real(level.publishedPerSecond)),
                    JSONMember("received_per_s", .real(level.receivedPerSecond)),
                    JSONMember("end_to_end_p50_ms", optionalReal(level.endToEndP50Ms)),
                    JSONMember("end_to_end_p99_ms", optionalReal(level.endToEndP99Ms)),
                    JSONMember("connections_failed", .count(level.connectionsFailed)),
                    JSONMember("lost", .count(level.lost)),
                    JSONMember("ack_timeouts", .count(level.ackTimeouts)),
                    JSONMember("saturated", .bool(level.saturated)),
                    JSONMember("thresholds", .array(level.thresholds.map { threshold in
                        .object([
                            JSONMember("expression", .string(threshold.expression)),
                            JSONMember("observed", optionalReal(threshold.observed)),
                            JSONMember("passed", .bool(threshold.passed)),
                        ])
                    })),
                    JSONMember("results", .string(level.results)),
                ])
            })),
        ])
    }

    public func jsonText() -> String { JSONWriter.string(from: jsonValue) + "\n" }

    /// Writes capacity.json and capacity.html into `directory`.
    public func write(to directory: String) throws(ReportError) {
        try ReportWriter.createDirectory(directory)
        try ReportWriter.writeFile(jsonText(), to: ReportWriter.path(in: directory, Self.jsonName))
        try ReportWriter.writeFile(CapacityHTML.render(self), to: ReportWriter.path(in: directory, Self.htmlName))
    }
}

/// capacity.html: self-contained (inline CSS and SVG, no scripts): each threshold's metric and the throughput
/// against the level, the knee (the highest passing level) marked, and a table of every level.
public enum CapacityHTML {
    public static func render(_ report: CapacityReport) -> String {
        let verdict: String
        if let maxPassing = report.maxPassing {
            verdict = "Highest passing level: \(format(maxPassing))"
                + (report.minFailing.map { " (lowest failing: \(format($0)))" } ?? " (every level up to HIGH passed: the knee is above \(format(report.high)))")
        } else {
            verdict = "Even the lowest level, \(format(report.low)), failed"
        }
        var page = HTML.pageStart(
            toolVersion: report.toolVersion,
            title: "fleetbench capacity: \(HTML.escape(report.scenario)) \(HTML.escape(report.path))", css: ReportHTML.css)
        page += "<section id=\"verdict\"><h1>Capacity: \(HTML.escape(report.scenario)), varying \(HTML.escape(report.path))</h1>\n"
        page += "<p class=\"\(report.maxPassing == nil ? "warning" : "ok")\">\(HTML.escape(verdict))</p>\n"
        if let stopped = report.stoppedEarly { page += "<p class=\"warning\">Stopped early: \(HTML.escape(stopped))</p>\n" }
        page += "<p>Range \(format(report.low))..\(format(report.high)); each level publishes \(format(report.stepSeconds)) s after a "
            + "\(format(report.warmUpSeconds)) s warm-up, against \(HTML.escape(report.broker == "embedded" ? "a fresh embedded mosquitto per level" : report.broker)). "
            + "Thresholds: \(report.thresholds.map { "<code>\(HTML.escape($0))</code>" }.joined(separator: ", ")).</p>\n</section>\n"
        let sorted = report.levels.sorted { $0.level < $1.level }
        page += "<section id=\"charts\"><h2>Against the level</h2>\n"
        for (index, expression) in report.thresholds.enumerated() {
            let metric = sorted.first { $0.thresholds.indices.contains(index) }?.thresholds[index].metric ?? expression
            let isTime = MetricCatalog.unit(of: metric) == .time
            let isRatio = MetricCatalog.unit(of: metric) == .ratio
            func scaled(_ value: Double) -> Double { isTime ? value / 1e6 : (isRatio ? value * 100 : value) }
            let points = sorted.map { level -> (x: Double, y: Double?) in
                (level.level, level.thresholds.indices.contains(index) ? level.thresholds[index].observed.map(scaled) : nil)
            }
            var series = [ChartSeries(name: metric, color: ReportHTML.palette[0], points: points)]
            let limit = sorted.lazy.compactMap { $0.thresholds.indices.contains(index) ? $0.thresholds[index].limit : nil }.first
            if let limit, let first = sorted.first, let last = sorted.last {
                series.append(ChartSeries(name: "limit", color: ReportHTML.palette[1],
                                          points: [(first.level, scaled(limit)), (last.level, scaled(limit))], dashed: true))
            }
            series += knee(report, top: (points.compactMap(\.y) + (limit.map { [scaled($0)] } ?? [])).max() ?? 0)
            page += LineChart(title: expression, xLabel: report.path, yLabel: metric + (isTime ? " (ms)" : isRatio ? " (%)" : ""),
                              series: series).svg() + "\n"
        }
        let rates = [
            ChartSeries(name: "published/s", color: ReportHTML.palette[0], points: sorted.map { ($0.level, $0.publishedPerSecond) }),
            ChartSeries(name: "received/s", color: ReportHTML.palette[2], points: sorted.map { ($0.level, $0.receivedPerSecond) }),
        ]
        let top = sorted.map { max($0.publishedPerSecond, $0.receivedPerSecond) }.max() ?? 0
        page += LineChart(title: "throughput", xLabel: report.path, yLabel: "messages/s", series: rates + knee(report, top: top)).svg() + "\n"
        page += "</section>\n"
        page += "<section id=\"levels\"><h2>Levels, in the order tried</h2>\n<table>\n<thead><tr><th>#</th><th>level</th><th>phase</th>"
            + "<th>verdict</th><th class=\"num\">published/s</th><th class=\"num\">received/s</th><th class=\"num\">e2e p50 ms</th>"
            + "<th class=\"num\">e2e p99 ms</th><th>failed thresholds</th>"
            + "<th>results</th></tr></thead>\n<tbody>\n"
        for (index, level) in report.levels.enumerated() {
            let failed = level.thresholds.filter { !$0.passed }.map(\.expression).joined(separator: "; ")
            // The verdict as coloured text: `.warning` is a block callout (a bar and a box) and looked broken in a cell.
            page += "<tr><td class=\"num\">\(index + 1)</td><td class=\"num\">\(format(level.level))</td><td>\(level.phase)</td>"
                + "<td class=\"\(level.passed ? "ok" : "bad")\">\(level.passed ? "pass" : "FAIL")\(level.saturated ? " (generator saturated)" : "")</td>"
                + "<td class=\"num\">\(MetricFormat.decimal(level.publishedPerSecond, places: 0))</td>"
                + "<td class=\"num\">\(MetricFormat.decimal(level.receivedPerSecond, places: 0))</td>"
                + "<td class=\"num\">\(level.endToEndP50Ms.map { MetricFormat.decimal($0, places: 2) } ?? "–")</td>"
                + "<td class=\"num\">\(level.endToEndP99Ms.map { MetricFormat.decimal($0, places: 2) } ?? "–")</td>"
                + "<td>\(HTML.escape(failed))</td><td><code>\(HTML.escape(level.results))</code></td></tr>\n"
        }
        page += "</tbody>\n</table>\n</section>\n"
        page += "<footer>Written by fleetbench \(HTML.escape(report.toolVersion)) · capacity schema \(CapacityReport.schema)</footer>\n"
        page += "</main>\n</body>\n</html>\n"
        return page
    }

    /// The knee: a dashed vertical line at the highest passing level.
    static func knee(_ report: CapacityReport, top: Double) -> [ChartSeries] {
        guard let knee = report.maxPassing else { return [] }
        return [ChartSeries(name: "knee \(format(knee))", color: ReportHTML.palette[3],
                            points: [(knee, 0), (knee, top)], dashed: true)]
    }

    /// A level as text: `1500`, `2.5`.
    public static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String((value * 1000).rounded() / 1000)
    }
}
