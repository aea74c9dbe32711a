import FleetBroker
import FleetJSON
import FleetReports
import FleetScenario
import Foundation

/// `fleetbench capacity SCENARIO --vary PATH=LOW..HIGH`: the highest level of one scenario value at which the
/// thresholds still hold. Each level is a `run` of its own (its results folder under the capacity folder), after
/// a warm-up run on the same broker; an embedded mosquitto is started afresh for every level.
struct CapacityCommand: FleetCommand {
    static let help = """
        Usage: fleetbench capacity SCENARIO --vary PATH=LOW..HIGH [options]

        Finds the highest level of one scenario value at which the thresholds still hold: a coarse ramp (LOW,
        2xLOW, 4xLOW, ... up to HIGH) until a level fails, then a bisection between the highest passing and the
        lowest failing level. Each level is a short run of its own on a fresh broker session: a warm-up run,
        then the measured run, on an embedded mosquitto started afresh for the level (or on --broker).
        Prints a table as it goes and writes capacity.json, capacity.html and every level's results folder.

        Options:
          --vary PATH=LOW..HIGH   the value to vary, a path as --set takes it, e.g.
                                  fleets.vehicles.count=100..5000 or
                                  fleets.vehicles.publish.telemetry.schedule.per_second=10..1000;
                                  whole numbers unless LOW or HIGH has decimals
          --until "THRESHOLD"     a threshold every passing level must hold (repeatable), e.g.
                                  --until "latency.end_to_end.p99 < 50ms"; replaces the scenario's
                                  thresholds (default: the scenario's own)
          --step-duration D       how long each level publishes after its clients are connected
                                  (default 10s)
          --warm-up D             a run at the level before the measured one, on the same broker, for
                                  D after its clients are connected (default 2s; 0 for none)
          --precision PCT         stop bisecting once the passing and failing levels are at most PCT of
                                  the passing level apart (default 5%); whole numbers stop at a gap of 1
          --max-levels N          try at most N levels (default 20)
          --broker URL[,URL...]   brokers to use instead of the scenario's (mqtt://host:port); not restarted
          --set path=value        override another scenario value (repeatable), as for run
          --seed N                seed of every random choice (same as --set seed=N)
          --out DIR               capacity folder (default reports/<scenario>-capacity-<UTC yyyymmdd-hhmmss>)
          --quiet                 print only the result line
          -h, --help              show this help

        Exit codes: 0 a passing level was found (capacity.json's max_passing), 1 runtime failure (a level could
        not run, interrupted), 2 usage error, 65 invalid scenario, 99 even LOW failed.
        """

    var scenarioPath = ""
    var varyPath = ""
    var varyText = ""
    var low = 0.0
    var high = 0.0
    var wholeNumbers = true
    var until: [String] = []
    var stepDuration = TimeSpan.seconds(10)
    var warmUp = TimeSpan.seconds(2)
    var precision = 0.05
    var maxLevels = 20
    var brokers: [String] = []
    var overrides: [String] = []
    var outputDirectory: String?
    var quiet = false

    static func parse(_ arguments: [String]) throws(UsageError) -> CapacityCommand? {
        var command = CapacityCommand()
        var scanner = ArgumentScanner(arguments, command: "capacity", help: help)
        func duration(allowZero: Bool) throws(UsageError) -> TimeSpan {
            try scanner.value("a duration such as 10s or 1m") { text in
                if allowZero && text == "0" { return .zero }
                guard let span = try? TimeSpan.parse(text).get(), span.nanoseconds > 0 || allowZero else { return nil }
                return span
            }
        }
        var positional: [String] = []
        var varied = false
        while let option = try scanner.next() {
            switch option {
            case "-h", "--help": return nil
            case "--vary":
                guard !varied else { throw UsageError("capacity varies one value: give --vary once") }
                varied = true
                try command.setVary(try scanner.value())
            case "--until":
                let text = try scanner.value()
                if case .failure(let problem) = Threshold.parse(text) {
                    throw UsageError("--until '\(text)': \(problem)")
                }
                command.until.append(text)
            case "--step-duration": command.stepDuration = try duration(allowZero: false)
            case "--warm-up": command.warmUp = try duration(allowZero: true)
            case "--precision":
                command.precision = try scanner.value("a percentage from 0 to below 100 such as 5%") { text in
                    ReportComparison.parseTolerance(text).flatMap { $0 < 100 ? $0 / 100 : nil }
                }
            case "--max-levels":
                command.maxLevels = try scanner.value("a whole number from 1 to 100") { Int($0).flatMap { (1...100).contains($0) ? $0 : nil } }
            case "--broker": command.brokers += try scanner.value().split(separator: ",").map(String.init)
            case "--set": command.overrides.append(try scanner.value())
            case "--seed": command.overrides.append("seed=" + (try scanner.value()))
            case "--out": command.outputDirectory = try scanner.value()
            case "--quiet": command.quiet = true
            default: try scanner.positional(into: &positional)
            }
        }
        guard positional.count == 1 else {
            throw UsageError(positional.isEmpty ? "capacity needs a scenario file" : "capacity takes one scenario file, got \(positional.count)")
        }
        guard varied else { throw UsageError("capacity needs --vary PATH=LOW..HIGH, e.g. --vary fleets.vehicles.count=100..5000") }
        command.scenarioPath = positional[0]
        return command
    }

    /// `PATH=LOW..HIGH`: both numbers above 0, LOW <= HIGH.
    mutating func setVary(_ text: String) throws(UsageError) {
        let example = "e.g. --vary fleets.vehicles.count=100..5000"
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
            throw UsageError("--vary needs PATH=LOW..HIGH, \(example); got '\(text)'")
        }
        let path = String(text[..<equals])
        let range = text[text.index(after: equals)...]
        let bounds = range.components(separatedBy: "..")
        guard bounds.count == 2, let low = Double(bounds[0]), let high = Double(bounds[1]), low.isFinite, high.isFinite else {
            throw UsageError("--vary needs a range LOW..HIGH of two numbers after '=', \(example); got '\(range)'")
        }
        guard low > 0, high >= low else {
            throw UsageError("--vary needs 0 < LOW <= HIGH, got \(bounds[0])..\(bounds[1])")
        }
        varyPath = path
        varyText = text
        self.low = low
        self.high = high
        wholeNumbers = low == low.rounded() && high == high.rounded() && !bounds.contains { $0.contains(".") || $0.contains("e") }
    }

    /// The `--set` value of a level: `1500`, `2.5`.
    func levelText(_ level: Double) -> String { CapacityHTML.format(level) }

    /// Every override of a level's runs: the user's, the varied value, the thresholds given with --until.
    func overrides(level: Double) -> [String] {
        var all = overrides
        all.append("\(varyPath)=\(levelText(level))")
        if !until.isEmpty {
            all.append("thresholds=" + JSONWriter.string(from: .array(until.map { .string($0) }), style: .compact))
        }
        return all
    }

    /// How long the scenario's ramps take at this level: publishing starts once every client is connected.
    static func connectSeconds(_ scenario: Scenario) -> TimeSpan {
        var total: UInt64 = 0
        for stage in scenario.stages {
            if case .rampUp = stage.kind { total += stage.duration.nanoseconds }
        }
        return TimeSpan(nanoseconds: total)
    }

    func run(console: Console) -> ExitCode {
        guard FileManager.default.isReadableFile(atPath: scenarioPath) else {
            console.error("\(scenarioPath): cannot read the file (does it exist?)")
            return .invalidScenario
        }
        // Both ends of the range must make a valid scenario (and the varied path must exist) before anything runs.
        var scenarios: [Scenario] = []
        for level in [low, high] {
            do {
                scenarios.append(try Scenario.load(path: scenarioPath, overrides: overrides(level: level),
                                                   environment: ProcessInfo.processInfo.environment))
            } catch {
                console.error(error.description)
                return .invalidScenario
            }
            if let refusal = ScenarioRouteCheck.diagnostic(scenarios[scenarios.count - 1], file: scenarioPath) {
                console.error(refusal)
                return .invalidScenario
            }
        }
        let scenario = scenarios[0]
        if scenarios[0] == scenarios[1] && low != high {
            console.error("fleetbench capacity: --vary \(varyPath): the scenario is the same at \(levelText(low)) and "
                + "\(levelText(high)); vary a value the scenario uses (e.g. a fleet's count or a stream's per_second)")
            return .usage
        }
        guard !scenario.thresholds.isEmpty else {
            console.error("fleetbench capacity: \(scenarioPath) has no thresholds: give what must hold with --until, "
                + "e.g. --until \"latency.end_to_end.p99 < 50ms\"")
            return .usage
        }
        let embedded = brokers.isEmpty && scenario.usesEmbeddedBroker
        if embedded, scenario.fleets.contains(where: { ($0.transport ?? .tcp) != .tcp }) {
            console.error("fleetbench capacity: the embedded broker of a capacity search serves plain MQTT only; "
                + "give --broker for TLS or WebSocket fleets")
            return .runtimeFailure
        }
        let startedAt = Date()
        let directory = ResultsFolder.absolute(outputDirectory ?? "reports/\(scenario.name)-capacity-\(RunCommand.timestamp(startedAt))")
        if let problem = ResultsFolder.writabilityProblem(directory) {
            console.error("fleetbench: cannot write results to \(directory): \(problem); nothing was run")
            return .runtimeFailure
        }
        let control = RunControl()
        control.installSignalHandlers(console: console)
        let brokerText = embedded ? "embedded" : (brokers.isEmpty ? scenario.brokers.map { RunCommand.redactedURL($0.url) } : brokers.map(RunCommand.redactedURL))
            .joined(separator: ", ")
        var report = CapacityReport(
            toolVersion: FleetVersion.current, scenario: scenario.name, scenarioFile: scenarioPath, startedAt: startedAt,
            vary: varyText, low: low, high: high, thresholds: scenario.thresholds.map(\.source),
            stepSeconds: stepDuration.seconds, warmUpSeconds: warmUp.seconds, broker: brokerText)
        let table = CapacityTable(thresholds: report.thresholds)
        if !quiet {
            console.print("fleetbench \(FleetVersion.current): capacity of \(scenario.name), varying \(varyPath) from "
                + "\(levelText(low)) to \(levelText(high)); each level \(stepDuration) after a \(warmUp) warm-up, against "
                + (embedded ? "a fresh embedded mosquitto per level" : brokerText))
            console.print("thresholds: " + report.thresholds.joined(separator: ", "))
            console.print(table.header)
        }

        var search = CapacitySearch(low: low, high: high, wholeNumbers: wholeNumbers, precision: precision, maxLevels: maxLevels)
        let clock = Date()
        var failure: String?
        while let level = search.next() {
            let phase = search.phase == .bisect ? "bisect" : "ramp"
            let folder = directory + String(format: "/level-%02d-", report.levels.count + 1) + levelText(level)
            switch runLevel(level, folder: folder, embedded: embedded) {
            case .success(let levelReport):
                let entry = CapacityLevel(level: level, phase: phase, report: levelReport, results: folder)
                report.levels.append(entry)
                search.record(level, passed: entry.passed)
                if !quiet { console.print(table.row(report.levels.count, entry)) }
            case .failure(let problem):
                failure = problem.description
            }
            if failure == nil && control.stopRequested { failure = "interrupted" }
            if failure != nil { break }
        }
        report.maxPassing = search.maxPassing
        report.minFailing = search.minFailing
        report.elapsedSeconds = Date().timeIntervalSince(clock)
        report.stoppedEarly = failure
        do {
            try report.write(to: directory)
        } catch {
            console.error("fleetbench: cannot write \(directory)/\(CapacityReport.jsonName): \(error)")
            return .runtimeFailure
        }
        if let failure {
            console.error("fleetbench capacity: stopped: \(failure)")
        }
        let result: String
        if let maxPassing = report.maxPassing {
            result = "max passing \(varyPath) = \(levelText(maxPassing))"
                + (report.minFailing.map { " (lowest failing \(levelText($0)))" } ?? " (HIGH passed: the knee is above \(levelText(high)))")
        } else if report.levels.isEmpty {
            result = "no level finished"
        } else {
            result = "even LOW (\(levelText(low))) failed"
        }
        console.print("capacity: \(result) after \(report.levels.count) level\(report.levels.count == 1 ? "" : "s") in "
            + String(format: "%.0f", report.elapsedSeconds) + " s")
        console.print("results: \(directory)/\(CapacityReport.jsonName), \(directory)/\(CapacityReport.htmlName)")
        if failure != nil { return .runtimeFailure }
        return report.maxPassing == nil ? .thresholdsFailed : .success
    }

    /// One level: a fresh embedded broker (when the scenario has none), the warm-up run, the measured run.
    /// Its report, or why it could not run. Each run's own output goes to run.log in its folder.
    func runLevel(_ level: Double, folder: String, embedded: Bool) -> Result<RunReport, LevelFailure> {
        if let problem = ResultsFolder.writabilityProblem(folder) { return .failure(LevelFailure("cannot write \(folder): \(problem)")) }
        let levelOverrides = overrides(level: level)
        let scenario: Scenario
        do {
            scenario = try Scenario.load(path: scenarioPath, overrides: levelOverrides, environment: ProcessInfo.processInfo.environment)
        } catch {
            return .failure(LevelFailure("level \(levelText(level)): \(error.description)"))
        }
        var broker: MosquittoBroker?
        defer { broker?.stop() }
        var runBrokers = brokers
        if embedded {
            var configuration = MosquittoConfiguration()
            configuration.connectionMessages = false
            do {
                broker = try MosquittoBroker(configuration: configuration)
            } catch {
                return .failure(LevelFailure("cannot start the embedded broker: \(error)"))
            }
            runBrokers = [broker!.url]
        }
        let connect = Self.connectSeconds(scenario)
        if warmUp.nanoseconds > 0 {
            let code = runOnce(overrides: levelOverrides, brokers: runBrokers, folder: folder + "/warm-up",
                               duration: TimeSpan(nanoseconds: connect.nanoseconds + warmUp.nanoseconds))
            // The warm-up's thresholds do not count; only a run that could not run at all stops the search.
            if code != .success && code != .thresholdsFailed {
                return .failure(LevelFailure("level \(levelText(level)): the warm-up run exited \(code.rawValue) (see \(folder)/warm-up/run.log)"))
            }
        }
        let code = runOnce(overrides: levelOverrides, brokers: runBrokers, folder: folder,
                           duration: TimeSpan(nanoseconds: connect.nanoseconds + stepDuration.nanoseconds))
        guard code == .success || code == .thresholdsFailed else {
            return .failure(LevelFailure("level \(levelText(level)): the run exited \(code.rawValue) (see \(folder)/run.log)"))
        }
        do {
            return .success(try RunReport.load(path: ReportWriter.path(in: folder, ReportWriter.jsonName)))
        } catch {
            return .failure(LevelFailure("level \(levelText(level)): cannot read its report: \(error)"))
        }
    }

    /// One `fleetbench run` in this process, its console output in `folder`/run.log.
    func runOnce(overrides: [String], brokers: [String], folder: String, duration: TimeSpan) -> ExitCode {
        if let problem = ResultsFolder.makeDirectories(folder) { _ = problem }
        let log = open(folder + "/run.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { if log >= 0 { close(log) } }
        var console = Console()
        console.outputDescriptor = log >= 0 ? log : -1
        console.errorDescriptor = log >= 0 ? log : -1
        var run = RunCommand()
        run.scenarioPath = scenarioPath
        run.overrides = overrides
        run.brokers = brokers
        run.outputDirectory = folder
        run.duration = duration
        run.quiet = true
        return run.run(console: console)
    }
}

/// Why a level could not run (not a failed threshold: that is a verdict).
struct LevelFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The table `fleetbench capacity` prints, a row per level as it finishes.
struct CapacityTable {
    let thresholds: [String]

    var header: String {
        "  #  " + pad("level", 12, left: true) + "  phase   verdict " + pad("published/s", 12) + pad("received/s", 12)
            + pad("e2e p99 ms", 11) + "  failed thresholds"
    }

    func row(_ number: Int, _ level: CapacityLevel) -> String {
        let failed = level.thresholds.filter { !$0.passed }.map { threshold in
            threshold.expression + (threshold.observed.map { " (observed \(RunSummary.formatObserved($0, metric: threshold.metric)))" } ?? " (not measured)")
        }
        return pad(String(number), 3) + "  " + pad(CapacityHTML.format(level.level), 12, left: true) + "  "
            + level.phase.padding(toLength: 6, withPad: " ", startingAt: 0) + "  "
            + (level.passed ? "pass" : "FAIL") + "   "
            + pad(String(format: "%.0f", level.publishedPerSecond), 12) + pad(String(format: "%.0f", level.receivedPerSecond), 12)
            + pad(level.endToEndP99Ms.map { String(format: "%.2f", $0) } ?? "-", 11)
            + (failed.isEmpty ? "" : "  " + failed.joined(separator: "; "))
            + (level.saturated ? "  [generator saturated]" : "")
    }

    func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        guard text.count < width else { return text }
        let fill = String(repeating: " ", count: width - text.count)
        return left ? text + fill : fill + text
    }
}
