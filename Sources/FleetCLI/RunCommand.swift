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
struct RunCommand {
    static let help = """
        Usage: fleetbench run SCENARIO [options]

        Runs a scenario: connects its fleets, drives their publish/subscribe patterns and faults, measures
        latency (from the intended send time), delivery and ack timeouts, checks the thresholds and writes the
        results folder (report.json, report.html, junit.xml; latency.hlog and timeline.csv second by second).
        With no broker in the scenario and no --broker, fleetbench starts its own mosquitto on 127.0.0.1 and
        stops it at the end.

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
                                  are subscribed first (default 5s)
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
    /// How far in the past --start-at may be (the segments' processes start at slightly different moments).
    static let startAtPastLimit: TimeInterval = 5

    static func parse(_ arguments: [String]) throws(UsageError) -> RunCommand? {
        var command = RunCommand()
        var index = 0
        func value(_ option: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError("\(option) needs a value") }
            return arguments[index]
        }
        var positional: [String] = []
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help": return nil
            case "--broker": command.brokers += try value(argument).split(separator: ",").map(String.init)
            case "--embedded-broker":
                let name = try value(argument)
                guard name == "mosquitto" || name == "rabbitmq" else {
                    throw UsageError("--embedded-broker takes mosquitto or rabbitmq (got '\(name)')")
                }
                command.embeddedBroker = name
            case "--set": command.overrides.append(try value(argument))
            case "--duration":
                let text = try value(argument)
                guard case .success(let duration) = TimeSpan.parse(text), duration.nanoseconds > 0 else {
                    throw UsageError("--duration needs a duration such as 30s or 5m, got '\(text)'")
                }
                command.duration = duration
            case "--seed": command.overrides.append("seed=" + (try value(argument)))
            case "--run-id":
                let text = try value(argument)
                guard text.count <= 16, let runID = UInt64(text, radix: 16), runID != 0 else {
                    throw UsageError("--run-id needs 1 to 16 hex digits, not all zero, got '\(text)'")
                }
                command.runID = runID
            case "--out": command.outputDirectory = try value(argument)
            case "--segment":
                let text = try value(argument)
                let parts = text.split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1,
                      count <= 100_000, index >= 0, index < count else {
                    throw UsageError("--segment needs K/N with N from 1 to 100000 and K from 0 to N-1, e.g. 0/4, got '\(text)'")
                }
                command.segment = (index, count)
            case "--start-at":
                let text = try value(argument)
                guard let date = RunReport.parseRFC3339(text) else {
                    throw UsageError("--start-at needs an RFC 3339 time such as 2026-12-02T05:00:00Z, got '\(text)'")
                }
                command.startAt = date
            case "--segment-grace":
                let text = try value(argument)
                guard case .success(let span) = TimeSpan.parse(text) else {
                    throw UsageError("--segment-grace needs a duration such as 5s, got '\(text)'")
                }
                command.segmentGrace = span.nanoseconds
            case "--lanes":
                let text = try value(argument)
                guard let lanes = Int(text), lanes > 0, lanes <= 256 else {
                    throw UsageError("--lanes needs a whole number from 1 to 256, got '\(text)'")
                }
                command.lanes = lanes
            case "--receive-coalescing":
                let text = try value(argument)
                if text == "0" {
                    command.receiveCoalescing = 0
                } else if case .success(let span) = TimeSpan.parse(text), span.nanoseconds <= 100_000_000 {
                    command.receiveCoalescing = UInt64(span.nanoseconds)
                } else {
                    throw UsageError("--receive-coalescing needs 0 or a duration up to 100ms such as 250us, got '\(text)'")
                }
            case "--io-uring":
                let text = try value(argument)
                switch text {
                case "auto": command.batchedSends = true
                case "off": command.batchedSends = false
                default: throw UsageError("--io-uring needs auto or off, got '\(text)'")
                }
            case "--receive-path":
                let text = try value(argument)
                switch text {
                case "io_uring": command.ringReceives = true
                case "epoll": command.ringReceives = false
                default: throw UsageError("--receive-path needs io_uring or epoll, got '\(text)'")
                }
            case "--scale":
                let text = try value(argument)
                guard let scale = Double(text), scale > 0, scale <= 1000 else {
                    throw UsageError("--scale needs a number above 0 (at most 1000), got '\(text)'")
                }
                command.scale = scale
            case "--metrics-listen":
                let text = try value(argument)
                guard let address = Self.metricsAddress(text) else {
                    throw UsageError("--metrics-listen needs PORT or host:port, e.g. 9464 or 127.0.0.1:9464, got '\(text)'")
                }
                command.metricsAddress = address
            case "--baseline": command.baseline = try value(argument)
            case "--tolerance":
                let text = try value(argument)
                guard let tolerance = ReportComparison.parseTolerance(text) else {
                    throw UsageError("--tolerance needs a non-negative percentage such as 10% (got '\(text)')")
                }
                command.tolerance = tolerance
            case "--latency-floor":
                command.latencyFloorMilliseconds = try CompareCommand.parseLatencyFloor(try value(argument))
            case "--quiet": command.quiet = true
            case "--all": command.allRows = true
            case "--summary-json": command.summaryJSON = try value(argument)
            default:
                if argument.hasPrefix("-") { throw UsageError.unknownOption(argument, command: "run", help: help) }
                positional.append(argument)
            }
            index += 1
        }
        guard positional.count == 1 else {
            throw UsageError(positional.isEmpty ? "run needs a scenario file" : "run takes one scenario file, got \(positional.count)")
        }
        command.scenarioPath = positional[0]
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

    func run(console given: Console) -> ExitCode {
        // With the summary's JSON on standard output, everything else printed goes to standard error.
        var console = given
        if summaryJSON == "-" { console.outputDescriptor = given.errorDescriptor }
        var scenario: Scenario
        do {
            scenario = try loadScenario()
        } catch {
            console.error(error.description)
            return .invalidScenario
        }
        if let refusal = ScenarioRouteCheck.diagnostic(scenario, file: scenarioPath) {
            console.error(refusal)
            return .invalidScenario
        }
        if let duration { scenario.trim(to: duration) }
        if let scale {
            for index in scenario.fleets.indices {
                scenario.fleets[index].count = max(1, Int((Double(scenario.fleets[index].count) * scale).rounded()))
            }
        }
        if !brokers.isEmpty {
            switch scenario.replacingBrokers(with: brokers) {
            case .success(let replaced): scenario = replaced
            case .failure(let error):
                console.error(error.description)
                return .usage
            }
        }
        var baselineReport: RunReport?
        if let baseline {
            do {
                baselineReport = try RunReport.load(path: CompareCommand.reportPath(baseline))
            } catch {
                console.error("fleetbench: cannot read the baseline \(baseline): \(error)")
                return .invalidScenario
            }
        }
        // One socket per client: this process (and an embedded mosquitto) can hold only so many.
        // A segment holds its share: the global indices i with i mod N = K.
        let allClients = scenario.fleets.reduce(0) { $0 + $1.count }
        let clients = segment.map { allClients > $0.index ? (allClients - $0.index + $0.count - 1) / $0.count : 0 } ?? allClients
        let fileLimit = MosquittoBroker.openFileLimitForChild()
        let reserve: UInt64 = 64
        if fileLimit > reserve, UInt64(clients) > fileLimit - reserve {
            console.error("fleetbench: \(clients) clients need \(clients) sockets, but one process may open \(fileLimit) "
                + "files here (ulimit -n): run fewer clients per process (--scale), or split the run into segments (--segment K/N, then fleetbench merge)")
            return .runtimeFailure
        }
        let seed = scenario.seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        if let startAt, startAt.timeIntervalSinceNow < -Self.startAtPastLimit {
            console.error("fleetbench: --start-at \(RunReport.rfc3339(startAt)) is \(Int(-startAt.timeIntervalSinceNow)) s in the past; "
                + "give every segment the same time in the future")
            return .usage
        }
        if let segment, segment.count > 1, scenario.usesEmbeddedBroker {
            console.error("fleetbench: --segment \(segment.index)/\(segment.count) needs a broker every segment shares (--broker "
                + "or the scenario's brokers): an embedded mosquitto per segment would split the run's traffic")
            return .usage
        }
        if segment != nil && scenario.seed == nil {
            console.error("fleetbench: --segment needs a seed (--seed N or the scenario's \"seed\"): every segment must draw the same random choices")
            return .usage
        }
        let startedAt = startAt ?? Date()
        let directory = ResultsFolder.absolute(outputDirectory ?? "reports/\(scenario.name)-\(Self.timestamp(startedAt))")
        if let problem = ResultsFolder.writabilityProblem(directory) {
            console.error("fleetbench: cannot write results to \(directory): \(problem); nothing was run")
            return .runtimeFailure
        }
        let control = RunControl()
        control.installSignalHandlers(console: console)

        // --embedded-broker rabbitmq: a private RabbitMQ node stands in for mosquitto and the run goes on as with
        // --broker pointing at it (the node is stopped at the end, or by its wrapper if this process dies).
        var rabbitNode: RabbitMQBroker?
        defer { rabbitNode?.stop() }
        if embeddedBroker == "rabbitmq" && scenario.usesEmbeddedBroker {
            if scenario.fleets.contains(where: { ($0.transport ?? .tcp) != .tcp }) {
                console.error("fleetbench: --embedded-broker rabbitmq serves plain mqtt only; drop the fleets' transport")
                return .usage
            }
            if scenario.stages.contains(where: { if case .brokerRestart = $0.kind { return true } else { return false } }) {
                console.error("fleetbench: --embedded-broker rabbitmq cannot restart the broker; restart stages need mosquitto")
                return .usage
            }
            do {
                let node = try RabbitMQBroker()
                rabbitNode = node
                if !quiet {
                    console.print(String(format: "fleetbench: RabbitMQ node ready at %@ after %.1f s", node.url,
                                         node.startupSeconds))
                }
                guard case .success(let replaced) = scenario.replacingBrokers(with: [node.url]) else {
                    console.error("fleetbench: cannot use the RabbitMQ node at \(node.url)")
                    return .runtimeFailure
                }
                scenario = replaced
            } catch {
                console.error("fleetbench: cannot start the embedded RabbitMQ node: \(error)")
                return .runtimeFailure
            }
        }

        // The embedded broker, when the scenario names none.
        var embedded: MosquittoBroker?
        var embeddedCertificates: ThrowawayCertificates?
        defer { embeddedCertificates?.remove() }
        if scenario.usesEmbeddedBroker {
            var configuration = MosquittoConfiguration()
            configuration.connectionMessages = false
            let wanted = Set(scenario.fleets.compactMap(\.transport))
            configuration.websocketsListener = wanted.contains(.webSocket)
            do {
                if wanted.contains(.tls) || wanted.contains(.secureWebSocket) {
                    // FleetBroker runs one TLS listener: plain MQTT over TLS or WebSocket over TLS.
                    guard !(wanted.contains(.tls) && wanted.contains(.secureWebSocket)) else {
                        throw UnsupportedFeature(description: "the embedded broker has one TLS listener: fleets may use mqtts or wss, not both")
                    }
                    let certificates = try ThrowawayCertificates.make(label: "broker-certs")
                    embeddedCertificates = certificates
                    configuration.tlsListener = MosquittoTLSListener(
                        caFile: certificates.caFile, certificateFile: certificates.serverCertificate,
                        keyFile: certificates.serverKey, websockets: wanted.contains(.secureWebSocket))
                }
                embedded = try MosquittoBroker(configuration: configuration)
            } catch {
                console.error("fleetbench: cannot start the embedded broker: \(error)")
                return .runtimeFailure
            }
        }
        defer { embedded?.stop() }
        // A second Ctrl-C exits at once: the broker it started must not outlive it.
        if let embedded { control.onQuit { embedded.kill() } }
        let runBrokers: [RunBroker]
        do {
            runBrokers = try Self.runBrokers(embedded: embedded, certificates: embeddedCertificates, scenario: scenario)
        } catch {
            console.error("fleetbench: \(error)")
            return .runtimeFailure
        }
        let brokerURLs = embedded.map { [$0.url] } ?? scenario.brokers.map(\.url)
        for broker in runBrokers where broker.transport.usesTLS && broker.insecureSkipVerify {
            console.error("fleetbench: warning: certificate verification skipped for \(broker.url) (insecure_skip_verify)")
        }

        var report = RunReport(
            toolVersion: FleetVersion.current,
            scenario: ScenarioInfo(
                name: scenario.name, file: scenarioPath, sha256: scenarioSHA256(),
                description: scenario.description.isEmpty ? nil : scenario.description,
                redacted: effectiveScenarioJSON(scenario)),
            run: RunInfo(startedAt: startedAt, durationSeconds: 0, interrupted: false, seed: seed),
            brokers: runBrokers.map(\.reportedURL), brokerEmbedded: embedded != nil,
            environment: EnvironmentInfo.current(fleetbenchVersion: FleetVersion.current))

        // Brokers and the engine.
        let engine: Engine
        do {
            var configuration = try ScenarioMapping.engineConfiguration(
                scenario, brokers: runBrokers.filter { $0.transport == .tcp }.map(\.address), seed: seed, lanes: lanes,
                endpoints: runBrokers, embeddedBroker: embedded != nil)
            if let receiveCoalescing { configuration.receiveCoalescing = receiveCoalescing }
            configuration.batchedSends = batchedSends
            if let ringReceives { configuration.ringReceives = ringReceives }
            // Each second goes to latency.hlog and timeline.csv as it completes (`RunStreamWriter`): the engine
            // keeps neither, so memory stays flat however long the run.
            configuration.keepsIntervalLatencies = false
            configuration.keepsTimeline = false
            if let runID { configuration.runID = runID }
            if let segment {
                configuration.segmentIndex = segment.index
                configuration.segmentCount = segment.count
                configuration.publishNotBefore = Engine.plannedConnectSpan(configuration) &+ segmentGrace
            }
            engine = try Engine(configuration: configuration)
            report.run.runID = engine.runID
        } catch {
            console.error("fleetbench: \(error)")
            return .runtimeFailure
        }
        for crowded in engine.crowdedSourceAddresses() { console.error("fleetbench: warning: \(crowded)") }
        if !quiet {
            console.print("fleetbench \(FleetVersion.current): running \(scenario.name) for \(scenario.duration) "
                + "against \(embedded.map { "an embedded mosquitto at \($0.url)" } ?? brokerURLs.joined(separator: ", "))")
        }
        let cpuBefore = Self.cpuSeconds()
        // The scenario's duration counts from the first connect, ramps included. The engine publishes only once
        // every client is connected and subscribed (so loss is exact), then until this run's end.
        var totalDuration = scenario.duration.nanoseconds
        let live = LiveStatusBox()
        live.update {
            $0.totalSeconds = scenario.duration.seconds
            $0.targetClients = clients
        }
        var metricsServer: MiniHTTPServer?
        if let metricsAddress {
            let name = scenario.name
            do {
                metricsServer = try MiniHTTPServer(address: metricsAddress) { method, path in
                    guard method == "GET" else { return .init(status: 405, body: "only GET\n") }
                    guard path == "/metrics" || path.hasPrefix("/metrics?") else {
                        return .init(status: 404, body: "metrics are at /metrics\n")
                    }
                    return .init(contentType: "text/plain; version=0.0.4; charset=utf-8",
                                 body: PrometheusText.render(live.current, scenario: name))
                }
                if !quiet { console.print("metrics: http://\(metricsServer!.address)/metrics") }
                if !metricsAddress.isLoopback {
                    // The endpoint has no authentication: serving it beyond this machine must be a visible choice.
                    console.error("fleetbench: warning: metrics at http://\(metricsServer!.address)/metrics are "
                        + "reachable from other machines, without authentication (only a loopback address keeps them local)")
                }
            } catch {
                console.error("fleetbench: cannot listen for metrics on \(metricsAddress): \(error)")
                return .usage
            }
        }
        defer { metricsServer?.stop() }
        let progress = ProgressPrinter(console: console, quiet: quiet, totalSeconds: scenario.duration.seconds,
                                       targetClients: clients)
        let stream: RunStreamWriter
        do {
            stream = try RunStreamWriter(directory: directory, toolVersion: FleetVersion.current,
                                         scenarioName: scenario.name, startedAt: startedAt)
        } catch {
            console.error("fleetbench: cannot write results to \(directory): \(error); nothing was run")
            return .runtimeFailure
        }
        control.onQuit { stream.removePartialFiles() }
        engine.onSnapshot = { snapshot in
            let length = Double(snapshot.intervalEnd &- snapshot.intervalStart) / 1e9
            stream.append(ReportLatencyInterval(startSeconds: max(snapshot.t - length, 0), lengthSeconds: length,
                                                latencies: snapshot.latency))
            stream.appendTimeline(cumulative: TimelinePoint(
                t: snapshot.t, connected: UInt64(max(snapshot.connected, 0)), published: snapshot.published,
                received: snapshot.received, endToEndP50Ms: snapshot.endToEndP50Milliseconds,
                endToEndP99Ms: snapshot.endToEndP99Milliseconds, ackTimeouts: snapshot.ackTimeouts))
            live.update { status in
                status.elapsedSeconds = snapshot.t
                status.connected = snapshot.connected
                status.counters = snapshot.counters
                // Snapshots carry running totals: the rate is the change since the previous one.
                let seconds = max(Double(snapshot.intervalEnd &- snapshot.intervalStart) / 1e9, 0.001)
                status.publishedPerSecond = Double(snapshot.published &- status.lastPublished) / seconds
                status.receivedPerSecond = Double(snapshot.received &- status.lastReceived) / seconds
                status.lastPublished = snapshot.published
                status.lastReceived = snapshot.received
                status.endToEndP50Ms = snapshot.endToEndP50Milliseconds
                status.endToEndP99Ms = snapshot.endToEndP99Milliseconds
            }
            progress.show(live.current)
        }
        // CPU used while publishing, for the saturation check: connecting and draining cost differently.
        let publishingCPU = PublishingCPU()
        engine.onPublishStart = { publishingCPU.mark(start: true, seconds: Self.cpuSeconds()) }
        engine.onPublishEnd = { publishingCPU.mark(start: false, seconds: Self.cpuSeconds()) }
        let stages = StageRunner(scenario: scenario, broker: embedded, control: control, console: console, quiet: quiet)
        if let startAt {
            // Every segment starts connecting at the same moment: the common time base of their results.
            if !quiet && startAt.timeIntervalSinceNow > 0.5 {
                console.print("waiting until \(RunReport.rfc3339(startAt)) to start")
            }
            while startAt.timeIntervalSinceNow > 0 && !control.stopRequested {
                usleep(UInt32(min(50_000, max(100, startAt.timeIntervalSinceNow * 1e6))))
            }
            if segment.map({ $0.count > 1 }) == true {
                // The common publishing start, counted from the common start time rather than this process's.
                let late = max(0, -startAt.timeIntervalSinceNow)
                let publishIn = Double(engine.configuration.publishNotBefore) / 1e9 - late
                engine.publishStartAt = MonotonicClock.now() &+ UInt64(max(0, publishIn) * 1e9)
                // And the common end: every segment stops publishing at --start-at plus the duration.
                let lateNanoseconds = UInt64(late * 1e9)
                totalDuration = totalDuration > lateNanoseconds ? totalDuration - lateNanoseconds : 0
                if publishIn < 0 {
                    console.error(String(format: "fleetbench: warning: this segment started %.1f s after --start-at, after "
                        + "the segments' common publishing start: its subscribers' messages from other segments cannot be "
                        + "verified (merge counts them as unverified pairs)", late))
                }
            }
        }
        let runStart = MonotonicClock.now()
        stages.start(engine: engine)
        let runDuration = totalDuration
        let result = engine.run(duration: runDuration, shouldStop: {
            control.stopRequested || MonotonicClock.now() &- runStart >= runDuration
        })
        progress.finish()
        control.requestStopOfStages()
        stages.wait()
        let elapsed = Double(MonotonicClock.now() - runStart) / 1e9

        // Results.
        report.run.durationSeconds = elapsed
        report.run.interrupted = control.stopRequested
        report.setCounters(result.counters, peakConnected: result.peakConnected)
        report.messages.unackedAtEnd = result.unackedAtEnd
        report.delivery = DeliveryByQoS(result.delivery, foreign: result.foreignMessages,
                                        retainedOnSubscribe: result.retainedOnSubscribe)
        report.latency = result.latency
        report.ackTimeoutSeconds = Self.ackTimeoutSeconds(scenario)
        // latency.hlog and timeline.csv were written second by second; the report's timeline is read back.
        var streamFailure: ReportError?
        do {
            report.timeline = try stream.finish()
        } catch {
            streamFailure = error
        }
        if scenario.fleets.count > 1 {
            report.fleets = scenario.fleets.compactMap { fleet in
                guard let fleetResult = result.fleets[fleet.name] else { return nil }
                var fleetReport = FleetReport(
                    name: fleet.name, clients: fleet.count, counters: fleetResult.counters,
                    peakConnected: fleetResult.peakConnected, delivery: DeliveryByQoS(fleetResult.delivery, foreign: fleetResult.foreignMessages,
                                                                   retainedOnSubscribe: fleetResult.retainedOnSubscribe),
                    latency: fleetResult.latency)
                fleetReport.messages.unackedAtEnd = fleetResult.unackedAtEnd
                fleetReport.ackTimeoutSeconds = Self.ackTimeoutSeconds(fleet)
                fleetReport.requests = Self.requests(fleetResult)
                fleetReport.unsentAtEnd = fleetResult.unsentAtEnd
                fleetReport.droppedSlots = fleetResult.droppedSlots
                fleetReport.abandonedPublishes = fleetResult.abandonedPublishes
                return fleetReport
            }
        }
        report.requests = result.fleets.values.reduce(into: RequestSummary()) { $0.add(Self.requests($1)) }
        report.generator = GeneratorHealth(
            cpuSeconds: Self.cpuSeconds() - cpuBefore, peakRSSBytes: Self.peakRSSBytes(),
            lanes: engine.laneCount, droppedSlots: result.droppedSlots,
            abandonedPublishes: result.abandonedPublishes, foreignMessages: result.foreignMessages,
            unsentAtEnd: result.unsentAtEnd,
            drainSeconds: Double(result.phases.drainEnd &- result.phases.publishEnd) / 1e9,
            drainLimitSeconds: Double(engine.configuration.drainTimeout) / 1e9,
            receiveCoalescingMicroseconds: engine.configuration.receiveCoalescing / 1000,
            receiveCoalescingPauses: result.coalescingPauses,
            sendPath: result.sendPath.rawValue, ioUringUnavailable: result.sendRingUnavailable,
            receivePath: result.receivePath.rawValue, receiveRingUnavailable: result.receiveRingUnavailable,
            sourceAddresses: engine.configuration.sourceAddresses.map(\.ipAddress),
            closedModelStreams: scenario.fleets.flatMap { fleet in
                fleet.publishes.filter(\.schedule.isClosedModel).map(\.name)
                    + fleet.requests.filter(\.schedule.isClosedModel).map(\.name)
            })
        let publishSeconds = Double(result.phases.publishEnd &- result.phases.publishStart) / 1e9
        report.generator.saturationReasons = Self.saturation(
            result: result, publishingCPUSeconds: publishingCPU.seconds, publishSeconds: publishSeconds,
            lanes: engine.laneCount)
        report.generator.saturated = !report.generator.saturationReasons.isEmpty
        report.run.publishSeconds = publishSeconds
        // Thresholds divide by the same publishing phase as report.json, compare and the HTML report.
        let metrics = ReportMetrics(report: report)
        report.thresholds = scenario.thresholds.map { threshold in
            let outcome = threshold.evaluate(metrics.value)
            return ThresholdResult(
                expression: threshold.source, metric: threshold.metric, observed: outcome.observed,
                limit: threshold.value, passed: outcome.passed)
        }
        let unreachable = result.counters.connectsSucceeded == 0 && result.counters.connectsAttempted > 0
        // A client that never got connected did none of its work: that fails the run unless the scenario says
        // what it accepts of connections (a threshold on connections.*), as a refusal test would.
        let neverConnectedAccepted = scenario.thresholds.contains { $0.metric.hasPrefix("connections.") }
        let neverConnectedFails = result.counters.neverConnected > 0 && !neverConnectedAccepted
        // Likewise a broker that granted less than asked (QoS 2 run as QoS 1, a subscription granted a lower QoS
        // or refused): the run did not test what the scenario asked for, so it fails unless the scenario says what
        // it accepts of that (a threshold on downgrades.*). RabbitMQ 3.10, for one, has no QoS 2.
        let downgrades = DowngradeSummary(counters: result.counters)
        let downgradesAccepted = scenario.thresholds.contains { $0.metric.hasPrefix("downgrades.") }
        let downgradesFail = downgrades.total > 0 && !downgradesAccepted
        report.passed = !report.run.interrupted && !unreachable && !neverConnectedFails && !downgradesFail
            && report.thresholds.allSatisfy(\.passed)

        if let segment {
            report.segments = SegmentInfo(index: segment.index, count: segment.count, deliveryFinal: segment.count == 1)
        }
        var written = true
        if let streamFailure {
            console.error("fleetbench: cannot write results to \(directory): \(streamFailure)")
            written = false
        }
        do {
            try ResultsFolder.write(report, to: directory, streamed: streamFailure == nil)
            if streamFailure == nil { try stream.commit() }
            if let segment, let data = result.segment {
                try SegmentFile(runID: engine.runID, seed: seed, scenarioSHA256: report.scenario.sha256,
                                index: segment.index, count: segment.count, delivery: data,
                                requests: Self.requestTotals(result)).write(to: directory)
            }
        } catch {
            console.error("fleetbench: cannot write results to \(directory): \(error)")
            stream.abandon()
            written = false
        }
        console.print(RunSummary.render(report, directory: written ? directory : nil))
        // TLS and WebSocket failures by their reason (the report's counters keep only the kind).
        for (reason, count) in result.transportErrors.sorted(by: { $0.value > $1.value }) {
            console.error("fleetbench: transport error ×\(count): \(reason)")
        }
        let code = exitCode(report: report, result: result, written: written, unreachable: unreachable,
                            neverConnectedFails: neverConnectedFails, downgrades: downgrades,
                            downgradesFail: downgradesFail, brokerURLs: brokerURLs,
                            baselineReport: baselineReport, console: console)
        if let summaryJSON {
            let text = JSONWriter.string(from: RunSummaryJSON.value(report, directory: written ? directory : nil,
                                                                 exitCode: code.rawValue))
            if summaryJSON == "-" {
                given.write(text, to: given.outputDescriptor)
            } else {
                do {
                    try ReportWriter.writeFile(text, to: ResultsFolder.absolute(summaryJSON))
                } catch {
                    console.error("fleetbench: \(error.message)")
                    return code == .success ? .runtimeFailure : code
                }
            }
        }
        return code
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
        for fleet in result.fleets.values {
            totals.sent &+= fleet.requestsSent
            totals.answered &+= fleet.responsesReceived
            totals.timedOut &+= fleet.requestsTimedOut
        }
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
    static func requests(_ fleet: EngineFleetResult) -> RequestSummary {
        RequestSummary(sent: fleet.requestsSent, answered: fleet.responsesReceived, timedOut: fleet.requestsTimedOut)
    }

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

    static func peakRSSBytes() -> UInt64 {
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
