import FleetJSON
import Foundation

/// `fleetbench compare A B C ...`: every later run compared with the first, for a trend across versions. Each pair
/// is an ordinary `ReportComparison` (same verdicts, tolerance, floor and tests); the trend puts their rows side by
/// side: one line per metric, the baseline's value, then each run's value and change against the baseline.
public struct TrendComparison: Sendable {
    /// The first run against each later one, in the order given.
    public let comparisons: [ReportComparison]

    public init(runs: [RunReport], tolerance: Double = 10,
                latencyFloorMilliseconds: Double = ReportComparison.defaultLatencyFloorMilliseconds) {
        precondition(runs.count >= 2, "a trend needs a baseline and at least one candidate")
        comparisons = runs.dropFirst().map {
            ReportComparison(baseline: runs[0], candidate: $0, tolerance: tolerance,
                             latencyFloorMilliseconds: latencyFloorMilliseconds)
        }
    }

    public var hasRegression: Bool { comparisons.contains(where: \.hasRegression) }
    public var baselineName: String { comparisons[0].baselineName }
    public var candidateNames: [String] { comparisons.map(\.candidateName) }

    /// One line of the trend: the metric, its baseline value and, per later run, its row (nil: that pair has no
    /// such row).
    public struct Line: Sendable {
        public var metric: String
        public var unit: String
        public var baseline: Double?
        public var rows: [ReportComparison.Row?]
        public var regressed: Bool { rows.contains { $0?.verdict == .regression } }
    }

    /// The metrics any pair shows (key rows and regressions, or every row with `all`), in report order; lines with
    /// a regression in any run first.
    public func lines(all: Bool = false) -> [Line] {
        var order: [String] = []
        var units: [String: String] = [:]
        for comparison in comparisons {
            for row in comparison.rows where all || row.isKey || row.verdict == .regression {
                if units[row.metric] == nil { order.append(row.metric) }
                units[row.metric] = row.unit
            }
        }
        let lines = order.map { metric in
            let rows = comparisons.map { comparison in comparison.rows.first { $0.metric == metric } }
            return Line(metric: metric, unit: units[metric] ?? "", baseline: rows.compactMap { $0?.baseline }.first,
                        rows: rows)
        }
        return lines.filter(\.regressed) + lines.filter { !$0.regressed }
    }

    /// A run's cell: its value and change, and REGRESSION when it is one. A statistic either run has too few
    /// samples for says so instead of a change, as the two-run table does: p99 of 11 connects is their max.
    static func cell(_ row: ReportComparison.Row?) -> String {
        guard let row else { return "–" }
        var text = ReportComparison.value(row.candidate)
        if row.verdict == .tooFewSamples {
            text += " (too few samples)"
        } else if row.changePercent != nil {
            text += " (" + ReportComparison.change(row) + ")"
        }
        if row.verdict == .regression { text += " REGRESSION" }
        return text
    }

    public var summary: String {
        let regressed = comparisons.enumerated().filter { $0.element.hasRegression }
        guard !regressed.isEmpty else { return comparisons[0].summary.replacingOccurrences(of: "No regression", with: "No run regressed") }
        return regressed.map { "run \($0.offset + 2): " + $0.element.summary }.joined(separator: "\n")
    }

    /// Each later run: like for like with the baseline or what differs.
    var likeForLikeText: String {
        var text = ""
        for (index, comparison) in comparisons.enumerated() {
            text += "run \(index + 2): " + comparison.likeForLikeLine + "\n"
            for difference in comparison.differences {
                text += "  \(difference.what)  \(difference.baseline) -> \(difference.candidate)\n"
            }
        }
        return text
    }

    /// The plain-text trend table.
    public func table(all: Bool = false) -> String {
        let header = ["metric", "unit", "run 1 (baseline)"] + comparisons.indices.map { "run \($0 + 2)" }
        let body = lines(all: all).map { line in
            [line.metric, line.unit, ReportComparison.value(line.baseline)] + line.rows.map(Self.cell)
        }
        var widths = header.map(\.count)
        for line in body { for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func format(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                return index < 2 ? cell + pad : pad + cell
            }.joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        var text = "run 1 (baseline): \(baselineName)\n"
        for (index, name) in candidateNames.enumerated() { text += "run \(index + 2): \(name)\n" }
        text += "\n" + likeForLikeText + "\n"
        text += format(header) + "\n" + format(widths.map { String(repeating: "-", count: $0) }) + "\n"
        for line in body { text += format(line) + "\n" }
        return text + "\n" + summary + "\n"
    }

    /// The trend as a Markdown table.
    public func markdown(all: Bool = false) -> String {
        func escaped(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
        var text = "### fleetbench compare (trend)\n\nRun 1 (baseline): `\(escaped(baselineName))`  \n"
        for (index, name) in candidateNames.enumerated() { text += "Run \(index + 2): `\(escaped(name))`  \n" }
        text += "\n" + (hasRegression ? "**" + escaped(summary).replacingOccurrences(of: "\n", with: "  \n") + "**"
                        : escaped(summary)) + "\n\n"
        text += "| metric | unit | run 1 (baseline) | " + comparisons.indices.map { "run \($0 + 2)" }.joined(separator: " | ") + " |\n"
        text += "|---|---|---:|" + String(repeating: "---:|", count: comparisons.count) + "\n"
        for line in lines(all: all) {
            text += "| `\(escaped(line.metric))` | \(escaped(line.unit)) | \(ReportComparison.value(line.baseline)) | "
                + line.rows.map { row in
                    row?.verdict == .regression ? "**" + Self.cell(row) + "**" : Self.cell(row)
                }.joined(separator: " | ") + " |\n"
        }
        return text
    }

    /// JSON: `{"schema": "fleetbench.compare-trend/1", "baseline", "candidates", "has_regression",
    /// "comparisons": [one fleetbench.compare/2 object per later run]}`.
    public func jsonValue() -> JSONValue {
        .object([
            JSONMember("schema", .string("fleetbench.compare-trend/1")),
            JSONMember("baseline", .string(baselineName)),
            JSONMember("candidates", .array(candidateNames.map { .string($0) })),
            JSONMember("has_regression", .bool(hasRegression)),
            JSONMember("comparisons", .array(comparisons.map { $0.jsonValue() })),
        ])
    }

    public func json() -> String { JSONWriter.string(from: jsonValue()) }
}
