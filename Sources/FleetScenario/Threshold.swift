/// What a metric measures, which decides the units its threshold value may carry.
public enum MetricUnit: Equatable, Sendable {
    /// Nanoseconds; the value needs a time unit (ns, us, ms, s, m, h).
    case time
    /// A count or a rate; a plain number.
    case number
    /// A ratio 0...1; a plain number or a percentage (`0.1%` is 0.001).
    case ratio
}

/// The metric paths thresholds may name, as a table.
public enum MetricCatalog {
    public static let latencyKinds = [
        "tcp_connect", "tls_handshake", "ws_upgrade", "connack", "suback", "unsuback", "puback", "pubrec", "pubcomp",
        "pingresp", "end_to_end", "end_to_end_actual", "request_response",
    ]
    public static let latencyStatistics = ["p50", "p90", "p99", "p999", "max", "mean", "min", "count"]
    public static let deliveryFields = ["lost", "duplicated", "reordered", "received", "expected", "loss_ratio",
                                        "missed_while_offline", "untracked"]
    /// `delivery.<field>` over every QoS: arrivals outside the per-stream accounting.
    public static let deliveryTotalFields = ["foreign", "retained_on_subscribe", "missed_while_offline", "untracked"]
    public static let messageFields = ["published", "acked", "received"]
    public static let ackTimeoutKinds = ["connack", "suback", "unsuback", "puback", "pubrec", "pubcomp", "pingresp", "total"]
    public static let connectionFields = [
        "attempted", "succeeded", "failed", "failed_ratio", "reconnects", "peak_connected", "disconnects",
    ]
    public static let generatorFields = ["schedule_lag_p50", "schedule_lag_p99", "schedule_lag_max", "dropped"]
    public static let rateFields = ["published", "received"]
    public static let requestFields = ["sent", "answered", "timed_out"]

    /// Every valid metric path with its unit.
    public static let all: [(path: String, unit: MetricUnit)] = {
        var table: [(String, MetricUnit)] = []
        for kind in latencyKinds {
            for statistic in latencyStatistics {
                table.append(("latency.\(kind).\(statistic)", statistic == "count" ? .number : .time))
            }
        }
        for qos in 0...2 {
            for field in deliveryFields { table.append(("delivery.qos\(qos).\(field)", field == "loss_ratio" ? .ratio : .number)) }
            for field in messageFields { table.append(("messages.qos\(qos).\(field)", .number)) }
        }
        for field in deliveryTotalFields { table.append(("delivery.\(field)", .number)) }
        for kind in ackTimeoutKinds { table.append(("ack_timeouts.\(kind)", .number)) }
        for field in connectionFields { table.append(("connections.\(field)", field == "failed_ratio" ? .ratio : .number)) }
        for field in generatorFields { table.append(("generator.\(field)", field == "dropped" ? .number : .time)) }
        for field in rateFields { table.append(("rates.\(field)", .number)) }
        for field in requestFields { table.append(("requests.\(field)", .number)) }
        return table
    }()

    public static func unit(of path: String) -> MetricUnit? {
        all.first(where: { $0.path == path })?.unit
    }
}

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
        guard let unit = MetricCatalog.unit(of: metric) else {
            return fail(metricStart, unknownMetricMessage(metric))
        }
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
        case .number:
            if !unitText.isEmpty {
                return fail(unitStart, "\(metric) is a plain number; remove the unit '\(unitText)'")
            }
            value = number
        }
        return .success(Threshold(source: text, metric: metric, unit: unit, comparison: comparison, value: value))
    }

    static func unknownMetricMessage(_ metric: String) -> String {
        let parts = metric.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let families = ["latency", "delivery", "messages", "ack_timeouts", "connections", "generator", "rates", "requests"]
        guard let family = parts.first, families.contains(family) else {
            var message = "unknown metric '\(metric)'"
            if let first = parts.first, let suggestion = closestMatch(to: first, among: families) {
                message += "; did you mean '\(suggestion)'?"
            } else {
                message += "; metrics start with one of: " + families.joined(separator: ", ")
            }
            return message
        }
        let candidates = MetricCatalog.all.map(\.path).filter { $0.hasPrefix(family + ".") }
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
