import FleetPayload
import FleetMetrics

public enum ComparisonOperator: String, Equatable, Sendable, CaseIterable {
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case equal = "=="
    case notEqual = "!="

    public func compare(_ left: Double, _ right: Double) -> Bool {
        switch self {
        case .less: return left < right
        case .lessOrEqual: return left <= right
        case .greater: return left > right
        case .greaterOrEqual: return left >= right
        case .equal: return left == right
        case .notEqual: return left != right
        }
    }
}

/// A pass/fail condition on a result metric, e.g. `latency.end_to_end.p99 < 50ms`. Grammar in scenarios/README.md.
public struct Threshold: Equatable, Sendable, CustomStringConvertible {
    /// The expression as written.
    public var source: String
    public var metric: String
    public var unit: MetricUnit
    public var comparison: ComparisonOperator
    /// In the metric's base unit: nanoseconds for time, a fraction for ratios.
    public var value: Double

    public var description: String { source }

    /// The outcome for one metric lookup; a metric the run did not produce fails.
    public func evaluate(_ lookup: (String) -> Double?) -> ThresholdOutcome {
        guard let observed = lookup(metric) else { return ThresholdOutcome(threshold: self, observed: nil, passed: false) }
        return ThresholdOutcome(threshold: self, observed: observed, passed: comparison.compare(observed, value))
    }

    /// Parses an expression; errors carry the 1-based column in the expression.
    public static func parse(_ text: String) -> Result<Threshold, ThresholdError> {
        let characters = Array(text)
        var index = 0
        func skipSpaces() { while index < characters.count, characters[index] == " " || characters[index] == "\t" { index += 1 } }
        func fail(_ at: Int, _ message: String) -> Result<Threshold, ThresholdError> {
            .failure(ThresholdError(column: at + 1, message: message))
        }
        skipSpaces()
        let metricStart = index
        while index < characters.count, characters[index].isLetter || characters[index].isNumber
            || characters[index] == "." || characters[index] == "_"
        {
            index += 1
        }
        let metric = String(characters[metricStart..<index])
        if metric.isEmpty {
            return fail(metricStart, "expected a metric name such as latency.end_to_end.p99")
        }
        guard let entry = MetricCatalog.metric(metric), entry.threshold else {
            return fail(metricStart, unknownMetricMessage(metric))
        }
        if case .never(let reason) = entry.source {
            return fail(metricStart, "no run produces \(metric): \(reason)" + suggestion(for: metric))
        }
        let unit = entry.unit
        skipSpaces()
        let operatorStart = index
        while index < characters.count, "<>=!".contains(characters[index]) { index += 1 }
        let operatorText = String(characters[operatorStart..<index])
        guard let comparison = ComparisonOperator(rawValue: operatorText) else {
            let shown = operatorText.isEmpty ? (operatorStart < characters.count ? "'\(characters[operatorStart])'" : "end of text") : "'\(operatorText)'"
            return fail(operatorStart, "expected an operator (<, <=, >, >=, ==, !=), found \(shown)")
        }
        skipSpaces()
        let numberStart = index
        if index < characters.count, characters[index] == "-" || characters[index] == "+" { index += 1 }
        while index < characters.count, characters[index].isASCII, characters[index].isNumber || characters[index] == "." {
            index += 1
        }
        // An exponent such as 1e6, only when digits follow the e.
        if index + 1 < characters.count, characters[index] == "e" || characters[index] == "E",
            characters[index + 1].isASCII, characters[index + 1].isNumber
        {
            index += 1
            while index < characters.count, characters[index].isASCII, characters[index].isNumber { index += 1 }
        }
        let numberText = String(characters[numberStart..<index])
        guard let number = Double(numberText), number.isFinite else {
            let shown = numberStart < characters.count ? "'\(String(characters[numberStart...]))'" : "end of text"
            return fail(numberStart, "expected a number, found \(shown)")
        }
        let unitStart = index
        while index < characters.count, characters[index] != " " && characters[index] != "\t" { index += 1 }
        let unitText = String(characters[unitStart..<index])
        skipSpaces()
        if index < characters.count {
            return fail(index, "unexpected '\(String(characters[index...]))' after the value")
        }
        let value: Double
        switch unit {
        case .time:
            if unitText.isEmpty {
                return fail(unitStart, "\(metric) is a time; add a unit (ns, us, ms, s, m, h), e.g. \(numberText)ms")
            }
            guard let factor = TimeSpan.units.first(where: { $0.name == unitText })?.nanoseconds else {
                return fail(unitStart, "unknown time unit '\(unitText)'; expected ns, us, ms, s, m or h")
            }
            value = number * factor
        case .ratio:
            if unitText.isEmpty {
                value = number
            } else if unitText == "%" {
                value = number / 100
            } else {
                return fail(unitStart, "\(metric) is a ratio; write a plain number or a percentage such as 0.1%, not '\(unitText)'")
            }
        case .number, .text:
            if !unitText.isEmpty {
                return fail(unitStart, "\(metric) is a plain number; remove the unit '\(unitText)'")
            }
            value = number
        }
        return .success(Threshold(source: text, metric: metric, unit: unit, comparison: comparison, value: value))
    }

    /// "; did you mean '…'?" with the closest metric a run can produce, or nothing.
    static func suggestion(for metric: String) -> String {
        let family = String(metric.prefix { $0 != "." })
        let candidates = MetricCatalog.all.filter { $0.threshold && $0.source.producible && $0.path.hasPrefix(family + ".") }
        return closestMatch(to: metric, among: candidates.map(\.path)).map { "; did you mean '\($0)'?" } ?? ""
    }

    static func unknownMetricMessage(_ metric: String) -> String {
        let parts = metric.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let families = MetricCatalog.families
        guard let family = parts.first, families.contains(family) else {
            var message = "unknown metric '\(metric)'"
            if let first = parts.first, let suggestion = closestMatch(to: first, among: families) {
                message += "; did you mean '\(suggestion)'?"
            } else {
                message += "; metrics start with one of: " + families.joined(separator: ", ")
            }
            return message
        }
        let candidates = MetricCatalog.all.filter { $0.threshold && $0.source.producible }.map(\.path)
            .filter { $0.hasPrefix(family + ".") }
        var message = "unknown metric '\(metric)'"
        if let suggestion = closestMatch(to: metric, among: candidates) {
            message += "; did you mean '\(suggestion)'?"
        } else {
            message += "; see the metric table in scenarios/README.md"
        }
        return message
    }
}

public struct ThresholdError: Error, Equatable, Sendable, CustomStringConvertible {
    /// 1-based column in the expression.
    public var column: Int
    public var message: String
    public var description: String { "column \(column): \(message)" }
}

public struct ThresholdOutcome: Equatable, Sendable {
    public var threshold: Threshold
    /// nil when the run did not produce the metric.
    public var observed: Double?
    public var passed: Bool
}
