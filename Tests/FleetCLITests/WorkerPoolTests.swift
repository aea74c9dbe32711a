import FleetTestSupport
import FleetBroker
@testable import FleetCLI
import Foundation
import Synchronization
import Testing

/// `fleetbench run --workers N|auto`: N segment processes of one run on this machine, merged at the end.
@Suite("run --workers", .serialized)
struct WorkerPoolTests {
    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs the binary with `environment` added; `during` is called with its pid while it runs (on this thread).
    static func run(_ arguments: [String], environment extra: [String: String] = [:],
                    during: ((Int32) -> Void)? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try RunEndToEndTests.binary())
        process.arguments = arguments
        process.currentDirectoryURL = RunEndToEndTests.root
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin"
        environment.merge(extra) { _, given in given }
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let errors = RunInterruptTests.ErrorText()
        let outputs = RunInterruptTests.ErrorText()
        error.fileHandleForReading.readabilityHandler = { handle in errors.append(handle.availableData) }
        output.fileHandleForReading.readabilityHandler = { handle in outputs.append(handle.availableData) }
        try process.run()
        during?(process.processIdentifier)
        process.waitUntilExit()
        error.fileHandleForReading.readabilityHandler = nil
        output.fileHandleForReading.readabilityHandler = nil
        errors.append(error.fileHandleForReading.readDataToEndOfFile())
        outputs.append(output.fileHandleForReading.readDataToEndOfFile())
        return Outcome(status: process.terminationStatus, output: outputs.text, error: errors.text)
    }

    /// The worker processes of the run `parent`: its children whose command line holds `--segment`, by segment.
    static func workers(of parent: Int32) -> [Int: Int32] {
        var found: [Int: Int32] = [:]
        for child in RunInterruptTests.children(of: parent) {
            guard let data = FileManager.default.contents(atPath: "/proc/\(child)/cmdline") else { continue }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard let at = arguments.firstIndex(of: "--segment"), at + 1 < arguments.count,
                  let index = Int(arguments[at + 1].split(separator: "/")[0]) else { continue }
            found[index] = child
        }
        return found
    }

    /// Waits (at most 60 s) until each of the first `workers` workers of the run writing to `out` has at least
    /// `each` clients connected, by their streamed timelines (`RunProgress`, out/workers/segment-N).
    static func waitForConnected(in out: String, workers: Int, each: Int) {
        EventWait.until(seconds: 60, interval: 0.02) {
            (0..<workers).allSatisfy { RunProgress.connected(in: out + "/workers/segment-\($0)") >= each }
        }
    }

    /// Waits up to `seconds` until `parent` has `count` workers.
    static func waitForWorkers(of parent: Int32, count: Int, seconds: Double = 20) -> [Int: Int32] {
        let deadline = Date().addingTimeInterval(seconds)
        var found = workers(of: parent)
        while found.count < count && Date() < deadline {
            usleep(20_000)
            found = workers(of: parent)
        }
        return found
    }

    @Test("auto: enough workers for 15,000 clients each, at least one per core (up to 64), at most one per client")
    func automaticCount() {
        #expect(WorkerPool.automaticCount(clients: 12, cores: 2) == 2)
        #expect(WorkerPool.automaticCount(clients: 1, cores: 2) == 1)
        #expect(WorkerPool.automaticCount(clients: 3, cores: 8) == 3)
        #expect(WorkerPool.automaticCount(clients: 15_000, cores: 1) == 1)
        #expect(WorkerPool.automaticCount(clients: 15_001, cores: 1) == 2)
        #expect(WorkerPool.automaticCount(clients: 100_000, cores: 2) == 7)
        #expect(WorkerPool.automaticCount(clients: 100_000, cores: 16) == 16)
        #expect(WorkerPool.automaticCount(clients: 10_000, cores: 200) == 64)
        #expect(WorkerPool.automaticCount(clients: 1_000_000, cores: 2) == 67)
        #expect(EmbeddedBrokers.count(clients: 15_000, perBroker: 15_000) == 1)
        #expect(EmbeddedBrokers.count(clients: 15_001, perBroker: 15_000) == 2)
        #expect(EmbeddedBrokers.count(clients: 100_000, perBroker: 15_000) == 7)
        #expect(EmbeddedBrokers.count(clients: 0, perBroker: 15_000) == 1)
    }

    @Test("the workers get every option but the parent's own: output, baseline, summary, quiet, run id, start")
    func workerArguments() {
        let given = ["s.json", "--workers", "auto", "--set", "fleets.a.count=5", "--out", "r", "--quiet", "--duration",
                     "5s", "--baseline", "b", "--tolerance", "5%", "--all", "--summary-json", "-", "--run-id", "ab",
                     "--start-at", "2030-01-01T00:00:00Z", "--embedded-broker", "mosquitto", "--lanes", "1",
                     "--latency-floor", "2ms", "--segment-grace", "1s", "--out=elsewhere", "--set=seed=4"]
        #expect(WorkerPool.workerArguments(given)
            == ["s.json", "--set", "fleets.a.count=5", "--duration", "5s", "--lanes", "1", "--segment-grace", "1s",
                "--set=seed=4"])
    }

    @Test("--workers usage errors, with exact messages, before anything runs")
    func usageErrors() throws {
        let cases: [([String], String)] = [
            (["--workers", "0"], "fleetbench run: --workers needs auto or a whole number from 1 to 1000, got '0'"),
            (["--workers", "two"], "fleetbench run: --workers needs auto or a whole number from 1 to 1000, got 'two'"),
            (["--workers", "2", "--segment", "0/1"],
             "fleetbench run: --workers and --segment exclude each other: --workers runs every segment itself"),
            (["--workers", "9999"], "fleetbench run: --workers needs auto or a whole number from 1 to 1000, got '9999'"),
        ]
        for (options, message) in cases {
            let outcome = try RunEndToEndTests.run(["run", "scenarios/quickstart.json"] + options
                + ["--out", "/tmp/fleetbench-never-\(getpid())"])
            #expect(outcome.status == 2, "\(options): \(outcome.error)")
            #expect(outcome.error.hasPrefix(message), "\(options): got \(outcome.error)")
        }
        let work = RunEndToEndTests.temporaryDirectory("workers-usage")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try SegmentMergeTests.write(SegmentMergeTests.scenario, name: "workers-usage-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        let tooMany = try RunEndToEndTests.run(["run", scenario, "--workers", "13", "--out", work + "/r"])
        #expect(tooMany.status == 2)
        #expect(tooMany.error == "fleetbench: --workers 13 needs at least as many clients, but the fleet has 12\n")
    }

    @Test("--workers 2 and 3 with the embedded broker: exactly the unsegmented run's counts per QoS, fleet and latency kind")
    func workersMatchTheSingleRun() throws {
        let root = RunEndToEndTests.temporaryDirectory("workers")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scenario = try SegmentMergeTests.write(SegmentMergeTests.scenario, name: "workers-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }

        let single = try Self.run(["run", scenario, "--out", root + "/single", "--quiet"])
        #expect(single.status == 0, "\(single.output) \(single.error)")
        let expected = SegmentMergeTests.figures(try RunEndToEndTests.report(in: root + "/single"))
        #expect(expected["messages.qos1.published"] == 7 * 5 + 2 * 4)
        #expect(expected["delivery.qos1.expected"] == 7 * 5 * 2 + 2 * 4)
        #expect(expected["latency.end_to_end.count"] == 7 * 5 * 2 + 2 * 4 + 7 * 3 + 7 * 2 * 2)

        for count in [2, 3] {
            let out = root + "/workers-\(count)"
            let outcome = try Self.run(["run", scenario, "--workers", "\(count)", "--segment-grace", "1s", "--out", out])
            #expect(outcome.status == 0, "N = \(count): \(outcome.output) \(outcome.error)")
            #expect(outcome.output.contains("as \(count) workers (\(12 / count) clients or fewer each) against 1 embedded mosquitto at mqtt://127.0.0.1:"),
                    "\(outcome.output)")
            #expect(outcome.output.contains("segments      \(count) merged\n"), "\(outcome.output)")
            let merged = try RunEndToEndTests.report(in: out)
            let figures = SegmentMergeTests.figures(merged)
            for key in Set(expected.keys).union(figures.keys).sorted() {
                #expect(figures[key] == expected[key], "N = \(count): \(key) workers \(figures[key] ?? -1), single run \(expected[key] ?? -1)")
            }
            #expect(merged["broker_embedded"] as? Bool == true)
            let segments = try #require(merged["segments"] as? [String: Any])
            #expect(segments["count"] as? Int == count)
            #expect(segments["unverified_pairs"] as? Int == 0)
            #expect((merged["thresholds"] as? [[String: Any]])?.allSatisfy { $0["passed"] as? Bool == true } == true)
            // The usual results folder, and each worker's own folder and output in workers/.
            let files = Set(try FileManager.default.contentsOfDirectory(atPath: out))
            for name in ["report.json", "report.html", "junit.xml", "latency.hlog", "timeline.csv", "workers"] {
                #expect(files.contains(name), "N = \(count): \(name) missing in \(files.sorted())")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: out + "/workers").sorted()
                == (0..<count).flatMap { ["segment-\($0)", "segment-\($0).log"] }.sorted())
            for index in 0..<count {
                let segment = try RunEndToEndTests.report(in: out + "/workers/segment-\(index)")
                #expect((segment["segments"] as? [String: Any])?["index"] as? Int == index)
            }
        }
    }

    @Test("a one-liner with --workers 2: its in-memory scenario reaches the workers; every message counted once")
    func oneLinerWorkers() throws {
        let out = RunEndToEndTests.temporaryDirectory("workers-pub")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try Self.run(["pub", "-c", "4", "-I", "100", "-t", "wpub/%i", "-q", "1", "--limit", "5",
                                    "--with-subscriber", "--duration", "4s", "--workers", "2", "--out", out, "--quiet",
                                    "--summary-json", "-"])
        #expect(outcome.status == 0, "\(outcome.output) \(outcome.error)")
        // Standard output holds the summary's JSON alone (the printed summary went to standard error).
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any])
        #expect(summary["exit_code"] as? Int == 0)
        #expect(summary["results"] as? String == out)
        #expect(outcome.error.contains("segments      2 merged"), "\(outcome.error)")
        let report = try RunEndToEndTests.report(in: out)
        let figures = SegmentMergeTests.figures(report)
        #expect(figures["messages.qos1.published"] == 20)
        #expect(figures["delivery.qos1.expected"] == 20)
        #expect(figures["delivery.qos1.received"] == 20)
        #expect(figures["delivery.qos1.lost"] == 0)
        #expect((report["scenario"] as? [String: Any])?["file"] as? String == "fleetbench pub")
        #expect((report["segments"] as? [String: Any])?["count"] as? Int == 2)
        #expect(FileManager.default.fileExists(atPath: out + "/workers/scenario.json"))
    }

    @Test("a worker killed mid-run fails the run, naming the worker, its signal and its last output; the others stop")
    func killedWorker() throws {
        let work = RunEndToEndTests.temporaryDirectory("workers-killed")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try RunInterruptTests.scenario(in: work)
        let pid = Mutex<Int32>(0)
        let workerPids = Mutex<[Int: Int32]>([:])
        let outcome = try Self.run(["run", scenario, "--workers", "2", "--out", work + "/results", "--quiet"]) { parent in
            let found = Self.waitForWorkers(of: parent, count: 2)
            workerPids.withLock { $0 = found }
            guard let victim = found[1] else { return }
            // Mid-run: both workers have clients connected (their streamed timelines say so).
            Self.waitForConnected(in: work + "/results", workers: 2, each: 1)
            pid.withLock { $0 = victim }
            kill(victim, SIGKILL)
        }
        let victim = pid.withLock { $0 }
        #expect(victim != 0, "no worker 1 found")
        #expect(outcome.status == 1, "\(outcome.error)")
        #expect(outcome.error.hasPrefix("fleetbench: worker 1 (segment 1/2, pid \(victim)) was killed by signal 9 (Killed); "
            + "the run has no merged result (the workers' folders are in \(work)/results/workers). Its last output "
            + "(\(work)/results/workers/segment-1.log):\n"), "\(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: work + "/results/report.json"))
        // Worker 0 was stopped, cleanly: its own results are whole and marked interrupted.
        let other = try RunEndToEndTests.report(in: work + "/results/workers/segment-0")
        #expect((other["run"] as? [String: Any])?["interrupted"] as? Bool == true)
        for (_, worker) in workerPids.withLock({ $0 }) { #expect(!RunInterruptTests.isRunning(worker)) }
    }

    @Test("Ctrl-C to the parent stops every worker once, cleanly, and still writes the merged results")
    func interruptStopsAllAndMerges() throws {
        let work = RunEndToEndTests.temporaryDirectory("workers-interrupt")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try RunInterruptTests.scenario(in: work)
        let out = work + "/results"
        let workerPids = Mutex<[Int: Int32]>([:])
        let outcome = try Self.run(["run", scenario, "--workers", "2", "--out", out, "--quiet"]) { parent in
            let found = Self.waitForWorkers(of: parent, count: 2)
            workerPids.withLock { $0 = found }
            // Both workers part way through their connects: 6 clients each at least (more than 10 in all).
            Self.waitForConnected(in: out, workers: 2, each: 6)
            kill(parent, SIGINT)
        }
        #expect(workerPids.withLock { $0.count } == 2)
        #expect(outcome.status == 1, "\(outcome.error)")
        #expect(outcome.error.contains("fleetbench: stopping (DISCONNECT, then results are written)"))
        let report = try RunEndToEndTests.report(in: out)
        #expect((report["run"] as? [String: Any])?["interrupted"] as? Bool == true)
        #expect((report["segments"] as? [String: Any])?["count"] as? Int == 2)
        let connections = try #require(report["connections"] as? [String: Any])
        let succeeded = try #require(connections["succeeded"] as? Int)
        // Both workers connected some of their clients (30/s together from the common start, ~3 s before the
        // stop), and every client is accounted for: connected and cleanly disconnected, or never connected.
        #expect(succeeded > 10 && succeeded < 301, "succeeded \(succeeded)")
        #expect(connections["never_connected"] as? Int == 301 - succeeded)
        #expect((connections["disconnects_by_reason"] as? [String: Any])?["client_initiated"] as? Int == succeeded)
        for index in 0..<2 {
            let segment = try RunEndToEndTests.report(in: out + "/workers/segment-\(index)")
            #expect((segment["run"] as? [String: Any])?["interrupted"] as? Bool == true)
            let log = try String(contentsOfFile: out + "/workers/segment-\(index).log", encoding: .utf8)
            // One stop each (a second would have quit without results).
            #expect(log.components(separatedBy: "fleetbench: stopping").count == 2, "\(log)")
        }
        for (_, worker) in workerPids.withLock({ $0 }) { #expect(!RunInterruptTests.isRunning(worker)) }
    }

    @Test("workers whose parent is killed (no stop forwarded) stop on their own, cleanly, with their results")
    func orphanedWorkersStop() throws {
        let work = RunEndToEndTests.temporaryDirectory("workers-orphaned")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try RunInterruptTests.scenario(in: work)
        // Spawned and reaped here rather than through Foundation's Process, which never noticed a child killed by
        // a signal while its grandchildren lived on (the test hung with the parent a zombie).
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, work + "/parent.log", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let binary = try RunEndToEndTests.binary()
        let arguments = [binary, "run", scenario, "--workers", "2", "--out", work + "/results", "--quiet"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var parent: pid_t = 0
        #expect(posix_spawn(&parent, binary, &actions, nil, &argv, environ) == 0)
        let workers = Self.waitForWorkers(of: parent, count: 2)
        let brokers = RunInterruptTests.children(of: parent).filter { !workers.values.contains($0) }
        // The embedded mosquitto the parent started outlives it (killed here).
        defer { for broker in brokers { kill(broker, SIGKILL) } }
        // The workers run: clients connected in both.
        Self.waitForConnected(in: work + "/results", workers: 2, each: 1)
        kill(parent, SIGKILL)
        let killed = Date()
        var status: Int32 = 0
        waitpid(parent, &status, 0)
        #expect(status & 0x7f == SIGKILL)
        #expect(workers.count == 2)
        let deadline = Date().addingTimeInterval(20)
        while workers.values.contains(where: RunInterruptTests.isRunning) && Date() < deadline { usleep(50_000) }
        for (index, pid) in workers {
            #expect(!RunInterruptTests.isRunning(pid), "worker \(index) still runs")
            let report = try RunEndToEndTests.report(in: work + "/results/workers/segment-\(index)")
            #expect((report["run"] as? [String: Any])?["interrupted"] as? Bool == true)
            let log = try String(contentsOfFile: work + "/results/workers/segment-\(index).log", encoding: .utf8)
            #expect(log.contains("fleetbench: the process that started this worker (pid \(parent)) is gone: stopping"), "\(log)")
        }
        #expect(Date().timeIntervalSince(killed) < 20)
    }

    /// 12 cars, each subscribed to its own command topic and publishing telemetry, and 12 operators, each
    /// commanding one car: on several unbridged brokers every subscriber's publisher shares its broker.
    static let spreadScenario = """
        {
          "duration": "3s", "seed": 11,
          "fleets": [
            {"name": "cars", "count": 12, "client_id": "sc-car-{i}", "protocol": "5",
             "subscriptions": [{"filter": "cmd/sc-car-{i}", "qos": 1}],
             "publish": [{"name": "t", "topic": "tel/{client_id}", "qos": 1, "limit": 4,
                          "schedule": {"type": "interval", "every": "100ms"}, "payload": {"size": 40}}]},
            {"name": "ops", "count": 12, "client_id": "sc-ops-{i}", "protocol": "5",
             "publish": [{"name": "c", "topic": "cmd/sc-car-{i}", "qos": 1, "limit": 3,
                          "schedule": {"type": "interval", "every": "150ms"}, "payload": {"size": 30}}]}
          ],
          "thresholds": ["delivery.qos1.lost == 0", "delivery.qos1.expected == 36"]
        }
        """

    @Test("a fleet larger than a broker holds: several embedded mosquittos, the same counts unsegmented and with workers")
    func severalEmbeddedBrokers() throws {
        let root = RunEndToEndTests.temporaryDirectory("workers-brokers")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scenario = try SegmentMergeTests.write(Self.spreadScenario, name: "workers-brokers-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        // 10 clients per broker: 24 clients need 3 mosquitto processes.
        let environment = ["FLEETBENCH_CLIENTS_PER_BROKER": "10"]
        let single = try Self.run(["run", scenario, "--out", root + "/single"], environment: environment)
        #expect(single.status == 0, "\(single.output) \(single.error)")
        let singleReport = try RunEndToEndTests.report(in: root + "/single")
        #expect((singleReport["brokers"] as? [String])?.count == 3, "\(singleReport["brokers"] ?? "")")
        let expected = SegmentMergeTests.figures(singleReport)
        #expect(expected["delivery.qos1.expected"] == 36)
        #expect(expected["delivery.qos1.received"] == 36)
        #expect(expected["messages.qos1.published"] == 12 * 4 + 12 * 3)

        let workers = try Self.run(["run", scenario, "--workers", "2", "--segment-grace", "1s", "--out", root + "/workers"],
                                   environment: environment)
        #expect(workers.status == 0, "\(workers.output) \(workers.error)")
        #expect(workers.output.contains("against 3 embedded mosquittoes at mqtt://127.0.0.1:"), "\(workers.output)")
        let merged = try RunEndToEndTests.report(in: root + "/workers")
        #expect((merged["brokers"] as? [String])?.count == 3)
        let figures = SegmentMergeTests.figures(merged)
        for key in Set(expected.keys).union(figures.keys).sorted() {
            #expect(figures[key] == expected[key], "\(key): workers \(figures[key] ?? -1), single run \(expected[key] ?? -1)")
        }
    }

    @Test("subscribers that would need another embedded broker's messages are refused, naming one, before connecting")
    func crossBrokerSubscriptionsRefused() throws {
        let root = RunEndToEndTests.temporaryDirectory("workers-cross")
        defer { try? FileManager.default.removeItem(atPath: root) }
        // SegmentMergeTests' scenario on 3 brokers (5 clients each; a fleet's client k on broker k mod 3): ops-0 (broker
        // 0) subscribes to the telemetry and events of cars 1, 2, 4, 5 (8 streams), ops-1 (broker 1) to those of
        // cars 0, 2, 3, 5, 6 (10). The shared group of be-0, be-1, be-2 has a member on every broker: each message
        // reaches it once, so it is no reason to refuse; neither are the cars' commands (ops-k and car-k share broker k).
        let scenario = try SegmentMergeTests.write(SegmentMergeTests.scenario, name: "workers-cross-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        let environment = ["FLEETBENCH_CLIENTS_PER_BROKER": "5"]
        let single = try Self.run(["run", scenario, "--out", root + "/single"], environment: environment)
        #expect(single.status == 2, "\(single.output) \(single.error)")
        #expect(single.error.hasPrefix("fleetbench: the fleet is spread over 3 embedded mosquitto processes that share "
            + "nothing, but 18 subscriptions would need messages published through another broker (e.g. ops-"), "\(single.error)")
        #expect(single.error.hasSuffix("give --broker with one broker (or a cluster) that holds the whole fleet\n"))
        let workers = try Self.run(["run", scenario, "--workers", "2", "--out", root + "/workers"], environment: environment)
        #expect(workers.status == 1, "\(workers.output) \(workers.error)")
        // Both workers refuse; the run names whichever ended first.
        #expect(workers.error.contains("fleetbench: worker 0 (segment 0/2, pid ")
                    || workers.error.contains("fleetbench: worker 1 (segment 1/2, pid "), "\(workers.error)")
        #expect(workers.error.contains(") exited with 2; the run has no merged result"), "\(workers.error)")
        #expect(workers.error.contains("fleetbench: the fleet is spread over 3 embedded mosquitto processes that share nothing"))
    }
}
