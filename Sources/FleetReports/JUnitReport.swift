import Foundation
import FleetMetrics

/// junit.xml: one `<testsuite>` for the run's scenario, one `<testcase>` per threshold (a `<failure>` with the
/// observed value against the limit when it failed), and a first testcase "run completed" that fails when the run
/// was interrupted, so a CI system always shows at least one test.
public enum JUnitReport {
    public static let runCompletedName = "run completed"

    public static func render(_ report: RunReport) -> String {
        let suiteName = report.scenario.name.isEmpty ? "fleetbench" : report.scenario.name
        let className = "fleetbench." + suiteName
        var cases: [String] = []
        var failures = 0

        var runCase = "    <testcase name=\"\(runCompletedName)\" classname=\"\(XML.escape(className))\""
            + " time=\"\(XML.seconds(report.run.durationSeconds))\""
        if report.run.interrupted {
            failures += 1
            let message = "the run was interrupted after \(XML.seconds(report.run.durationSeconds)) s"
            runCase += ">\n      <failure message=\"\(XML.escape(message))\" type=\"interrupted\">"
                + XML.escape(message) + "</failure>\n    </testcase>"
        } else {
            runCase += "/>"
        }
        cases.append(runCase)

        for threshold in report.thresholds {
            var text = "    <testcase name=\"\(XML.escape(threshold.expression))\" classname=\"\(XML.escape(className))\" time=\"0\""
            if threshold.passed {
                text += "/>"
            } else {
                failures += 1
                let message = failureMessage(threshold)
                var body = message
                if let detail = threshold.detail, !detail.isEmpty { body += "\n" + detail }
                text += ">\n      <failure message=\"\(XML.escape(message))\" type=\"threshold\">"
                    + XML.escape(body) + "</failure>\n    </testcase>"
            }
            cases.append(text)
        }

        let tests = cases.count
        let time = XML.seconds(report.run.durationSeconds)
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"fleetbench\" tests=\"\(tests)\" failures=\"\(failures)\" errors=\"0\" time=\"\(time)\">\n"
        xml += "  <testsuite name=\"\(XML.escape(suiteName))\" tests=\"\(tests)\" failures=\"\(failures)\" errors=\"0\""
            + " skipped=\"0\" time=\"\(time)\" timestamp=\"\(XML.escape(RunReport.rfc3339(report.run.startedAt)))\""
            + " hostname=\"\(XML.escape(report.environment.hostname))\">\n"
        xml += "    <properties>\n"
        let properties: [(String, String)] = [
            ("scenario.file", report.scenario.file), ("scenario.sha256", report.scenario.sha256),
            ("run.seed", String(report.run.seed)), ("run.interrupted", String(report.run.interrupted)),
            ("brokers", report.brokers.joined(separator: " ")), ("fleetbench.version", report.toolVersion),
        ]
        for (name, value) in properties {
            xml += "      <property name=\"\(XML.escape(name))\" value=\"\(XML.escape(value))\"/>\n"
        }
        xml += "    </properties>\n"
        for text in cases { xml += text + "\n" }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    /// `observed 61.234 ms, limit 50 ms (latency.end_to_end.p99 < 50ms)`, or why nothing was observed.
    public static func failureMessage(_ threshold: ThresholdResult) -> String {
        let limit = threshold.limit.map { MetricFormat.format($0, metric: threshold.metric) } ?? "?"
        guard let observed = threshold.observed else {
            return "not observed: the run produced no \(threshold.metric) (limit \(limit); \(threshold.expression))"
        }
        return "observed \(MetricFormat.format(observed, metric: threshold.metric)), limit \(limit)"
            + " (\(threshold.expression))"
    }
}

/// XML text helpers.
enum XML {
    /// Escapes the five XML specials and drops characters XML 1.0 forbids (control characters other than tab,
    /// line feed and carriage return), so any scenario name yields a well-formed document.
    static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&apos;"
            case "\t", "\n", "\r": output.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF { continue }
                output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    static func seconds(_ value: Double) -> String {
        value.isFinite ? String(format: "%.3f", value) : "0"
    }
}

/// Formats metric values in their natural unit for people: times (nanoseconds in thresholds) as ms, ratios as %.
public enum MetricFormat {
    /// Whether a threshold metric path is a time in nanoseconds (by the metric catalog).
    public static func isTime(_ metric: String) -> Bool { MetricCatalog.unit(of: metric) == .time }

    public static func isRatio(_ metric: String) -> Bool { MetricCatalog.unit(of: metric) == .ratio }

    /// A threshold value (base unit: ns for times, fraction for ratios) as text with its unit.
    public static func format(_ value: Double, metric: String) -> String {
        if isTime(metric) { return decimal(value / 1_000_000, places: 3) + " ms" }
        if isRatio(metric) { return decimal(value * 100, places: 4) + " %" }
        return decimal(value, places: 3)
    }

    /// Up to `places` decimals, trailing zeros removed.
    public static func decimal(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "NaN" : (value > 0 ? "∞" : "-∞") }
        var text = String(format: "%.\(places)f", value)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }

    /// An integer with thousands separators: 1,234,567.
    public static func grouped(_ value: UInt64) -> String {
        let digits = String(value)
        var output = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { output += "," }
            output.append(character)
        }
        return output
    }

    /// Bytes as KiB/MiB/GiB.
    public static func bytes(_ value: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1024 && unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return unit == 0 ? "\(value) B" : decimal(amount, places: 1) + " " + units[unit]
    }
}
