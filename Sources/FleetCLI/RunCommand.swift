import COpenSSL
import FleetBroker
import FleetEngine
import FleetJSON
import FleetMetrics
import FleetReports
import FleetScenario
import FleetTransport
import Foundation

/// `fleetbench run SCENARIO [options]`: runs a scenario and writes its results folder.
struct RunCommand: FleetCommand {
    static let help = """
        Usage: fleetbench run SCENARIO [options]

        Runs a scenario: connects its fleets, drives their publish/subscribe patterns and faults, measures
        latency (from the intended send time), delivery and ack timeouts, checks the thresholds and writes the
        results folder (report.json, report.html, junit.xml; latency.hlog and timeline.csv second by second).
        With no broker in the scenario and no --broker, fleetbench starts its own mosquitto on 127.0.0.1 and
        stops it at the end (one per 15,000 clients; clients of different ones must not need each other's
        messages).

        Options:
          --broker URL[,URL...]   brokers to use instead of the scenario's (mqtt://host:port)
          --embedded-broker NAME  the broker started when the scenario names none: mosquitto (default) or
                                  rabbitmq (a private RabbitMQ node with its MQTT plugin; plain mqtt only,
                                  no restart stages; Erlang takes seconds to boot)
          --set path=value        override a scenario value (repeatable), e.g. --set fleets.vehicles.count=5000
          --duration D            total run time, e.g. 30s or 5m (same as --set duration=D)
          --seed N                seed of every random choice (same as --set seed=N)
          --run-id HEX            the run id written into every message (1 to 16 hex digits, not 0);
                                  give every process of one run the same (default: random)
          --segment K/N           run segment K (0 to N-1) of N: the clients whose global index i has
                                  i mod N = K, in every fleet; the N segments together send exactly
                                  the traffic of one run (merge their folders with fleetbench merge).
                                  N > 1 needs --run-id and --start-at, the same in every segment
          --start-at TIME         start at this RFC 3339 time (e.g. 2026-12-02T05:00:00Z), waiting until
                                  then; refused when more than 5 s in the past
          --segment-grace D       with N > 1 segments: publishing starts D after the planned connects
                                  (ramps, connect rates) in every segment, so all segments' subscribers
                                  are subscribed first (default 5s; 2s with --workers)
          --workers N|auto        run as N worker processes of fleetbench on this machine (segments 0/N to
                                  N-1/N of one run, one common start, one progress line, one Ctrl-C),
                                  merged into the results folder at the end (their own folders are kept
                                  in its workers/); auto: enough that each holds at most 15,000 clients,
                                  at least one per core. The embedded broker is started once, for all
                                  of them (plain mqtt, no restart stages)
          --out DIR               results folder (default reports/<scenario>-<UTC yyyymmdd-hhmmss>)
          --scale F               multiply every fleet's client count by F (at least 1 client), e.g. 0.01
          --lanes N               lanes (serial queues) to run clients on (default: one per core, one
                                  fewer when the broker is on this machine)
          --receive-coalescing D  while a lane receives 64,000 messages/s or more, wait D between reads:
                                  far less CPU per message for fleetbench and the broker, receive times
                                  up to D late (default 1ms; 0 reads every message as it arrives)
          --io-uring auto|off     write each lane turn's packets in one io_uring submission when the
                                  kernel allows it (auto, the default), or one send(2) per connection
          --receive-path P        epoll (the default: epoll_wait, then recv(2) per ready socket) or
                                  io_uring (multishot receives into provided buffers, one io_uring_enter
                                  per lane turn; plain TCP only, epoll where the kernel refuses it)
          --metrics-listen ADDR   serve live Prometheus metrics at http://ADDR/metrics during the run:
                                  a port alone (9464) listens on 127.0.0.1; another address (0.0.0.0:9464)
                                  is reachable from other machines, and the run warns that it is
          --baseline REPORT       compare with an earlier run's report.json (or its folder); a regression
                                  beyond --tolerance exits 99
          --tolerance PCT         allowed worsening against the baseline (default 10%)
          --latency-floor D       latency changes up to D against the baseline are not regressions,
                                  whatever their percentage (default 1ms; 0 disables)
          --all                   with --baseline: every row of the comparison, not only the key ones
          --summary-json FILE     also write the summary's figures and the results folder as JSON to FILE
                                  (- for standard output; the printed summary then goes to standard error),
                                  e.g. --summary-json summary.json (docs/report-format.md)
          --quiet                 print only the summary
          -h, --help              show this help

        Ctrl-C (or SIGTERM) stops cleanly and still writes the results, marked interrupted; a second Ctrl-C
        quits at once, without results (the embedded broker is stopped).

        Exit codes: 0 finished and thresholds passed, 1 runtime failure, 2 usage error, 65 invalid scenario,
        99 thresholds failed. A segment of N > 1 exits 0 when only thresholds failed: fleetbench merge decides.
        """

    var scenarioPath = ""
    /// A scenario built in memory (`fleetbench pub`, `sub`, `conn`): its JSON text, read instead of `scenarioPath`,
    /// which then only names it in the report. nil: the scenario is the file at `scenarioPath`.
    var generatedScenario: String?
    /// Variables the scenario's `${NAME}` references may use besides the process environment (a one-liner's
    /// `-P` password, kept out of the scenario text).
    var extraEnvironment: [String: String] = [:]
    /// --summary-json: where the summary's figures go as JSON (`-`: standard output); nil: nowhere.
    var summaryJSON: String?
    var brokers: [String] = []
    /// --embedded-broker: "mosquitto" or "rabbitmq".
    var embeddedBroker = "mosquitto"
    var overrides: [String] = []
    var outputDirectory: String?
    /// --duration: the run's total time; stages beyond it are cut, the one it falls in is shortened.
    var duration: TimeSpan?
    var lanes = 0
    /// `EngineConfiguration.receiveCoalescing` when given.
    var receiveCoalescing: UInt64?
    /// --io-uring off: `EngineConfiguration.batchedSends` false.
    var batchedSends = true
    /// --receive-path: `EngineConfiguration.ringReceives`; nil: the engine's default (FLEETBENCH_RECEIVE_PATH).
    var ringReceives: Bool?
    /// --run-id: the run id of every header; nil: the engine draws one.
    var runID: UInt64?
    var scale: Double?
    var metricsAddress: SocketAddress?
    var baseline: String?
    var tolerance = 10.0
    /// --latency-floor, for the baseline comparison.
    var latencyFloorMilliseconds = ReportComparison.defaultLatencyFloorMilliseconds
    var quiet = false
    /// --all: every row of the baseline comparison.
    var allRows = false
    /// --segment K/N.
    var segment: (index: Int, count: Int)?
    /// --start-at: when the run (every segment) starts.
    var startAt: Date?
    /// --segment-grace, ns.
    var segmentGrace: UInt64 = 5_000_000_000
    /// --workers: run as worker processes (`WorkerPool`).
    var workers: WorkerCount?
    /// --worker-progress FILE (a worker of `--workers`): its running totals each second, for the parent's line.
    var workerProgress: String?
    /// --brokers-unbridged (given to workers by `--workers`): the brokers are separate embedded mosquitto
    /// processes, so a subscription needing messages published through another one is refused.
    var brokersUnbridged = false
    /// The arguments as given (`--workers` hands them on to its workers).
    var arguments: [String] = []
    /// How far in the past --start-at may be (the segments' processes start at slightly different moments).
    static let startAtPastLimit: TimeInterval = 5

    /// Parses the arguments after `run`; nil for --help. One case per option: a new option is one more case.
    static func parse(_ arguments: [String]) throws(UsageError) -> RunCommand? {
        var command = RunCommand()
        command.arguments = arguments
        var scanner = ArgumentScanner(arguments, command: "run", help: help)
        var positional: [String] = []
        while let option = try scanner.next() {
            switch option {
            case "-h", "--help": return nil
            case "--broker": command.brokers += try scanner.value().split(separator: ",").map(String.init)
            case "--embedded-broker":
                let name = try scanner.value()
                guard name == "mosquitto" || name == "rabbitmq" else {
                    throw UsageError("--embedded-broker takes mosquitto or rabbitmq (got '\(name)')")
                }
                command.embeddedBroker = name
            case "--set": command.overrides.append(try scanner.value())
            case "--duration":
                command.duration = try scanner.value("a duration such as 30s or 5m") { text in
                    guard case .success(let span) = TimeSpan.parse(text), span.nanoseconds > 0 else { return nil }
                    return span
                } as TimeSpan
            case "--seed": command.overrides.append("seed=" + (try scanner.value()))
            case "--run-id":
                command.runID = try scanner.value("1 to 16 hex digits, not all zero") { text in
                    text.count <= 16 ? UInt64(text, radix: 16).flatMap { $0 != 0 ? $0 : nil } : nil
                } as UInt64
            case "--out": command.outputDirectory = try scanner.value()
            case "--segment":
                command.segment = try scanner.value("K/N with N from 1 to 100000 and K from 0 to N-1, e.g. 0/4", Self.segment) as (index: Int, count: Int)
            case "--start-at":
                command.startAt = try scanner.value("an RFC 3339 time such as 2026-12-02T05:00:00Z", RunReport.parseRFC3339) as Date
            case "--segment-grace":
                command.segmentGrace = try scanner.value("a duration such as 5s") { (try? TimeSpan.parse($0).get())?.nanoseconds }
            case "--lanes": command.lanes = try scanner.value("a whole number from 1 to 256") { Int($0).flatMap { (1...256).contains($0) ? $0 : nil } }
            case "--receive-coalescing":
                command.receiveCoalescing = try scanner.value("0 or a duration up to 100ms such as 250us") { text in
                    if text == "0" { return 0 }
                    guard let span = try? TimeSpan.parse(text).get(), span.nanoseconds <= 100_000_000 else { return nil }
                    return UInt64(span.nanoseconds)
                } as UInt64
            case "--io-uring":
                command.batchedSends = try scanner.value("auto or off") { ["auto": true, "off": false][$0] }
            case "--receive-path":
                command.ringReceives = try scanner.value("io_uring or epoll") { ["io_uring": true, "epoll": false][$0] } as Bool
            case "--scale":
                command.scale = try scanner.value("a number above 0 (at most 1000)") { text in
                    Double(text).flatMap { $0 > 0 && $0 <= 1000 ? $0 : nil }
                } as Double
            case "--metrics-listen":
                command.metricsAddress = try scanner.value("PORT or host:port, e.g. 9464 or 127.0.0.1:9464", Self.metricsAddress) as SocketAddress
            case "--baseline": command.baseline = try scanner.value()
            case "--tolerance":
                let text = try scanner.value()
                guard let tolerance = ReportComparison.parseTolerance(text) else {
                    throw UsageError("--tolerance needs a non-negative percentage such as 10% (got '\(text)')")
                }
                command.tolerance = tolerance
            case "--latency-floor":
                command.latencyFloorMilliseconds = try CompareCommand.parseLatencyFloor(try scanner.value())
            case "--quiet": command.quiet = true
            case "--all": command.allRows = true
            case "--summary-json": command.summaryJSON = try scanner.value()
            case "--workers":
                command.workers = try scanner.value(
                    "auto or a whole number from 1 to \(WorkerPool.maximumExplicitWorkers)", WorkerCount.parse) as WorkerCount
            case "--worker-progress": command.workerProgress = try scanner.value()
            case "--brokers-unbridged": command.brokersUnbridged = true
            default: try scanner.positional(into: &positional)
            }
        }
        guard positional.count == 1 else {
            throw UsageError(positional.isEmpty ? "run needs a scenario file" : "run takes one scenario file, got \(positional.count)")
        }
        command.scenarioPath = positional[0]
        if command.workers != nil {
            if command.segment != nil { throw UsageError("--workers and --segment exclude each other: --workers runs every segment itself") }
            if command.metricsAddress != nil { throw UsageError("--workers has no --metrics-listen yet: each worker's figures are in its folder") }
        }
        if let segment = command.segment, segment.count > 1 {
            guard command.runID != nil else {
                throw UsageError("--segment \(segment.index)/\(segment.count) needs --run-id: every segment of a run must carry the same run id")
            }
            guard command.startAt != nil else {
                throw UsageError("--segment \(segment.index)/\(segment.count) needs --start-at: every segment of a run must start at the same time")
            }
        }
        return command
    }

    /// `--segment K/N`: N from 1 to 100000, K from 0 to N-1.
    static func segment(_ text: String) -> (index: Int, count: Int)? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, count <= 100_000,
              index >= 0, index < count else { return nil }
        return (index, count)
    }

    /// The run's exit code, with the messages that explain a failure.
    func exitCode(report: RunReport, result: EngineResult, written: Bool, unreachable: Bool, neverConnectedFails: Bool,
                  downgrades: DowngradeSummary, downgradesFail: Bool,
                  brokerURLs: [String], baselineReport: RunReport?, console: Console) -> ExitCode {
        if unreachable {
            let reasons = report.connections.failuresByReason.map { "\($0.reason) \($0.count)" }.joined(separator: ", ")
            console.error("fleetbench: no client could connect to \(brokerURLs.joined(separator: ", ")) (\(reasons))")
            return .runtimeFailure
        }
        if !written { return .runtimeFailure }
        if report.run.interrupted { return .runtimeFailure }
        if neverConnectedFails {
            console.error("fleetbench: \(result.counters.neverConnected) client\(result.counters.neverConnected == 1 ? "" : "s") never "
                + "got connected; add a threshold on connections.* (e.g. \"connections.never_connected <= N\") to accept that")
        }
        if downgradesFail {
            console.error("fleetbench: the broker granted less than asked (\(Self.downgradeKinds(downgrades))); add a threshold "
                + "on downgrades.* (e.g. \"downgrades.qos2_acked_as_qos1 <= N\") to accept that")
        }
        var regressed = false
        if let baselineReport {
            let comparison = ReportComparison(baseline: baselineReport, candidate: report, tolerance: tolerance,
                                              latencyFloorMilliseconds: latencyFloorMilliseconds)
            console.print("\ncompared with \(baseline ?? ""):\n" + comparison.table(all: allRows))
            regressed = comparison.hasRegression
        }
        if let segment, segment.count > 1 {
            // A segment's thresholds see only its share: `fleetbench merge` decides on the whole run.
            if !quiet { console.print("thresholds are decided by `fleetbench merge` on the whole run") }
            return .success
        }
        return report.thresholds.allSatisfy(\.passed) && !regressed && !neverConnectedFails && !downgradesFail
            ? .success : .thresholdsFailed
    }

    /// "QoS 2 publishes answered with PUBACK 11, subscriptions granted a lower QoS 5": the kinds counted, in words.
    static func downgradeKinds(_ downgrades: DowngradeSummary) -> String {
        var kinds: [String] = []
        if downgrades.qos2AckedAsQoS1 > 0 { kinds.append("QoS 2 publishes answered with PUBACK \(downgrades.qos2AckedAsQoS1)") }
        if downgrades.subscriptionQoS > 0 { kinds.append("subscriptions granted a lower QoS \(downgrades.subscriptionQoS)") }
        if downgrades.subscriptionRefused > 0 { kinds.append("subscriptions refused \(downgrades.subscriptionRefused)") }
        return kinds.joined(separator: ", ")
    }

    /// The scenario file (or the generated scenario), overridden and decoded.
    func loadScenario() throws(RunLoadError) -> Scenario {
        var environment = ProcessInfo.processInfo.environment
        environment.merge(extraEnvironment) { _, extra in extra }
        guard let generatedScenario else {
            guard FileManager.default.isReadableFile(atPath: scenarioPath) else {
                throw RunLoadError(description: "\(scenarioPath): cannot read the file (does it exist?)")
            }
            do {
                return try Scenario.load(path: scenarioPath, overrides: overrides, environment: environment)
            } catch {
                throw RunLoadError(description: error.description)
            }
        }
        do {
            let document = try JSONDocument.parse(text: generatedScenario, file: scenarioPath)
            return try Scenario.decode(document: document, overrides: overrides, environment: environment)
        } catch {
            throw RunLoadError(description: "\(error)")
        }
    }

    struct RunLoadError: Error, CustomStringConvertible { let description: String }

    /// SHA-256 of the scenario's bytes: the file's, or the generated text's.
    func scenarioSHA256() -> String {
        if let generatedScenario { return Self.sha256(of: Array(generatedScenario.utf8)) }
        guard let data = FileManager.default.contents(atPath: scenarioPath) else { return "" }
        return Self.sha256(of: [UInt8](data))
    }

    // MARK: Helpers

    /// Requests sent, answered and timed out over every fleet (for `requests.*` thresholds after a merge).
    static func requestTotals(_ result: EngineResult) -> SegmentFile.Requests {
        var totals = SegmentFile.Requests()
        totals.sent = result.counters.requestsSent
        totals.answered = result.counters.responsesReceived
        totals.timedOut = result.counters.requestsTimedOut
        return totals
    }

    /// `--metrics-listen`: a bare port (or `:port`) listens on loopback only; anything else binds where it says.
    static func metricsAddress(_ text: String) -> SocketAddress? {
        let portOnly = text.hasPrefix(":") ? String(text.dropFirst()) : text
        if let port = UInt16(portOnly), port != 0 { return try? SocketAddress(ipAddress: "127.0.0.1", port: port) }
        return try? SocketAddress.resolve(text).first
    }

    /// The scenario file as this run used it: `--set`, `--duration` and `--scale` applied, secrets masked.
    func effectiveScenarioJSON(_ scenario: Scenario) -> JSONValue? {
        let document = generatedScenario.map { try? JSONDocument.parse(text: $0, file: scenarioPath) }
            ?? (try? JSONDocument.load(path: scenarioPath))
        guard var root = document?.root else { return nil }
        var applied = overrides
        if let duration { applied.append("duration=\"\(duration)\"") }
        if scale != nil {
            for fleet in scenario.fleets { applied.append("fleets.\(fleet.name).count=\(fleet.count)") }
        }
        for argument in applied {
            if case .success(let override) = ScenarioOverride.parse(argument) { _ = override.apply(to: &root) }
        }
        return ScenarioRedaction.redact(root)
    }

    /// Generator lag p99 above this means the generator could not keep its own schedule.
    static let saturationLagMicroseconds: UInt64 = 10_000
    /// CPU use above this share of the lanes' cores means the generator itself was the bottleneck.
    static let saturationCPUShare = 0.9

    /// report.json `network`: one entry per profile of each fleet with a `network` key (in the key's order),
    /// with what that profile's emulated links did.
    static func networkReports(scenario: Scenario, result: EngineResult) -> [NetworkReport] {
        scenario.fleets.flatMap { fleet -> [NetworkReport] in
            guard let fleetResult = result.fleets[fleet.name] else { return [] }
            return fleet.networks.enumerated().map { position, conditions in
                let profile = position < fleetResult.networkProfiles.count
                    ? fleetResult.networkProfiles[position] : (clients: 0, counters: NetworkCounters())
                return networkReport(fleet: fleet.name, conditions, clients: profile.clients, counters: profile.counters)
            }
        }
    }

    static func networkReport(fleet: String, _ conditions: NetworkConditions, clients: Int,
                          counters: NetworkCounters) -> NetworkReport {
        var report = NetworkReport(fleet: fleet, profile: conditions.name, description: conditions.summary,
                                   clients: clients, fraction: conditions.fraction)
        report.stalls = counters.stalls
        report.drops = counters.drops
        report.outages = counters.outages
        report.outageSeconds = Double(counters.outageNanoseconds) / 1e9
        report.meanDelayUpMilliseconds = counters.chunksUp == 0 ? 0
            : Double(counters.delayUpNanoseconds) / Double(counters.chunksUp) / 1e6
        report.meanDelayDownMilliseconds = counters.chunksDown == 0 ? 0
            : Double(counters.delayDownNanoseconds) / Double(counters.chunksDown) / 1e6
        report.heldForBandwidth = counters.heldForBandwidth
        report.readPauses = counters.readPauses
        return report
    }

    /// Why the generator, rather than the broker, may have limited the run (empty: it did not). Both figures
    /// cover the publishing phase only. Lag is the generator's own (`EngineResult.generatorLag`): how late each
    /// message left beyond its slot and the moment its client could send, so a reconnect's backlog or a full
    /// window (the broker's doing) neither hides nor fakes it, and the check holds in runs with reconnects.
    static func saturation(result: EngineResult, publishingCPUSeconds: Double, publishSeconds: Double,
                           lanes: Int) -> [String] {
        var reasons: [String] = []
        let lag = result.generatorLag
        if lag.totalCount > 0, lag.valueAtPercentile(99) > saturationLagMicroseconds {
            reasons.append(String(format: "generator lag p99 %.1f ms is above %.0f ms: messages left later than "
                                  + "planned although their clients could send",
                                  Double(lag.valueAtPercentile(99)) / 1000, Double(saturationLagMicroseconds) / 1000))
        }
        let cores = Double(min(lanes, ProcessInfo.processInfo.activeProcessorCount))
        if publishSeconds > 0, cores > 0, publishingCPUSeconds / (publishSeconds * cores) > saturationCPUShare {
            reasons.append(String(format: "fleetbench used %.0f %% of %.0f cores while publishing (bound %.0f %%)",
                                  publishingCPUSeconds / (publishSeconds * cores) * 100, cores, saturationCPUShare * 100))
        }
        return reasons
    }

    /// The brokers of the run: the embedded mosquitto's listeners (plain, websockets, TLS with the throwaway CA)
    /// or the scenario's endpoints, resolved.
    /// A fleet's requester figures as report.json writes them (the `requests.*` thresholds read the same).
    static func runBrokers(
        embedded: MosquittoBroker?, certificates: ThrowawayCertificates?, scenario: Scenario
    ) throws -> [RunBroker] {
        if let embedded {
            let host = "127.0.0.1"
            var brokers = [RunBroker(url: embedded.url, transport: .tcp, host: host,
                                     address: try SocketAddress(ipAddress: host, port: embedded.port))]
            if let port = embedded.layout.websocketsPort {
                brokers.append(RunBroker(url: "ws://\(host):\(port)/mqtt", transport: .webSocket, host: host,
                                         address: try SocketAddress(ipAddress: host, port: port)))
            }
            if let port = embedded.tlsPort, let certificates {
                let secureWebSocket = embedded.configuration.tlsListener?.websockets == true
                var broker = RunBroker(
                    url: secureWebSocket ? "wss://\(host):\(port)/mqtt" : "mqtts://\(host):\(port)",
                    transport: secureWebSocket ? .secureWebSocket : .tls, host: host,
                    address: try SocketAddress(ipAddress: host, port: port))
                broker.caFile = certificates.caFile
                brokers.append(broker)
            }
            return brokers
        }
        var brokers: [RunBroker] = []
        for broker in scenario.brokers {
            let url = redactedURL(broker.url)
            guard let port = UInt16(exactly: broker.port) else {
                throw UnsupportedFeature(description: "broker \(url): port \(broker.port) out of range")
            }
            guard let address = try SocketAddress.resolve(host: broker.host, port: port).first else {
                throw UnsupportedFeature(description: "broker \(url): \(broker.host) has no address")
            }
            brokers.append(RunBroker(broker, url: url, address: address))
        }
        return brokers
    }

    /// `mqtt://user:secret@host` → `mqtt://user:***@host`.
    static func redactedURL(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@") else { return url }
        let userInfo = url[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
    }

    /// The run's deadlines for report.json's top-level `timeouts_s`: per kind the longest any fleet used (each
    /// fleet's own are in its `fleets[]` entry).
    static func ackTimeoutSeconds(_ scenario: Scenario) -> [AckKind: Double] {
        var longest: [AckKind: Double] = [:]
        for fleet in scenario.fleets {
            for (kind, seconds) in ackTimeoutSeconds(fleet) { longest[kind] = max(longest[kind] ?? 0, seconds) }
        }
        return longest
    }

    static func ackTimeoutSeconds(_ fleet: Fleet) -> [AckKind: Double] {
        let timeouts = fleet.ackTimeouts
        return [
            .connack: timeouts.connack.seconds, .suback: timeouts.suback.seconds, .unsuback: timeouts.unsuback.seconds,
            .puback: timeouts.puback.seconds, .pubrec: timeouts.pubrec.seconds, .pubcomp: timeouts.pubcomp.seconds,
            .pingresp: timeouts.pingresp.seconds,
        ]
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return formatter.string(from: date)
    }

    static func sha256(of bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { buffer in
            _ = SHA256(buffer.baseAddress, buffer.count, &digest)
        }
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// This process's peak resident memory: VmHWM of /proc/self/status. Not getrusage's ru_maxrss, which Linux
    /// carries over an execve from the program that started us: a fleetbench spawned by a 1.4 GiB test runner (or
    /// by any large parent) reported that parent's peak as its own.
    static func peakRSSBytes() -> UInt64 {
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ UInt64($0) }) {
            return kib * 1024
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return UInt64(usage.ru_maxrss) * 1024
    }
}

extension Scenario {
    /// Sets the total duration; stages past it are dropped, the one it ends in is shortened.
    mutating func trim(to duration: TimeSpan) {
        self.duration = duration
        var elapsed: UInt64 = 0
        var kept: [Stage] = []
        for var stage in stages where elapsed < duration.nanoseconds {
            stage.duration = TimeSpan(nanoseconds: min(stage.duration.nanoseconds, duration.nanoseconds - elapsed))
            elapsed += stage.duration.nanoseconds
            kept.append(stage)
        }
        stages = kept
    }
}

/// CPU seconds of the process at the start and the end of the publishing phase (set from the engine's callbacks).
final class PublishingCPU: @unchecked Sendable {
    private let lock = NSLock()
    private var start: Double?
    private var end: Double?

    func mark(start isStart: Bool, seconds: Double) {
        lock.withLock {
            if isStart { start = seconds } else { end = seconds }
        }
    }

    /// CPU used while publishing (0 when publishing never started or ended).
    var seconds: Double {
        lock.withLock {
            guard let start, let end, end >= start else { return 0 }
            return end - start
        }
    }
}
