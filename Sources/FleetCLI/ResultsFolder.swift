import FleetReports
import Foundation

/// Writes a run's results folder: report.json, report.html, junit.xml, latency.hlog.
enum ResultsFolder {
    static func write(_ report: RunReport, to directory: String) throws {
        try ReportWriter.write(report, to: directory)
    }
}
