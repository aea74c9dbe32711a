import FleetJSON
import FleetMetrics
import Foundation

/// `fleetbench compare BASELINE CANDIDATE`: what got better or worse between two runs.
///
/// Metrics compared: latency statistics of every kind (mean, p50, p90, p99, p999, max, from the headline origin;
/// lower is better), publish and receive rates (higher is better), losses and duplicates per QoS, ack timeouts,
/// connect failures, reconnects and dropped schedule slots (lower is better). A change against the metric's
/// direction is `worse` while within the tolerance and a `regression` beyond it; a rise from zero is a
/// regression whatever the tolerance (there is no percentage of zero).
///
/// Latency rows (`latency.*`, in ms) also have an absolute floor (default 1 ms): a worsening by at most the floor
/// is never more than `worse`, whatever its percentage. The engine times to about 1 ms (its timing wheel ticks
/// every 1 ms, and receive coalescing may read up to 1 ms late under heavy load), so p99 0.9 ms -> 1.1 ms (+22 %)
/// is noise, not a regression. Counts and rates have no floor.
public struct ReportComparison: Sendable {
    public enum Direction: String, Sendable {
        case lowerIsBetter = "lower_is_better"
        case higherIsBetter = "higher_is_better"
    }

    public enum Verdict: String, Sendable {
        case better, same, worse, regression
        /// One report has the metric and the other does not (for example a latency kind without samples).
        case incomparable = "not_comparable"
    }

    public struct Row: Equatable, Sendable {
        public var metric: String
        public var unit: String
        public var direction: Direction
        public var baseline: Double?
        public var candidate: Double?
        /// (candidate - baseline) / baseline × 100; +∞ for a rise from zero; nil when either side is missing.
        public var changePercent: Double?
        public var verdict: Verdict
    }

    /// In percent (10 means 10 %).
    public let tolerancePercent: Double
    /// A latency worsening by at most this many milliseconds is not a regression; 0 disables the floor.
    public let latencyFloorMilliseconds: Double
    /// The engine's timing resolution: its timing wheel ticks every 1 ms.
    public static let defaultLatencyFloorMilliseconds = 1.0
    public let rows: [Row]
    public let baselineName: String
    public let candidateName: String

    public var hasRegression: Bool { rows.contains { $0.verdict == .regression } }
    public var regressions: [Row] { rows.filter { $0.verdict == .regression } }

    /// `tolerance` in percent; `latencyFloorMilliseconds` applies to the `latency.*` rows only.
    public init(
        baseline: RunReport, candidate: RunReport, tolerance: Double = 10,
        latencyFloorMilliseconds: Double = defaultLatencyFloorMilliseconds
    ) {
        tolerancePercent = tolerance
        self.latencyFloorMilliseconds = latencyFloorMilliseconds
        baselineName = baseline.scenario.name + " @ " + RunReport.rfc3339(baseline.run.startedAt)
        candidateName = candidate.scenario.name + " @ " + RunReport.rfc3339(candidate.run.startedAt)
        var rows: [Row] = []
        func add(_ metric: String, _ unit: String, _ direction: Direction, _ base: Double?, _ cand: Double?,
                 absoluteFloor: Double = 0) {
            assert(MetricCatalog.metric(metric) != nil, "compare row \(metric) is not in MetricCatalog")
            rows.append(Self.row(metric, unit, direction, base, cand, tolerance: tolerance, absoluteFloor: absoluteFloor))
        }

        // Latency, from the headline origin of each kind.
        let kinds = LatencyKind.allCases.filter {
            baseline.latency.kindsWithSamples.contains($0) || candidate.latency.kindsWithSamples.contains($0)
        }
        for kind in kinds {
            let base = Self.headline(baseline.latency, kind).map(LatencySummary.init)
            let cand = Self.headline(candidate.latency, kind).map(LatencySummary.init)
            // Named as thresholds name it (`latency.connack`, not report.json's `connect`).
            let origin: LatencyOrigin = baseline.latency.histogram(kind, from: .intended).totalCount > 0
                || candidate.latency.histogram(kind, from: .intended).totalCount > 0 ? .intended : .sent
            for statistic in ["mean", "p50", "p90", "p99", "p999", "max"] {
                add(MetricCatalog.latencyPath(kind: kind, origin: origin, statistic: statistic), "ms", .lowerIsBetter,
                    base?.value(statistic), cand?.value(statistic), absoluteFloor: latencyFloorMilliseconds)
            }
        }

        // Rates.
        add("rates.published", "msg/s", .higherIsBetter,
            Self.rate(baseline.messages.published.total, baseline.run.durationSeconds),
            Self.rate(candidate.messages.published.total, candidate.run.durationSeconds))
        add("rates.received", "msg/s", .higherIsBetter,
            Self.rate(baseline.messages.received.total, baseline.run.durationSeconds),
            Self.rate(candidate.messages.received.total, candidate.run.durationSeconds))

        // Losses and duplicates, for QoS levels either run used.
        for qos in QoSLevel.allCases where baseline.delivery[qos].expected > 0 || candidate.delivery[qos].expected > 0 {
            let base = baseline.delivery[qos]
            let cand = candidate.delivery[qos]
            add("delivery.qos\(qos.rawValue).lost", "messages", .lowerIsBetter, Double(base.lost), Double(cand.lost))
            add("delivery.qos\(qos.rawValue).loss_ratio", "%", .lowerIsBetter, Self.lossPercent(base), Self.lossPercent(cand))
            add("delivery.qos\(qos.rawValue).duplicated", "messages", .lowerIsBetter,
                Double(base.duplicated), Double(cand.duplicated))
        }

        // Ack timeouts: every kind either run had, and the total.
        for kind in AckKind.allCases where baseline.ackTimeouts[kind] > 0 || candidate.ackTimeouts[kind] > 0 {
            add("ack_timeouts.\(kind.reportName)", "timeouts", .lowerIsBetter,
                Double(baseline.ackTimeouts[kind]), Double(candidate.ackTimeouts[kind]))
        }
        add("ack_timeouts.total", "timeouts", .lowerIsBetter,
            Double(baseline.ackTimeouts.total), Double(candidate.ackTimeouts.total))

        // Failures.
        add("connections.failed", "connections", .lowerIsBetter,
            Double(baseline.connections.failed), Double(candidate.connections.failed))
        add("connections.reconnects", "connections", .lowerIsBetter,
            Double(baseline.connections.reconnects), Double(candidate.connections.reconnects))
        add("generator.dropped", "slots", .lowerIsBetter,
            Double(baseline.generator.droppedSlots), Double(candidate.generator.droppedSlots))
        self.rows = rows
    }

    /// The verdict of one metric. A worsening whose absolute difference is at most `absoluteFloor` (in the
    /// metric's unit; 0 for none) is `worse` at most, whatever its percentage, even a rise from zero.
    public static func row(
        _ metric: String, _ unit: String, _ direction: Direction, _ baseline: Double?, _ candidate: Double?,
        tolerance: Double, absoluteFloor: Double = 0
    ) -> Row {
        guard let baseline, let candidate else {
            return Row(metric: metric, unit: unit, direction: direction, baseline: baseline, candidate: candidate,
                       changePercent: nil, verdict: .incomparable)
        }
        let change: Double
        if baseline == candidate {
            change = 0
        } else if baseline == 0 {
            change = candidate > 0 ? .infinity : -.infinity
        } else {
            change = (candidate - baseline) / abs(baseline) * 100
        }
        let worseChange = direction == .lowerIsBetter ? change : -change
        // Report values are whole microseconds written in ms; their difference carries binary rounding
        // (8.999 - 7.999 = 1.0000000000000009), so a difference exactly at the floor is compared with a margin far
        // below a microsecond. With no floor there is no margin: today's verdicts exactly.
        let withinFloor = absoluteFloor > 0 && abs(candidate - baseline) <= absoluteFloor + 1e-9
        let verdict: Verdict
        if change == 0 {
            verdict = .same
        } else if worseChange < 0 {
            verdict = .better
        } else if worseChange > tolerance && !withinFloor {
            verdict = .regression
        } else {
            verdict = .worse
        }
        return Row(metric: metric, unit: unit, direction: direction, baseline: baseline, candidate: candidate,
                   changePercent: change, verdict: verdict)
    }

    /// Parses a tolerance as given on the command line: `10%`, `10` (percent) or `2.5%`. Nil when not a
    /// non-negative finite number.
    public static func parseTolerance(_ text: String) -> Double? {
        let trimmed = text.hasSuffix("%") ? String(text.dropLast()) : text
        guard let value = Double(trimmed.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0 else {
            return nil
        }
        return value
    }

    static func headline(_ latency: LatencyRecorder, _ kind: LatencyKind) -> HDRHistogram? {
        let intended = latency.histogram(kind, from: .intended)
        if intended.totalCount > 0 { return intended }
        let sent = latency.histogram(kind, from: .sent)
        return sent.totalCount > 0 ? sent : nil
    }

    static func rate(_ count: UInt64, _ seconds: Double) -> Double? {
        seconds > 0 ? (Double(count) / seconds * 1000).rounded() / 1000 : nil
    }

    static func lossPercent(_ counts: DeliveryCounts) -> Double? {
        counts.expected > 0 ? Double(counts.lost) / Double(counts.expected) * 100 : nil
    }

    // MARK: Renderings

    static func value(_ value: Double?) -> String {
        guard let value else { return "–" }
        return MetricFormat.decimal(value, places: 3)
    }

    static func change(_ row: Row) -> String {
        guard let change = row.changePercent else { return "–" }
        if change.isInfinite { return change > 0 ? "+∞ %" : "-∞ %" }
        return (change > 0 ? "+" : "") + MetricFormat.decimal(change, places: 1) + " %"
    }

    static func verdictText(_ verdict: Verdict) -> String {
        switch verdict {
        case .better: return "better"
        case .same: return "same"
        case .worse: return "worse"
        case .regression: return "REGRESSION"
        case .incomparable: return "not comparable"
        }
    }

    /// A summary line: how many regressions beyond the tolerance, and the latency floor when there is one.
    public var summary: String {
        let count = regressions.count
        let tolerance = MetricFormat.decimal(tolerancePercent, places: 3)
        let floor = latencyFloorMilliseconds > 0
            ? " (latency changes within \(MetricFormat.decimal(latencyFloorMilliseconds, places: 3)) ms are not counted)"
            : ""
        if count == 0 { return "No regression beyond the \(tolerance) % tolerance\(floor)." }
        return "\(count) regression\(count == 1 ? "" : "s") beyond the \(tolerance) % tolerance\(floor): "
            + regressions.map(\.metric).joined(separator: ", ")
    }

    /// A plain-text table for the terminal.
    public func table() -> String {
        let header = ["metric", "unit", "baseline", "candidate", "change", "verdict"]
        let body = rows.map {
            [$0.metric, $0.unit, Self.value($0.baseline), Self.value($0.candidate), Self.change($0),
             Self.verdictText($0.verdict)]
        }
        var widths = header.map(\.count)
        for line in body { for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func format(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                // Text columns left-aligned, numbers right-aligned.
                return index < 2 || index == 5 ? cell + pad : pad + cell
            }.joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        var text = "baseline:  \(baselineName)\ncandidate: \(candidateName)\n\n"
        text += format(header) + "\n"
        text += format(widths.map { String(repeating: "-", count: $0) }) + "\n"
        for line in body { text += format(line) + "\n" }
        text += "\n" + summary + "\n"
        return text
    }

    /// A Markdown table for a CI comment (cells escaped for `|`).
    public func markdown() -> String {
        func cell(_ text: String) -> String {
            text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
        }
        var text = "### fleetbench compare\n\n"
        text += "Baseline: `\(cell(baselineName))`  \nCandidate: `\(cell(candidateName))`\n\n"
        text += (hasRegression ? "**" + cell(summary) + "**" : cell(summary)) + "\n\n"
        text += "| metric | unit | baseline | candidate | change | verdict |\n"
        text += "|---|---|---:|---:|---:|---|\n"
        for row in rows {
            let verdict = row.verdict == .regression ? "**regression**" : Self.verdictText(row.verdict)
            text += "| `\(cell(row.metric))` | \(cell(row.unit)) | \(Self.value(row.baseline)) | "
                + "\(Self.value(row.candidate)) | \(Self.change(row)) | \(verdict) |\n"
        }
        return text
    }

    /// JSON (`schema: "fleetbench.compare/1"`, with `latency_floor_ms`); an infinite change is written as null with `"from_zero": true`.
    public func jsonValue() -> JSONValue {
        .object([
            JSONMember("schema", .string("fleetbench.compare/1")),
            JSONMember("baseline", .string(baselineName)),
            JSONMember("candidate", .string(candidateName)),
            JSONMember("tolerance_percent", .real(tolerancePercent)),
            JSONMember("latency_floor_ms", .real(latencyFloorMilliseconds)),
            JSONMember("has_regression", .bool(hasRegression)),
            JSONMember("rows", .array(rows.map { row in
                var members = [
                    JSONMember("metric", .string(row.metric)),
                    JSONMember("unit", .string(row.unit)),
                    JSONMember("direction", .string(row.direction.rawValue)),
                    JSONMember("baseline", row.baseline.map { .real($0) } ?? .null),
                    JSONMember("candidate", row.candidate.map { .real($0) } ?? .null),
                    JSONMember("change_percent", row.changePercent.map { .real($0) } ?? .null),
                ]
                if let change = row.changePercent, change.isInfinite { members.append(JSONMember("from_zero", .bool(true))) }
                members.append(JSONMember("verdict", .string(row.verdict.rawValue)))
                return .object(members)
            })),
        ])
    }

    public func json() -> String { JSONWriter.string(from: jsonValue()) }
}
