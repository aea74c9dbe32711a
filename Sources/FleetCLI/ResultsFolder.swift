import FleetReports
import Foundation

/// Writes a run's results folder. Until the full report writer lands this writes what exists.
enum ResultsFolder {
    static func write(_ report: RunReport, to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
}
