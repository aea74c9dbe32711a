import FleetJSON
import Foundation

/// The comparison as text, Markdown and JSON. Each says first whether the runs are like for like; the text and
/// Markdown tables show the key rows (latency p50, p99 and max, counts and rates), regressions first, and every
/// row with `all`; JSON always carries every row.
extension ReportComparison {
    static func value(_ value: Double?) -> String {
        guard let value else { return "–" }
        return MetricFormat.decimal(value, places: 3)
    }

    static func change(_ row: Row) -> String {
        guard let change = row.changePercent else { return "–" }
        if change.isInfinite { return change > 0 ? "+∞ %" : "-∞ %" }
        return (change > 0 ? "+" : "") + MetricFormat.decimal(change, places: 1) + " %"
    }

    static func verdictText(_ row: Row) -> String {
        switch row.verdict {
        case .better: return "better"
        case .same: return "same"
        case .worse:
            if let p = row.pValue { return "worse (within noise, p = \(MetricFormat.decimal(p, places: 3)))" }
            return "worse"
        case .regression: return "REGRESSION"
        case .incomparable: return "not comparable"
        case .tooFewSamples:
            let samples = [row.baselineSamples, row.candidateSamples].compactMap { $0 }.map(String.init)
            return "too few samples (\(samples.joined(separator: " and ")); \(row.metric.split(separator: ".").last ?? "") "
                + "needs \(row.minimumSamples ?? 0))"
        }
    }

    /// The rows a table shows: every row with `all`, else the key ones and every regression (a mean or p90 that
    /// regressed is named in the summary, so it is in the table too); regressions first, else in report order.
    public func shownRows(all: Bool = false) -> [Row] {
        let shown = all ? rows : rows.filter { $0.isKey || $0.verdict == .regression }
        return shown.filter { $0.verdict == .regression } + shown.filter { $0.verdict != .regression }
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

    func hiddenNote(all: Bool) -> String? {
        let hidden = rows.count - shownRows(all: all).count
        return hidden > 0 ? "\(hidden) more row\(hidden == 1 ? "" : "s") (mean, p90, p999 of each latency) with --all." : nil
    }

    /// A plain-text table for the terminal.
    public func table(all: Bool = false) -> String {
        let shown = shownRows(all: all)
        let header = ["metric", "unit", "baseline", "candidate", "change", "verdict"]
        let body = shown.map {
            [$0.metric, $0.unit, Self.value($0.baseline), Self.value($0.candidate), Self.change($0), Self.verdictText($0)]
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
        text += likeForLikeLine + "\n"
        let width = differences.map(\.what.count).max() ?? 0
        for difference in differences {
            text += "  " + difference.what.padding(toLength: width, withPad: " ", startingAt: 0)
                + "  \(difference.baseline) -> \(difference.candidate)\n"
        }
        if let caution { text += caution + "\n" }
        text += "\n"
        text += format(header) + "\n"
        text += format(widths.map { String(repeating: "-", count: $0) }) + "\n"
        for line in body { text += format(line) + "\n" }
        text += "\n" + summary + "\n"
        if let note = hiddenNote(all: all) { text += note + "\n" }
        return text
    }

    /// A Markdown table for a CI comment (cells escaped for `|`).
    public func markdown(all: Bool = false) -> String {
        func cell(_ text: String) -> String {
            text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
        }
        var text = "### fleetbench compare\n\n"
        text += "Baseline: `\(cell(baselineName))`  \nCandidate: `\(cell(candidateName))`\n\n"
        if isLikeForLike {
            text += cell(likeForLikeLine) + "\n\n"
        } else {
            text += "**" + cell(likeForLikeLine) + "**\n\n| differs | baseline | candidate |\n|---|---|---|\n"
            for difference in differences {
                text += "| \(cell(difference.what)) | `\(cell(difference.baseline))` | `\(cell(difference.candidate))` |\n"
            }
            text += "\n"
        }
        if let caution { text += "**" + cell(caution) + "**\n\n" }
        text += (hasRegression ? "**" + cell(summary) + "**" : cell(summary)) + "\n\n"
        text += "| metric | unit | baseline | candidate | change | verdict |\n"
        text += "|---|---|---:|---:|---:|---|\n"
        for row in shownRows(all: all) {
            let verdict = row.verdict == .regression ? "**regression**" : Self.verdictText(row)
            text += "| `\(cell(row.metric))` | \(cell(row.unit)) | \(Self.value(row.baseline)) | "
                + "\(Self.value(row.candidate)) | \(Self.change(row)) | \(cell(verdict)) |\n"
        }
        if let note = hiddenNote(all: all) { text += "\n" + note + "\n" }
        return text
    }

    /// JSON (`schema: "fleetbench.compare/2"`): like-for-like first, then every row (an infinite change is written
    /// as null with `"from_zero": true`; latency rows carry their sample counts and, when judged, `p_value`).
    public func jsonValue() -> JSONValue {
        .object([
            JSONMember("schema", .string("fleetbench.compare/2")),
            JSONMember("baseline", .string(baselineName)),
            JSONMember("candidate", .string(candidateName)),
            JSONMember("like_for_like", .bool(isLikeForLike)),
            JSONMember("caution", caution.map { .string($0) } ?? .null),
            JSONMember("differences", .array(differences.map {
                .object([JSONMember("what", .string($0.what)), JSONMember("baseline", .string($0.baseline)),
                         JSONMember("candidate", .string($0.candidate))])
            })),
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
                if let samples = row.baselineSamples { members.append(JSONMember("baseline_samples", .integer(Int64(samples)))) }
                if let samples = row.candidateSamples { members.append(JSONMember("candidate_samples", .integer(Int64(samples)))) }
                if let needed = row.minimumSamples { members.append(JSONMember("minimum_samples", .integer(Int64(needed)))) }
                if let p = row.pValue { members.append(JSONMember("p_value", .real(p))) }
                members.append(JSONMember("key", .bool(row.isKey)))
                members.append(JSONMember("verdict", .string(row.verdict.rawValue)))
                return .object(members)
            })),
        ])
    }

    public func json() -> String { JSONWriter.string(from: jsonValue()) }
}
