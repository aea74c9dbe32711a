import FleetBroker
import FleetEngine
import FleetJSON
import FleetMetrics
import FleetReports
import FleetScenario
import FleetTransport
import Foundation

/// Why a run stopped before its report: the message printed and the exit code it means. Each failure says its
/// own code where it happens, so no caller maps errors to codes case by case.
struct RunFailure: Error {
    let message: String
    let exitCode: ExitCode

    /// The command line asked for something that cannot be (exit 2).
    static func usage(_ message: String) -> RunFailure { RunFailure(message: message, exitCode: .usage) }
    /// The scenario or an input file is unusable (exit 65).
    static func invalidInput(_ message: String) -> RunFailure { RunFailure(message: message, exitCode: .invalidScenario) }
    /// The machine, the network or a broker failed (exit 1).
    static func runtime(_ message: String) -> RunFailure { RunFailure(message: message, exitCode: .runtimeFailure) }
}

/// What a run will do, decided before anything is started: the scenario with the command line applied, and
/// where its results go.
struct RunPlan {
    var scenario: Scenario
    var baselineReport: RunReport?
    /// This process's clients (a segment's share).
    var clients: Int
    var seed: UInt64
    var startedAt: Date
    var directory: String
}

/// What a run starts around the engine: brokers, their certificates, the metrics endpoint. `close()` stops
/// them, last started first, on every path out of the run.
final class RunEnvironment {
    /// --embedded-broker rabbitmq: a private RabbitMQ node.
    private(set) var rabbitNode: RabbitMQBroker?
    /// The embedded mosquitto, when the scenario names no broker.
    private(set) var embedded: MosquittoBroker?
    /// More embedded mosquittos for a fleet too large for one (`EmbeddedBrokers`: plain MQTT, sharing nothing).
    private(set) var moreEmbedded: [MosquittoBroker] = []
    /// The embedded mosquitto's throwaway CA and server certificate, when a fleet uses TLS.
    private(set) var certificates: ThrowawayCertificates?
    private(set) var metricsServer: MiniHTTPServer?
    /// The brokers the clients use, resolved.
    private(set) var brokers: [RunBroker] = []
    /// The brokers as the messages name them.
    private(set) var brokerURLs: [String] = []

    func close() {
        metricsServer?.stop()
        metricsServer = nil
        embedded?.stop()
        embedded = nil
        for broker in moreEmbedded { broker.stop() }
        moreEmbedded = []
        certificates?.remove()
        certificates = nil
        rabbitNode?.stop()
        rabbitNode = nil
    }

    /// Starts the brokers the plan needs (none when the scenario names its own) and resolves every broker.
    func openBrokers(_ plan: inout RunPlan, embeddedBroker: String, control: RunControl, console: Console,
                     quiet: Bool) throws(RunFailure) {
        // --embedded-broker rabbitmq: a private RabbitMQ node stands in for mosquitto and the run goes on as with
        // --broker pointing at it (the node is stopped at the end, or by its wrapper if this process dies).
        if embeddedBroker == "rabbitmq" && plan.scenario.usesEmbeddedBroker {
            try startRabbitMQ(&plan, console: console, quiet: quiet)
        }
        if plan.scenario.usesEmbeddedBroker {
            try startMosquitto(for: plan.scenario)
        }
        // A second Ctrl-C exits at once: the broker it started must not outlive it.
        if let embedded { control.onQuit { embedded.kill() } }
        let more = moreEmbedded
        control.onQuit { for broker in more { broker.kill() } }
        do {
            brokers = try RunCommand.runBrokers(embedded: embedded, certificates: certificates, scenario: plan.scenario)
                + moreEmbedded.map { broker in
                    RunBroker(url: broker.url, transport: .tcp, host: broker.host,
                              address: try SocketAddress(ipAddress: broker.host, port: broker.port))
                }
        } catch {
            throw .runtime("fleetbench: \(error)")
        }
        brokerURLs = embedded.map { [$0.url] + moreEmbedded.map(\.url) } ?? plan.scenario.brokers.map(\.url)
        for broker in brokers where broker.transport.usesTLS && broker.insecureSkipVerify {
            console.error("fleetbench: warning: certificate verification skipped for \(broker.url) (insecure_skip_verify)")
        }
    }

    private func startRabbitMQ(_ plan: inout RunPlan, console: Console, quiet: Bool) throws(RunFailure) {
        if plan.scenario.fleets.contains(where: { ($0.transport ?? .tcp) != .tcp }) {
            throw .usage("fleetbench: --embedded-broker rabbitmq serves plain mqtt only; drop the fleets' transport")
        }
        if plan.scenario.stages.contains(where: { if case .brokerRestart = $0.kind { return true } else { return false } }) {
            throw .usage("fleetbench: --embedded-broker rabbitmq cannot restart the broker; restart stages need mosquitto")
        }
        let node: RabbitMQBroker
        do {
            node = try RabbitMQBroker()
        } catch {
            throw .runtime("fleetbench: cannot start the embedded RabbitMQ node: \(error)")
        }
        rabbitNode = node
        if !quiet {
            console.print(String(format: "fleetbench: RabbitMQ node ready at %@ after %.1f s", node.url, node.startupSeconds))
        }
        guard case .success(let replaced) = plan.scenario.replacingBrokers(with: [node.url]) else {
            throw .runtime("fleetbench: cannot use the RabbitMQ node at \(node.url)")
        }
        plan.scenario = replaced
    }

    private func startMosquitto(for scenario: Scenario) throws(RunFailure) {
        // A fleet too large for one mosquitto gets more (plain MQTT only, sharing nothing: see `EmbeddedBrokers`).
        let count = EmbeddedBrokers.count(clients: scenario.fleets.reduce(0) { $0 + $1.count })
        if let refusal = EmbeddedBrokers.refusal(scenario, count: count) { throw .usage("fleetbench: \(refusal)") }
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
                self.certificates = certificates
                configuration.tlsListener = MosquittoTLSListener(
                    caFile: certificates.caFile, certificateFile: certificates.serverCertificate,
                    keyFile: certificates.serverKey, websockets: wanted.contains(.secureWebSocket))
            }
            embedded = try MosquittoBroker(configuration: configuration)
            moreEmbedded = try EmbeddedBrokers.start(count: count - 1, configuration: configuration)
        } catch {
            throw .runtime("fleetbench: cannot start the embedded broker: \(error)")
        }
    }

    /// Serves live Prometheus metrics at http://address/metrics. A port that cannot be had is a runtime failure
    /// (exit 1): the command line was well formed, the machine refused.
    func openMetrics(at address: SocketAddress, live: LiveStatusBox, scenarioName: String, runID: UInt64,
                     segment: (index: Int, count: Int)?, console: Console, quiet: Bool) throws(RunFailure) {
        // Every sample carries the run and the segment, so one dashboard shows a run and its segments across pods.
        let runLabel = String(format: "%016llx", runID)
        let segmentLabel = segment.map { "\($0.index)/\($0.count)" } ?? "0/1"
        let server: MiniHTTPServer
        do {
            server = try MiniHTTPServer(address: address) { method, path in
                guard method == "GET" else { return .init(status: 405, body: "only GET\n") }
                guard path == "/metrics" || path.hasPrefix("/metrics?") else {
                    return .init(status: 404, body: "metrics are at /metrics\n")
                }
                return .init(contentType: "text/plain; version=0.0.4; charset=utf-8",
                             body: PrometheusText.render(live.current, scenario: scenarioName, runID: runLabel,
                                                         segment: segmentLabel))
            }
        } catch {
            throw .runtime("fleetbench: cannot listen for metrics on \(address): \(error)")
        }
        metricsServer = server
        if !quiet { console.print("metrics: http://\(server.address)/metrics") }
        if !address.isLoopback {
            // The endpoint has no authentication: serving it beyond this machine must be a visible choice.
            console.error("fleetbench: warning: metrics at http://\(server.address)/metrics are "
                + "reachable from other machines, without authentication (only a loopback address keeps them local)")
        }
    }
}

/// What the engine phase hands to the report: the engine's result and the run's own measurements.
struct EngineRun {
    var engine: Engine
    var result: EngineResult
    /// Wall time from the first connect to the end of the drain, seconds.
    var elapsedSeconds: Double
    /// Process CPU seconds when the engine was about to start (the report counts from here to its own making).
    var cpuBefore: Double
    /// Process CPU while publishing.
    var publishingCPUSeconds: Double
    var stream: RunStreamWriter
    /// A stop was asked for (Ctrl-C, SIGTERM) by the time the engine returned.
    var interrupted: Bool
}

extension RunCommand {
    /// Runs the scenario: plan → environment (brokers, certificates, metrics server) → engine → report. What the
    /// environment started is closed on every path; a failure before the report prints its message and exits with
    /// the code it carries.
    func run(console given: Console) -> ExitCode {
        // With the summary's JSON on standard output, everything else printed goes to standard error.
        var console = given
        if summaryJSON == "-" { console.outputDescriptor = given.errorDescriptor }
        let environment = RunEnvironment()
        defer { environment.close() }
        do {
            if let workers {
                return WorkerPool(command: self, scenario: try plannedScenario(), requested: workers,
                                  baseline: try loadBaseline(), summaryDescriptor: given.outputDescriptor)
                    .run(console: console)
            }
            var plan = try makePlan()
            let control = RunControl()
            control.installSignalHandlers(console: console)
            if workerProgress != nil { WorkerPool.stopWhenOrphaned(control, console: console) }
            try environment.openBrokers(&plan, embeddedBroker: embeddedBroker, control: control, console: console,
                                        quiet: quiet)
            let engineRun = try runEngine(plan, environment: environment, control: control, console: console)
            return finish(plan, engineRun, environment: environment, console: console, given: given)
        } catch {
            console.error(error.message)
            return error.exitCode
        }
    }

    // MARK: Plan

    /// The scenario with the command line applied, checked against what this process and machine can do; nothing
    /// is started yet.
    func makePlan() throws(RunFailure) -> RunPlan {
        let scenario = try plannedScenario()
        let baselineReport = try loadBaseline()
        // One socket per client: this process (and an embedded mosquitto) can hold only so many.
        // A segment holds its share: the global indices i with i mod N = K.
        let allClients = scenario.fleets.reduce(0) { $0 + $1.count }
        let clients = segment.map { allClients > $0.index ? (allClients - $0.index + $0.count - 1) / $0.count : 0 } ?? allClients
        let fileLimit = MosquittoBroker.openFileLimitForChild()
        let reserve: UInt64 = 64
        if fileLimit > reserve, UInt64(clients) > fileLimit - reserve {
            throw .runtime("fleetbench: \(clients) clients need \(clients) sockets, but one process may open \(fileLimit) "
                + "files here (ulimit -n): run fewer clients per process (--scale), or split the run into worker processes (--workers auto)")
        }
        let seed = scenario.seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        if let startAt, startAt.timeIntervalSinceNow < -Self.startAtPastLimit {
            throw .usage("fleetbench: --start-at \(RunReport.rfc3339(startAt)) is \(Int(-startAt.timeIntervalSinceNow)) s in the past; "
                + "give every segment the same time in the future")
        }
        if let segment, segment.count > 1, scenario.usesEmbeddedBroker {
            throw .usage("fleetbench: --segment \(segment.index)/\(segment.count) needs a broker every segment shares (--broker "
                + "or the scenario's brokers): an embedded mosquitto per segment would split the run's traffic")
        }
        if segment != nil && scenario.seed == nil {
            throw .usage("fleetbench: --segment needs a seed (--seed N or the scenario's \"seed\"): every segment must draw the same random choices")
        }
        let startedAt = startAt ?? Date()
        let directory = ResultsFolder.absolute(outputDirectory ?? "reports/\(scenario.name)-\(Self.timestamp(startedAt))")
        if let problem = ResultsFolder.writabilityProblem(directory) {
            throw .runtime("fleetbench: cannot write results to \(directory): \(problem); nothing was run")
        }
        return RunPlan(scenario: scenario, baselineReport: baselineReport, clients: clients, seed: seed,
                       startedAt: startedAt, directory: directory)
    }

    /// --baseline's report, read.
    func loadBaseline() throws(RunFailure) -> RunReport? {
        guard let baseline else { return nil }
        do {
            return try RunReport.load(path: CompareCommand.reportPath(baseline))
        } catch {
            throw .invalidInput("fleetbench: cannot read the baseline \(baseline): \(error)")
        }
    }

    /// The scenario with the command line applied (--set, --duration, --scale, --broker) and its routes checked.
    func plannedScenario() throws(RunFailure) -> Scenario {
        var scenario: Scenario
        do {
            scenario = try loadScenario()
        } catch {
            throw .invalidInput(error.description)
        }
        if let refusal = ScenarioRouteCheck.diagnostic(scenario, file: scenarioPath) { throw .invalidInput(refusal) }
        if let duration { scenario.trim(to: duration) }
        if let scale {
            for index in scenario.fleets.indices {
                scenario.fleets[index].count = max(1, Int((Double(scenario.fleets[index].count) * scale).rounded()))
            }
        }
        if !brokers.isEmpty {
            switch scenario.replacingBrokers(with: brokers) {
            case .success(let replaced): scenario = replaced
            case .failure(let error): throw .usage(error.description)
            }
        }
        return scenario
    }

    // MARK: Engine

    /// The engine for the plan's scenario against the environment's brokers, with this command's options.
    func makeEngine(_ plan: RunPlan, environment: RunEnvironment) throws(RunFailure) -> Engine {
        do {
            let runBrokers = environment.brokers
            var configuration = try ScenarioMapping.engineConfiguration(
                plan.scenario, brokers: runBrokers.filter { $0.transport == .tcp }.map(\.address), seed: plan.seed,
                lanes: lanes, endpoints: runBrokers, embeddedBroker: environment.embedded != nil)
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
            return try Engine(configuration: configuration)
        } catch {
            throw .runtime("fleetbench: \(error)")
        }
    }

    /// Builds the engine, opens the metrics endpoint and the streamed results, waits for --start-at, and runs
    /// the engine and the stage timeline to the end (or a stop request).
    func runEngine(_ plan: RunPlan, environment: RunEnvironment, control: RunControl,
                   console: Console) throws(RunFailure) -> EngineRun {
        let scenario = plan.scenario
        let engine = try makeEngine(plan, environment: environment)
        for crowded in engine.crowdedSourceAddresses() { console.error("fleetbench: warning: \(crowded)") }
        if brokersUnbridged || !environment.moreEmbedded.isEmpty, let cross = engine.subscriptionsAcrossBrokers() {
            throw .usage(EmbeddedBrokers.crossBrokerRefusal(cross, brokers: environment.brokers.count))
        }
        if !quiet {
            console.print("fleetbench \(FleetVersion.current): running \(scenario.name) for \(scenario.duration) against "
                + "\(environment.embedded.map { _ in "an embedded mosquitto at \(environment.brokerURLs.joined(separator: ", "))" } ?? environment.brokerURLs.joined(separator: ", "))")
        }
        let cpuBefore = Self.cpuSeconds()
        // The scenario's duration counts from the first connect, ramps included. The engine publishes only once
        // every client is connected and subscribed (so loss is exact), then until this run's end.
        var totalDuration = scenario.duration.nanoseconds
        let live = LiveStatusBox()
        live.update {
            $0.totalSeconds = scenario.duration.seconds
            $0.targetClients = plan.clients
        }
        if let metricsAddress {
            try environment.openMetrics(at: metricsAddress, live: live, scenarioName: scenario.name,
                                        runID: engine.runID, segment: segment, console: console, quiet: quiet)
        }
        let progress = ProgressPrinter(console: console, quiet: quiet, totalSeconds: scenario.duration.seconds,
                                       targetClients: plan.clients)
        let stream: RunStreamWriter
        do {
            stream = try RunStreamWriter(directory: plan.directory, toolVersion: FleetVersion.current,
                                         scenarioName: scenario.name, startedAt: plan.startedAt)
        } catch {
            throw .runtime("fleetbench: cannot write results to \(plan.directory): \(error); nothing was run")
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
                let arrived = snapshot.counters.arrived.total
                status.arrivedPerSecond = Double(arrived &- min(status.lastArrived, arrived)) / seconds
                status.lastPublished = snapshot.published
                status.lastReceived = snapshot.received
                status.lastArrived = arrived
                status.endToEndP50Ms = snapshot.endToEndP50Milliseconds
                status.endToEndP99Ms = snapshot.endToEndP99Milliseconds
            }
            progress.show(live.current)
            if let workerProgress { WorkerPool.writeProgress(live.current, to: workerProgress) }
        }
        // CPU used while publishing, for the saturation check: connecting and draining cost differently.
        let publishingCPU = PublishingCPU()
        engine.onPublishStart = { publishingCPU.mark(start: true, seconds: Self.cpuSeconds()) }
        engine.onPublishEnd = { publishingCPU.mark(start: false, seconds: Self.cpuSeconds()) }
        let stages = StageRunner(scenario: scenario, broker: environment.embedded, control: control, console: console,
                                 quiet: quiet)
        if let startAt {
            totalDuration = waitForStart(startAt, engine: engine, totalDuration: totalDuration, control: control,
                                         console: console)
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
        return EngineRun(engine: engine, result: result, elapsedSeconds: Double(MonotonicClock.now() - runStart) / 1e9,
                         cpuBefore: cpuBefore, publishingCPUSeconds: publishingCPU.seconds,
                         stream: stream, interrupted: control.stopRequested)
    }

    /// Waits until --start-at; for a segment of several, sets the common publishing start and returns the run's
    /// duration shortened by how late this process started, so every segment ends at the same moment.
    func waitForStart(_ startAt: Date, engine: Engine, totalDuration: UInt64, control: RunControl,
                      console: Console) -> UInt64 {
        // Every segment starts connecting at the same moment: the common time base of their results.
        if !quiet && startAt.timeIntervalSinceNow > 0.5 {
            console.print("waiting until \(RunReport.rfc3339(startAt)) to start")
        }
        while startAt.timeIntervalSinceNow > 0 && !control.stopRequested {
            usleep(UInt32(min(50_000, max(100, startAt.timeIntervalSinceNow * 1e6))))
        }
        guard segment.map({ $0.count > 1 }) == true else { return totalDuration }
        // The common publishing start, counted from the common start time rather than this process's.
        let late = max(0, -startAt.timeIntervalSinceNow)
        let publishIn = Double(engine.configuration.publishNotBefore) / 1e9 - late
        engine.publishStartAt = MonotonicClock.now() &+ UInt64(max(0, publishIn) * 1e9)
        if publishIn < 0 {
            console.error(String(format: "fleetbench: warning: this segment started %.1f s after --start-at, after "
                + "the segments' common publishing start: its subscribers' messages from other segments cannot be "
                + "verified (merge counts them as unverified pairs)", late))
        }
        // And the common end: every segment stops publishing at --start-at plus the duration.
        let lateNanoseconds = UInt64(late * 1e9)
        return totalDuration > lateNanoseconds ? totalDuration - lateNanoseconds : 0
    }
}

extension RunCommand {
    // MARK: Report

    /// report.json from the engine's result: counters, delivery, latency, the generator's health and the
    /// thresholds evaluated (over the timeline read back from the streamed results).
    func makeReport(_ plan: RunPlan, _ engineRun: EngineRun, environment: RunEnvironment, interrupted: Bool,
                    timeline: [TimelinePoint]) -> RunReport {
        let scenario = plan.scenario
        let engine = engineRun.engine
        let result = engineRun.result
        var report = RunReport(
            toolVersion: FleetVersion.current,
            scenario: ScenarioInfo(
                name: scenario.name, file: scenarioPath, sha256: scenarioSHA256(),
                description: scenario.description.isEmpty ? nil : scenario.description,
                redacted: effectiveScenarioJSON(scenario)),
            run: RunInfo(startedAt: plan.startedAt, durationSeconds: 0, interrupted: false, seed: plan.seed),
            brokers: environment.brokers.map(\.reportedURL), brokerEmbedded: environment.embedded != nil,
            environment: EnvironmentInfo.current(fleetbenchVersion: FleetVersion.current))
        report.run.runID = engine.runID
        report.run.durationSeconds = engineRun.elapsedSeconds
        report.run.interrupted = interrupted
        report.delivery = DeliveryByQoS(result.delivery)
        report.latency = result.latency
        report.ackTimeoutSeconds = Self.ackTimeoutSeconds(scenario)
        report.timeline = timeline
        if scenario.fleets.count > 1 {
            report.fleets = scenario.fleets.compactMap { fleet in
                guard let fleetResult = result.fleets[fleet.name] else { return nil }
                var fleetReport = FleetReport(
                    name: fleet.name, clients: fleet.count, counters: fleetResult.counters,
                    peakConnected: fleetResult.peakConnected, delivery: DeliveryByQoS(fleetResult.delivery),
                    latency: fleetResult.latency)
                fleetReport.ackTimeoutSeconds = Self.ackTimeoutSeconds(fleet)
                return fleetReport
            }
        }
        report.network = Self.networkReports(scenario: scenario, result: result)
        report.generator = GeneratorHealth(
            cpuSeconds: Self.cpuSeconds() - engineRun.cpuBefore, peakRSSBytes: Self.peakRSSBytes(),
            lanes: engine.laneCount,
            drainSeconds: Double(result.phases.drainEnd &- result.phases.publishEnd) / 1e9,
            drainLimitSeconds: Double(engine.configuration.drainTimeout) / 1e9,
            receiveCoalescingMicroseconds: engine.configuration.receiveCoalescing / 1000,
            receiveBatchingMicroseconds: min(engine.configuration.receiveBatching, engine.configuration.receiveCoalescing) / 1000,
            sendPath: result.sendPath.rawValue, ioUringUnavailable: result.sendRingUnavailable,
            receivePath: result.receivePath.rawValue, receiveRingUnavailable: result.receiveRingUnavailable,
            sourceAddresses: engine.configuration.sourceAddresses.map(\.ipAddress),
            closedModelStreams: scenario.fleets.flatMap { fleet in
                fleet.publishes.filter(\.schedule.isClosedModel).map(\.name)
                    + fleet.requests.filter(\.schedule.isClosedModel).map(\.name)
            })
        // Every counted section (connections, messages, requests, offline, the generator's counts, ...).
        report.setCounters(result.counters, peakConnected: result.peakConnected)
        let publishSeconds = Double(result.phases.publishEnd &- result.phases.publishStart) / 1e9
        report.generator.saturationReasons = Self.saturation(
            result: result, publishingCPUSeconds: engineRun.publishingCPUSeconds, publishSeconds: publishSeconds,
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
        if let segment {
            report.segments = SegmentInfo(index: segment.index, count: segment.count, deliveryFinal: segment.count == 1)
        }
        return report
    }

    /// Writes the results folder, prints the summary, decides the exit code and writes --summary-json.
    func finish(_ plan: RunPlan, _ engineRun: EngineRun, environment: RunEnvironment,
                console: Console, given: Console) -> ExitCode {
        let scenario = plan.scenario
        let result = engineRun.result
        let stream = engineRun.stream
        let directory = plan.directory
        // latency.hlog and timeline.csv were written second by second; the report's timeline is read back.
        var timeline: [TimelinePoint] = []
        var streamFailure: ReportError?
        do {
            timeline = try stream.finish()
        } catch {
            streamFailure = error
        }
        var report = makeReport(plan, engineRun, environment: environment, interrupted: engineRun.interrupted,
                                timeline: timeline)
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

        var written = true
        if let streamFailure {
            console.error("fleetbench: cannot write results to \(directory): \(streamFailure)")
            written = false
        }
        do {
            try ResultsFolder.write(report, to: directory, streamed: streamFailure == nil)
            if streamFailure == nil { try stream.commit() }
            if let segment, let data = result.segment {
                try SegmentFile(runID: engineRun.engine.runID, seed: plan.seed, scenarioSHA256: report.scenario.sha256,
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
        for entry in report.connections.transportErrors {
            let (reason, count) = (entry.reason, entry.count)
            console.error("fleetbench: transport error ×\(count): \(reason)")
        }
        let code = exitCode(report: report, result: result, written: written, unreachable: unreachable,
                            neverConnectedFails: neverConnectedFails, downgrades: downgrades,
                            downgradesFail: downgradesFail, brokerURLs: environment.brokerURLs,
                            baselineReport: plan.baselineReport, console: console)
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
}
