import FleetJSON
import FleetMetrics
import FleetReports
import FleetScenario

/// The readers of hand-written or on-disk text: each must turn any bytes into a value or an error that says
/// what is wrong, never a trap.
enum TextInputFuzz {
    /// JSON text → a scenario, or diagnostics (at least one, each with a message).
    static func scenario(_ bytes: UnsafeRawBufferPointer) {
        let document: JSONDocument
        do {
            document = try JSONDocument.parse(bytes: Array(bytes), file: "fuzz.json")
        } catch {
            guard !error.message.isEmpty else { preconditionFailure("a JSON error without a message") }
            return
        }
        do {
            let scenario = try Scenario.decode(document: document)
            _ = scenario.fleets.count
        } catch {
            guard !error.diagnostics.isEmpty else { preconditionFailure("a refused scenario without diagnostics") }
            for diagnostic in error.diagnostics where diagnostic.message.isEmpty {
                preconditionFailure("a diagnostic without a message at \(diagnostic.location)")
            }
        }
    }

    /// A threshold expression → a threshold that evaluates, or an error pointing inside the expression.
    static func threshold(_ bytes: UnsafeRawBufferPointer) {
        let text = String(decoding: bytes, as: UTF8.self)
        switch Threshold.parse(text) {
        case .success(let threshold):
            guard !threshold.metric.isEmpty else {
                preconditionFailure("accepted a threshold without a metric: \(text)")
            }
            for observed in [0, -1, 1e300, .nan, .infinity, threshold.value] {
                _ = threshold.evaluate { _ in observed }
            }
            _ = threshold.evaluate { _ in nil }
        case .failure(let error):
            guard error.column >= 1, error.column <= text.count + 1, !error.message.isEmpty else {
                preconditionFailure("error \(error) for \(text.count) characters")
            }
        }
    }

    /// report.json text → a report that renders (HTML, JUnit) and writes back to JSON that reads again.
    static func reportJSON(_ bytes: UnsafeRawBufferPointer) {
        let report: RunReport
        do {
            report = try RunReport.parse(text: String(decoding: bytes, as: UTF8.self))
        } catch {
            guard !error.message.isEmpty else { preconditionFailure("a report error without a message") }
            return
        }
        _ = ReportHTML.render(report)
        _ = JUnitReport.render(report)
        do {
            let text = try report.jsonText()
            _ = try RunReport.parse(text: text)
        } catch {
            preconditionFailure("a report that was read writes JSON that does not read again: \(error)")
        }
    }

    /// latency.hlog text → intervals whose histograms merge and answer percentiles, or a line-numbered error.
    static func histogramLog(_ bytes: UnsafeRawBufferPointer) {
        let log: HistogramLog
        do {
            log = try HistogramLog(parsing: String(decoding: bytes, as: UTF8.self))
        } catch {
            _ = error.description
            return
        }
        for tag in [nil] + log.tags.map(Optional.some) {
            let merged = log.merged(tag: tag)
            for percentile in [0.0, 50, 99.9, 100] { _ = merged.valueAtPercentile(percentile) }
        }
    }
}
