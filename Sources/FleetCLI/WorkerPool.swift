import FleetBroker
import FleetEngine
import FleetJSON
import FleetReports
import FleetScenario
import Foundation
import Glibc

/// `--workers N|auto`: how many segment processes a run is split into.
enum WorkerCount: Equatable, Sendable {
    case count(Int)
    case auto

    static func parse(_ text: String) -> WorkerCount? {
        if text == "auto" { return .auto }
        guard let count = Int(text), count >= 1, count <= WorkerPool.maximumExplicitWorkers else { return nil }
        return .count(count)
    }
}

/// `fleetbench run SCENARIO --workers N|auto`: the run as N segment processes of this binary on this machine
/// (`run --segment K/N` each, one run id, one start a moment from now), one progress line summed from theirs, one
/// Ctrl-C forwarded to all, and their results merged into the usual results folder (`fleetbench merge`'s code).
/// With the embedded broker, this process starts the mosquitto processes once and gives them to every worker as
/// `--broker`. No protocol of its own: arguments, exit statuses, signals and files.
struct WorkerPool {
    /// Connections one worker holds at most with `auto` (a process may open 20,000 files here).
    static let clientsPerWorker = 15_000
    /// `auto` starts at least one worker per core, up to this many cores.
    static let maximumWorkersPerCore = 64
    static let maximumExplicitWorkers = 1_000

    /// `--workers auto`: enough workers that each holds at most `clientsPerWorker` clients, at least one per core
    /// (up to `maximumWorkersPerCore`), never more than there are clients.
    static func automaticCount(clients: Int, cores: Int) -> Int {
        let forConnections = (clients + clientsPerWorker - 1) / clientsPerWorker
        let wanted = max(forConnections, min(max(cores, 1), maximumWorkersPerCore))
        return max(1, min(wanted, clients))
    }

    /// Options of `run` this process keeps to itself (the workers get their own values or none), with a value.
    static let parentOptionsWithValue: Set<String> = [
        "--workers", "--out", "--baseline", "--tolerance", "--latency-floor", "--summary-json", "--embedded-broker",
        "--run-id", "--start-at", "--metrics-listen",
    ]
    /// Likewise, without a value.
    static let parentFlags: Set<String> = ["--all", "--quiet"]

    /// The run's arguments as the workers get them: everything but this process's own options (every other option,
    /// present or added later, reaches the workers unchanged).
    static func workerArguments(_ arguments: [String]) -> [String] {
        var kept: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if parentOptionsWithValue.contains(argument) {
                index += 2
                continue
            }
            // The joined form, `--out=DIR`.
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--"),
               parentOptionsWithValue.contains(String(argument[..<equals])) {
                index += 1
                continue
            }
            if !parentFlags.contains(argument) { kept.append(argument) }
            index += 1
        }
        return kept
    }

    let command: RunCommand
    /// The scenario as the workers will load it (overrides, --duration, --scale and --broker applied).
    let scenario: Scenario
    let requested: WorkerCount
    let baseline: RunReport?
    /// Where `--summary-json -` writes (standard output; everything else printed then goes to standard error).
    var summaryDescriptor: Int32 = 1

    /// A worker process while it runs.
    struct Worker {
        var index: Int
        var pid: pid_t
        var folder: String
        var log: String
        var progress: String
        /// waitpid's status once it ended.
        var status: Int32?
    }

    func run(console: Console) -> ExitCode {
        let clients = scenario.fleets.reduce(0) { $0 + $1.count }
        let count: Int
        switch requested {
        case .auto: count = Self.automaticCount(clients: clients, cores: ProcessInfo.processInfo.activeProcessorCount)
        case .count(let given): count = given
        }
        guard count <= clients else {
            console.error("fleetbench: --workers \(count) needs at least as many clients, but the fleet has \(clients)")
            return .usage
        }
        let perWorker = (clients + count - 1) / count
        let fileLimit = MosquittoBroker.openFileLimitForChild()
        if fileLimit > 64, UInt64(perWorker) > fileLimit - 64 {
            console.error("fleetbench: \(count) worker\(count == 1 ? "" : "s") would hold \(perWorker) clients each, but one "
                + "process may open \(fileLimit) files here (ulimit -n): give more workers (--workers auto holds at most "
                + "\(Self.clientsPerWorker) each)")
            return .runtimeFailure
        }
        if let problem = Self.embeddedRefusal(scenario, embeddedBroker: command.embeddedBroker) {
            console.error("fleetbench: \(problem)")
            return .usage
        }
        let seed = scenario.seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        let runID = command.runID ?? Engine.randomRunID()
        // Every worker builds its share of the fleet before the common start: a moment for the processes to start
        // and about a second per 10,000 clients to build.
        let startAt = command.startAt ?? Date().addingTimeInterval(3 + Double(perWorker) / 10_000)
        let directory = ResultsFolder.absolute(command.outputDirectory
            ?? "reports/\(scenario.name)-\(RunCommand.timestamp(startAt))")
        if let problem = ResultsFolder.writabilityProblem(directory) {
            console.error("fleetbench: cannot write results to \(directory): \(problem); nothing was run")
            return .runtimeFailure
        }
        let workersFolder = directory + "/workers"
        if let problem = ResultsFolder.makeDirectories(workersFolder) {
            console.error("fleetbench: cannot write results to \(workersFolder): \(problem); nothing was run")
            return .runtimeFailure
        }
        let control = RunControl()
        control.installSignalHandlers(console: console)

        // The embedded brokers, started once for every worker.
        var mosquittos: [MosquittoBroker] = []
        var rabbitNode: RabbitMQBroker?
        defer {
            for broker in mosquittos { broker.stop() }
            rabbitNode?.stop()
        }
        var brokerArguments: [String] = []
        if scenario.usesEmbeddedBroker {
            do {
                if command.embeddedBroker == "rabbitmq" {
                    let node = try RabbitMQBroker()
                    rabbitNode = node
                    brokerArguments = ["--broker", node.url]
                    if !command.quiet {
                        console.print(String(format: "fleetbench: RabbitMQ node ready at %@ after %.1f s", node.url,
                                             node.startupSeconds))
                    }
                } else {
                    let brokers = EmbeddedBrokers.count(clients: clients)
                    mosquittos = try EmbeddedBrokers.start(count: brokers)
                    brokerArguments = ["--broker", mosquittos.map(\.url).joined(separator: ",")]
                    if brokers > 1 { brokerArguments.append("--brokers-unbridged") }
                }
            } catch {
                console.error("fleetbench: cannot start the embedded broker: \(error)")
                return .runtimeFailure
            }
            let started = mosquittos
            control.onQuit { for broker in started { broker.kill() } }
        }

        var arguments = Self.workerArguments(command.arguments) + brokerArguments
        if let generated = command.generatedScenario {
            // A one-liner's scenario exists in memory only: the workers read it from the results folder.
            let file = workersFolder + "/scenario.json"
            do {
                try ReportWriter.writeFile(generated, to: file)
            } catch {
                console.error("fleetbench: cannot write results to \(workersFolder): \(error); nothing was run")
                return .runtimeFailure
            }
            if let position = arguments.firstIndex(of: command.scenarioPath) { arguments[position] = file }
        }
        if scenario.seed == nil { arguments += ["--seed", String(seed)] }
        // One machine: the workers' subscribers are subscribed well within 2 s of their planned connects.
        if !command.arguments.contains(where: { $0 == "--segment-grace" || $0.hasPrefix("--segment-grace=") }) { arguments += ["--segment-grace", "2s"] }
        arguments += ["--run-id", String(runID, radix: 16), "--start-at", RunReport.rfc3339(startAt), "--quiet"]
        var workers: [Worker] = []
        for index in 0..<count {
            let folder = workersFolder + "/segment-\(index)"
            let worker = Worker(index: index, pid: 0, folder: folder, log: folder + ".log", progress: folder + ".progress")
            let own = ["run"] + arguments + ["--segment", "\(index)/\(count)", "--out", folder,
                                              "--worker-progress", worker.progress]
            do {
                var started = worker
                started.pid = try Self.spawn(own, log: worker.log, environment: command.extraEnvironment)
                workers.append(started)
            } catch {
                console.error("fleetbench: cannot start worker \(index): \(error)")
                for other in workers { kill(other.pid, SIGKILL) }
                for other in workers { var status: Int32 = 0; waitpid(other.pid, &status, 0) }
                return .runtimeFailure
            }
        }
        let pids = workers.map(\.pid)
        // A second Ctrl-C quits at once: no worker may outlive this process.
        control.onQuit { for pid in pids { kill(pid, SIGKILL) } }
        if !command.quiet {
            console.print("fleetbench \(FleetVersion.current): running \(scenario.name) for \(scenario.duration) as \(count) "
                + "worker\(count == 1 ? "" : "s") (\(perWorker) clients or fewer each) against "
                + (mosquittos.isEmpty ? (rabbitNode.map { [$0.url] } ?? scenario.brokers.map(\.url)).joined(separator: ", ")
                    : "\(mosquittos.count) embedded mosquitto\(mosquittos.count == 1 ? "" : "es") at "
                        + mosquittos.map(\.url).joined(separator: ", ")))
        }

        let failed = wait(for: &workers, control: control, console: console, clients: clients)
        if let failed {
            let worker = workers[failed]
            console.error("fleetbench: worker \(failed) (segment \(failed)/\(count), pid \(worker.pid)) "
                + Self.describe(worker.status ?? 0) + "; the run has no merged result (the workers' folders are in "
                + "\(workersFolder)). Its last output (\(worker.log)):\n" + Self.tail(of: worker.log, lines: 12))
            return .runtimeFailure
        }
        for worker in workers { unlink(worker.progress) }
        return merge(workers, into: directory, embedded: !mosquittos.isEmpty || rabbitNode != nil, console: console)
    }

    /// Why the embedded broker cannot serve these workers (nil: it can): the workers reach it as `--broker`, which
    /// carries neither its TLS certificates nor a way to restart it.
    static func embeddedRefusal(_ scenario: Scenario, embeddedBroker: String) -> String? {
        guard scenario.usesEmbeddedBroker else { return nil }
        if scenario.fleets.contains(where: { ($0.transport ?? .tcp) != .tcp }) {
            return "--workers with the embedded broker serves plain mqtt only: drop the fleets' transport, or give --broker"
        }
        if scenario.stages.contains(where: { if case .brokerRestart = $0.kind { return true } else { return false } }) {
            return "--workers cannot restart the embedded broker: restart stages need a run without --workers"
        }
        return nil
    }

    /// Waits for every worker, showing their summed progress each second, forwarding a stop request once and
    /// stopping the others when one fails. The failed worker's index, or nil.
    func wait(for workers: inout [Worker], control: RunControl, console: Console, clients: Int) -> Int? {
        let progress = ProgressPrinter(console: console, quiet: command.quiet, totalSeconds: scenario.duration.seconds,
                                       targetClients: clients)
        var failed: Int?
        var stopSent = false
        var lastShown = MonotonicClock.now()
        var previous = WorkerProgress()
        while workers.contains(where: { $0.status == nil }) {
            for index in workers.indices where workers[index].status == nil {
                var status: Int32 = 0
                guard waitpid(workers[index].pid, &status, WNOHANG) == workers[index].pid else { continue }
                workers[index].status = status
                // A worker that stops on its own before the run was asked to stop, other than finished, or that is
                // killed by a signal at any time: the run cannot be whole, so the others are stopped too.
                let killed = status & 0x7f != 0
                if failed == nil && (killed || (status != 0 && !control.stopRequested)) {
                    failed = index
                    for other in workers where other.status == nil { kill(other.pid, SIGTERM) }
                }
            }
            if control.stopRequested && !stopSent {
                stopSent = true
                for worker in workers where worker.status == nil { kill(worker.pid, SIGTERM) }
            }
            let now = MonotonicClock.now()
            if now &- lastShown >= 1_000_000_000 {
                let seconds = Double(now &- lastShown) / 1e9
                lastShown = now
                let current = workers.reduce(into: WorkerProgress()) { $0.add(WorkerProgress.read($1.progress)) }
                if current.elapsedSeconds > 0 {
                    progress.show(line: current.line(previous: previous, seconds: seconds, totalSeconds: scenario.duration.seconds,
                                                     targetClients: clients),
                                  elapsedSeconds: current.elapsedSeconds)
                }
                previous = current
            }
            usleep(20_000)
        }
        progress.finish()
        return failed
    }

    /// The workers' folders merged into the results folder, with `run`'s summary, messages and exit code.
    func merge(_ workers: [Worker], into directory: String, embedded: Bool, console: Console) -> ExitCode {
        var parts: [MergeCommand.Part] = []
        var report: RunReport
        do {
            for worker in workers { parts.append(try MergeCommand.part(worker.folder)) }
            if let refusal = MergeCommand.refusal(parts) { throw ReportError(refusal) }
            report = try MergeCommand.merge(parts)
        } catch {
            console.error("fleetbench: cannot merge the workers' results: \(error)")
            return .runtimeFailure
        }
        report.brokerEmbedded = embedded
        report.scenario.file = command.scenarioPath
        var written = true
        do {
            try ResultsFolder.write(report, to: directory)
        } catch {
            console.error("fleetbench: cannot write results to \(directory): \(error)")
            written = false
        }
        console.print(RunSummary.render(report, directory: written ? directory : nil))
        let code = exitCode(report, written: written, console: console)
        if let summaryJSON = command.summaryJSON {
            let text = JSONWriter.string(from: RunSummaryJSON.value(report, directory: written ? directory : nil,
                                                                 exitCode: code.rawValue))
            if summaryJSON == "-" {
                console.write(text, to: summaryDescriptor)
            } else {
                do {
                    try ReportWriter.writeFile(text, to: ResultsFolder.absolute(summaryJSON))
                } catch {
                    console.error("fleetbench: \(error)")
                    return code == .success ? .runtimeFailure : code
                }
            }
        }
        return code
    }

    /// `run`'s verdict on the merged result: interrupted or unwritten 1; clients that never connected and
    /// downgrades fail unless a threshold accepts them; a baseline regression or a failed threshold 99.
    func exitCode(_ report: RunReport, written: Bool, console: Console) -> ExitCode {
        if !written || report.run.interrupted { return .runtimeFailure }
        let accepted = { (prefix: String) in report.thresholds.contains { $0.metric.hasPrefix(prefix) } }
        let never = report.connections.neverConnected
        if never > 0 && !accepted("connections.") {
            console.error("fleetbench: \(never) client\(never == 1 ? "" : "s") never got connected; add a threshold on "
                + "connections.* (e.g. \"connections.never_connected <= N\") to accept that")
        }
        if report.downgrades.total > 0 && !accepted("downgrades.") {
            console.error("fleetbench: the broker granted less than asked (\(RunCommand.downgradeKinds(report.downgrades))); "
                + "add a threshold on downgrades.* (e.g. \"downgrades.qos2_acked_as_qos1 <= N\") to accept that")
        }
        var regressed = false
        if let baseline {
            let comparison = ReportComparison(baseline: baseline, candidate: report, tolerance: command.tolerance,
                                              latencyFloorMilliseconds: command.latencyFloorMilliseconds)
            console.print("\ncompared with \(command.baseline ?? ""):\n" + comparison.table(all: command.allRows))
            regressed = comparison.hasRegression
        }
        return report.passed && !regressed ? .success : .thresholdsFailed
    }

    // MARK: Processes

    /// In a worker: its running totals for the parent's progress line, once a second.
    static func writeProgress(_ status: LiveStatus, to path: String) { WorkerProgress(status: status).write(to: path) }

    /// In a worker (`--worker-progress`): once the process that started it is gone (killed without a chance to
    /// forward a stop), the run stops cleanly as on SIGTERM, instead of running on, unwatched, to its end.
    static func stopWhenOrphaned(_ control: RunControl, console: Console) {
        let parent = getppid()
        Thread.detachNewThread {
            while getppid() == parent && !control.stopRequested { usleep(200_000) }
            guard !control.stopRequested else { return }
            console.error("fleetbench: the process that started this worker (pid \(parent)) is gone: stopping")
            control.requestStop()
        }
    }

    struct SpawnError: Error, CustomStringConvertible { let description: String }

    /// Starts this binary with `arguments`, standard output and error into `log`, in a process group of its own
    /// (a Ctrl-C on the terminal reaches this process only, which forwards one stop to each worker).
    static func spawn(_ arguments: [String], log: String, environment extra: [String: String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        BrokerSpawn.closeInheritedDescriptors(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        BrokerSpawn.resetSignals(&attributes, ownProcessGroup: true)
        var argv: [UnsafeMutablePointer<CChar>?] = (["fleetbench"] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(extra) { _, given in given }
        var envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, &argv, &envp)
        guard status == 0 else { throw SpawnError(description: String(cString: strerror(status))) }
        return pid
    }

    /// "exited with 1", "was killed by signal 9 (Killed)".
    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        if signal == 0 { return "exited with \((status >> 8) & 0xff)" }
        return "was killed by signal \(signal) (\(String(cString: strsignal(signal))))"
    }

    static func tail(of path: String, lines: Int) -> String {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return "(no output)" }
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines + 1)
            .joined(separator: "\n").trimmingCharacters(in: .newlines)
    }
}

/// One worker's running totals, as it writes them to its `--worker-progress` file each second (one line,
/// replaced whole by a rename, so a reader never sees half of it), or the sum over the workers.
struct WorkerProgress: Equatable {
    var elapsedSeconds: Double = 0
    var connected = 0
    var published: UInt64 = 0
    var received: UInt64 = 0
    /// Every PUBLISH received, other runs' included.
    var arrived: UInt64 = 0
    var ackTimeouts: UInt64 = 0
    var errors: UInt64 = 0
    /// Tunnels and emulated link drops and outages (not errors: the scenario's doing).
    var linkCuts: UInt64 = 0
    /// End-to-end p99 of the last second in ms; summed over workers: the highest worker's.
    var endToEndP99Ms: Double?

    var text: String {
        "\(elapsedSeconds) \(connected) \(published) \(received) \(ackTimeouts) \(errors) "
            + (endToEndP99Ms.map { String($0) } ?? "-") + " \(linkCuts) \(arrived)\n"
    }

    init() {}

    init(status: LiveStatus) {
        elapsedSeconds = status.elapsedSeconds
        connected = status.connected
        published = status.lastPublished
        received = status.lastReceived
        arrived = status.lastArrived
        ackTimeouts = status.counters.ackTimeouts.total
        errors = ProgressPrinter.errors(status.counters)
        linkCuts = status.counters.disconnects(.linkCut)
        endToEndP99Ms = status.endToEndP99Ms
    }

    init?(text: String) {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 9, let elapsed = Double(fields[0]), let connected = Int(fields[1]),
              let published = UInt64(fields[2]), let received = UInt64(fields[3]), let ackTimeouts = UInt64(fields[4]),
              let errors = UInt64(fields[5]) else { return nil }
        self.elapsedSeconds = elapsed
        self.connected = connected
        self.published = published
        self.received = received
        self.ackTimeouts = ackTimeouts
        self.errors = errors
        self.endToEndP99Ms = Double(fields[6])
        guard let linkCuts = UInt64(fields[7]), let arrived = UInt64(fields[8]) else { return nil }
        self.linkCuts = linkCuts
        self.arrived = arrived
    }

    /// The file's figures; zero before the worker's first second.
    static func read(_ path: String) -> WorkerProgress {
        guard let data = FileManager.default.contents(atPath: path) else { return WorkerProgress() }
        return WorkerProgress(text: String(decoding: data, as: UTF8.self)) ?? WorkerProgress()
    }

    /// Writes `text` to `path` through a temporary file and a rename.
    func write(to path: String) {
        let temporary = path + ".new"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return }
        var line = text
        let complete = line.withUTF8 { bytes in Glibc.write(descriptor, bytes.baseAddress, bytes.count) == bytes.count }
        close(descriptor)
        if complete { rename(temporary, path) } else { unlink(temporary) }
    }

    mutating func add(_ other: WorkerProgress) {
        elapsedSeconds = max(elapsedSeconds, other.elapsedSeconds)
        connected += other.connected
        published &+= other.published
        received &+= other.received
        arrived &+= other.arrived
        ackTimeouts &+= other.ackTimeouts
        errors &+= other.errors
        linkCuts &+= other.linkCuts
        if let p99 = other.endToEndP99Ms { endToEndP99Ms = max(endToEndP99Ms ?? 0, p99) }
    }

    /// The progress line of these totals, rates from the change since `previous` over `seconds`.
    func line(previous: WorkerProgress, seconds: Double, totalSeconds: Double, targetClients: Int) -> String {
        ProgressPrinter.line(
            elapsedSeconds: elapsedSeconds, totalSeconds: totalSeconds, connected: connected, targetClients: targetClients,
            publishedPerSecond: Double(published &- min(previous.published, published)) / max(seconds, 0.001),
            receivedPerSecond: Double(received &- min(previous.received, received)) / max(seconds, 0.001),
            arrivedPerSecond: arrived > received
                ? Double(arrived &- min(previous.arrived, arrived)) / max(seconds, 0.001) : nil,
            endToEndP99Ms: endToEndP99Ms, ackTimeouts: ackTimeouts, errors: errors, linkCuts: linkCuts)
    }
}
