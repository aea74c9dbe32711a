import FleetReports
import FleetScenario
import Foundation

/// `fleetbench compare BASELINE CANDIDATE [--tolerance 10%] [--latency-floor 1ms]
/// [--format table|markdown|json|html] [--all]`: whether the runs are like for like, then what got worse or better between them; exit 99 when something
/// regressed beyond the tolerance (for CI).
struct CompareCommand: FleetCommand {
    static let help = """
        Usage: fleetbench compare BASELINE CANDIDATE [MORE...] [--tolerance 10%] [--latency-floor 1ms]
                                  [--format table|markdown|json|html] [--output FILE] [--all]

        Compares two runs (report.json files, or results folders holding one). It says first what differs
        between the runs (scenario and its settings, brokers, fleetbench version, duration, seed, machine) and
        whether they are like for like, then compares latency percentiles, publish and receive rates, losses,
        duplicates, ack timeouts and connect failures. Each metric is better, same, worse (within the tolerance)
        or a regression (worse beyond it; any rise from zero in a count is a regression). A latency is a
        regression only when worse beyond the latency floor and beyond what chance explains between two runs;
        a percentile needs enough samples to exist (p99 100, p999 1,000), else it says "too few samples".
        With more than two runs (e.g. one per release: compare v1 v2 v3), each later run is compared with the
        first and the table shows them side by side, a trend; it exits 99 when any of them regressed.

        Options:
          --tolerance PCT     allowed worsening before a regression, in percent (default 10%)
          --latency-floor D   latency changes up to D are not regressions, whatever their percentage
                              (default 1ms, the engine's timing resolution; 0 disables)
          --format FORMAT     table (default), markdown (for a CI comment), json, or html: a self-contained
                              page with both runs' percentile curves overlaid per latency kind, their
                              connection and rate curves side by side, and the table, regressions first
          --output FILE       also write the comparison to FILE in the chosen format; with html, only
                              there (the table is printed), e.g. --format html --output compare.html
          --all               every row: also the mean, p90 and p999 of each latency (by default p50, p99,
                              max, counts, rates and any row that regressed; regressions first). JSON always
                              has every row
          -h, --help          show this help

        Exit codes: 0 no regression, 2 usage error, 65 a report missing or unreadable, 99 a regression beyond the
        tolerance.
        """

    enum Format: String {
        case table, markdown, json, html
    }

    var baseline: String
    var candidate: String
    /// Runs after the candidate: `compare A B C ...` compares each later run with the first (a trend).
    var later: [String] = []
    var tolerance: Double = 10
    var latencyFloorMilliseconds = ReportComparison.defaultLatencyFloorMilliseconds
    var format: Format = .table
    var output: String?
    var all = false

    /// Parses the arguments after `compare`; nil for --help.
    static func parse(_ arguments: [String]) throws(UsageError) -> CompareCommand? {
        var paths: [String] = []
        var tolerance = 10.0
        var latencyFloor = ReportComparison.defaultLatencyFloorMilliseconds
        var format = Format.table
        var output: String?
        var all = false
        var scanner = ArgumentScanner(arguments, command: "compare", help: help)
        while let option = try scanner.next() {
            switch option {
            case "-h", "--help": return nil
            case "--tolerance":
                let text = try scanner.value()
                guard let parsed = ReportComparison.parseTolerance(text) else {
                    throw UsageError("--tolerance needs a non-negative percentage such as 10% (got '\(text)')")
                }
                tolerance = parsed
            case "--latency-floor": latencyFloor = try parseLatencyFloor(try scanner.value())
            case "--format":
                let text = try scanner.value()
                guard let parsed = Format(rawValue: text) else {
                    throw UsageError("--format must be table, markdown, json or html (got '\(text)')")
                }
                format = parsed
            case "--output": output = try scanner.value()
            case "--all": all = true
            default: try scanner.positional(into: &paths)
            }
        }
        guard paths.count >= 2 else {
            throw UsageError("compare needs a baseline and a candidate report, got \(paths.count) path\(paths.count == 1 ? "" : "s")")
        }
        return CompareCommand(baseline: paths[0], candidate: paths[1], later: Array(paths.dropFirst(2)), tolerance: tolerance,
                              latencyFloorMilliseconds: latencyFloor, format: format, output: output, all: all)
    }

    /// `--latency-floor` (compare and run): `0` or a duration such as `500us` or `1ms`, in milliseconds.
    static func parseLatencyFloor(_ text: String) throws(UsageError) -> Double {
        if text == "0" { return 0 }
        guard case .success(let span) = TimeSpan.parse(text) else {
            throw UsageError("--latency-floor needs 0 or a duration such as 1ms, got '\(text)'")
        }
        return Double(span.nanoseconds) / 1e6
    }

    /// A report.json path, or a folder holding one.
    static func reportPath(_ path: String) -> String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return ReportWriter.path(in: path, ReportWriter.jsonName)
        }
        return path
    }

    func run(console: Console) -> ExitCode {
        var reports: [RunReport] = []
        do {
            for path in [baseline, candidate] + later { reports.append(try RunReport.load(path: Self.reportPath(path))) }
        } catch {
            console.error("fleetbench compare: \(error.message)")
            return .invalidScenario  // 65, EX_DATAERR: the input file is unusable.
        }
        if reports.count > 2 { return runTrend(reports, console: console) }
        let comparison = ReportComparison(baseline: reports[0], candidate: reports[1], tolerance: tolerance,
                                          latencyFloorMilliseconds: latencyFloorMilliseconds)
        let text: String
        switch format {
        case .table: text = comparison.table(all: all)
        case .markdown: text = comparison.markdown(all: all)
        case .json: text = comparison.json()
        case .html: text = ComparisonHTML.render(comparison, baseline: reports[0], candidate: reports[1], all: all)
        }
        return emit(text, table: comparison.table(all: all), regressed: comparison.hasRegression, console: console)
    }

    /// `compare A B C ...`: each later run against the first, side by side.
    func runTrend(_ reports: [RunReport], console: Console) -> ExitCode {
        let trend = TrendComparison(runs: reports, tolerance: tolerance, latencyFloorMilliseconds: latencyFloorMilliseconds)
        let text: String
        switch format {
        case .table: text = trend.table(all: all)
        case .markdown: text = trend.markdown(all: all)
        case .json: text = trend.json()
        case .html: text = ComparisonHTML.render(trend, runs: reports, all: all)
        }
        return emit(text, table: trend.table(all: all), regressed: trend.hasRegression, console: console)
    }

    /// Prints the comparison and writes it to --output. A page is for a browser: with --output it goes only
    /// there and the terminal gets the table.
    private func emit(_ text: String, table: String, regressed: Bool, console: Console) -> ExitCode {
        if format == .html, let output {
            console.write(table + "wrote \(output)\n", to: console.outputDescriptor)
        } else {
            console.write(text, to: console.outputDescriptor)
        }
        if let output {
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                console.error("fleetbench compare: cannot write \(output): \(error.localizedDescription)")
                return .runtimeFailure
            }
        }
        return regressed ? .thresholdsFailed : .success
    }
}
