import FleetReports
import Foundation

/// Writes a run's results folder: report.json, report.html, junit.xml, latency.hlog.
enum ResultsFolder {
    static func write(_ report: RunReport, to directory: String) throws {
        try ReportWriter.write(report, to: directory)
    }

    /// The folder as an absolute path, `.` and `..` resolved: a relative `reports/…` printed at the end of a run
    /// is lost on whoever started fleetbench from another folder, or reads its log later.
    static func absolute(_ path: String, from currentDirectory: String = FileManager.default.currentDirectoryPath) -> String {
        let joined = path.hasPrefix("/") ? path : currentDirectory + "/" + path
        var components: [Substring] = []
        for component in joined.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }
}
