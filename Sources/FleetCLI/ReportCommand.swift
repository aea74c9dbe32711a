import FleetReports
import Foundation

/// `fleetbench report DIR`: re-renders report.html, junit.xml and timeline.csv from DIR/report.json alone (after an upgrade of
/// fleetbench, or for a report.json copied from another machine).
struct ReportCommand: FleetCommand {
    static let help = """
        Usage: fleetbench report DIR

        Reads DIR/report.json (or the report.json file named directly) and writes report.html, junit.xml and
        timeline.csv beside it again, e.g. fleetbench report reports/quickstart-20261129-152033.
        latency.hlog is left as it is.

        Options:
          -h, --help          show this help

        Exit codes: 0 written, 2 usage error, 65 report.json missing or unreadable, 1 the files could not be written.
        """

    var directory: String

    /// Parses the arguments after `report`; nil for --help.
    static func parse(_ arguments: [String]) throws(UsageError) -> ReportCommand? {
        var paths: [String] = []
        var scanner = ArgumentScanner(arguments, command: "report", help: help)
        while let option = try scanner.next() {
            switch option {
            case "-h", "--help": return nil
            default: try scanner.positional(into: &paths)
            }
        }
        guard paths.count == 1 else {
            throw UsageError(paths.isEmpty ? "report needs a results folder" : "report takes one results folder, got \(paths.count)")
        }
        return ReportCommand(directory: paths[0])
    }

    func run(console: Console) -> ExitCode {
        // A report.json named directly is accepted too.
        var folder = directory
        if folder.hasSuffix("/" + ReportWriter.jsonName) || folder == ReportWriter.jsonName {
            folder = String(folder.dropLast(ReportWriter.jsonName.count))
            if folder.isEmpty { folder = "." }
        }
        let report: RunReport
        do {
            report = try RunReport.load(path: ReportWriter.path(in: folder, ReportWriter.jsonName))
        } catch {
            console.error("fleetbench report: \(error.message)")
            return .invalidScenario  // 65, EX_DATAERR: the input file is unusable.
        }
        do {
            try ReportWriter.rerender(report, directory: folder)
        } catch {
            console.error("fleetbench report: \(error.message)")
            return .runtimeFailure
        }
        console.print("\(report.passed ? "passed" : "FAILED"): \(report.scenario.name)")
        console.print("wrote \(ReportWriter.path(in: folder, ReportWriter.htmlName)), "
            + "\(ReportWriter.path(in: folder, ReportWriter.junitName)) and "
            + ReportWriter.path(in: folder, ReportWriter.timelineName))
        return .success
    }
}
