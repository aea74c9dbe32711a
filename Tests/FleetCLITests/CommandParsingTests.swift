import Foundation
import Glibc
import Testing
@testable import FleetBroker
@testable import FleetCLI

/// Parsing in process: one scanner for every command, so `--opt value` and `--opt=value` mean the same everywhere.
@Suite("command parsing")
struct CommandParsingTests {
    @Test("run, validate and capacity accept --set=x as they accept --set x")
    func joinedValues() throws {
        let spaced = try #require(try RunCommand.parse(["s.json", "--set", "seed=7", "--lanes", "3", "--out", "o"]))
        let joined = try #require(try RunCommand.parse(["s.json", "--set=seed=7", "--lanes=3", "--out=o"]))
        #expect(spaced.overrides == ["seed=7"])
        #expect(joined.overrides == ["seed=7"])
        #expect(joined.lanes == 3 && spaced.lanes == 3)
        #expect(joined.outputDirectory == "o" && spaced.outputDirectory == "o")

        let validate = try #require(try ValidateCommand.parse(["a.json", "--set=fleets.x.count=2", "--set", "seed=1", "-"]))
        #expect(validate.overrides == ["fleets.x.count=2", "seed=1"])
        #expect(validate.files == ["a.json", "-"])

        let capacity = try #require(try CapacityCommand.parse(["s.json", "--vary=fleets.a.count=1..9", "--max-levels=4",
                                                               "--set=seed=2"]))
        #expect(capacity.varyPath == "fleets.a.count" && capacity.low == 1 && capacity.high == 9)
        #expect(capacity.maxLevels == 4)
        #expect(capacity.overrides == ["seed=2"])

        let merge = try #require(try MergeCommand.parse(["--out=m", "a", "b"]))
        #expect(merge.outputDirectory == "m" && merge.directories == ["a", "b"])
    }

    @Test("a value joined to an option is the whole rest of the word, '=' included; the next word may start with '-'")
    func valueShapes() throws {
        let run = try #require(try RunCommand.parse(["s.json", "--set=payload.text=a=b", "--latency-floor", "0"]))
        #expect(run.overrides == ["payload.text=a=b"])
        #expect(run.latencyFloorMilliseconds == 0)
        #expect(try #require(try RunCommand.parse(["s.json", "--receive-path", "io_uring"])).ringReceives == true)
        #expect(try #require(try RunCommand.parse(["s.json", "--receive-path=epoll"])).ringReceives == false)
        #expect(try #require(try RunCommand.parse(["s.json"])).ringReceives == nil)
        let compare = try #require(try CompareCommand.parse(["a", "b", "--tolerance=5%", "--format", "json"]))
        #expect(compare.tolerance == 5 && compare.format == .json)
    }

    @Test("run's option errors: exact messages", arguments: [
        (["s.json", "--lanes=0"], "--lanes needs a whole number from 1 to 256, got '0'"),
        (["s.json", "--lanes"], "--lanes needs a value"),
        (["s.json", "--set"], "--set needs a value"),
        (["s.json", "--quiet=yes"], "--quiet takes no value, got '--quiet=yes'"),
        (["s.json", "--io-uring=on"], "--io-uring needs auto or off, got 'on'"),
        (["s.json", "--receive-path", "uring"], "--receive-path needs io_uring or epoll, got 'uring'"),
        (["s.json", "--duration", "0s"], "--duration needs a duration such as 30s or 5m, got '0s'"),
        (["s.json", "--segment=4/4"], "--segment needs K/N with N from 1 to 100000 and K from 0 to N-1, e.g. 0/4, got '4/4'"),
        (["s.json", "--run-id", "0"], "--run-id needs 1 to 16 hex digits, not all zero, got '0'"),
        (["s.json", "t.json"], "run takes one scenario file, got 2"),
        ([], "run needs a scenario file"),
    ])
    func runErrors(arguments: [String], message: String) {
        #expect(throws: UsageError.self) { try RunCommand.parse(arguments) }
        do {
            _ = try RunCommand.parse(arguments)
        } catch {
            #expect(error.message == message)
        }
    }

    @Test("an unknown joined option still gets its did-you-mean, for every command")
    func unknownJoined() {
        let run = FleetCommandLineTests.run(["run", "s.json", "--sett=seed=1"])
        #expect(run.code == .usage)
        #expect(run.error == "fleetbench run: unknown option '--sett=seed=1' for run; did you mean '--set'?\n"
            + "`fleetbench run --help` lists every option.\n")
        let merge = FleetCommandLineTests.run(["merge", "--ot=x", "a"])
        #expect(merge.error == "fleetbench merge: unknown option '--ot=x' for merge; did you mean '--out'?\n"
            + "`fleetbench merge --help` lists every option.\n")
    }

    @Test("the usage lists every listed command of the registry, in its order, with its summary")
    func usageFromRegistry() {
        let names = FleetCommandLine.commands.map(\.name)
        #expect(names == ["run", "pub", "sub", "conn", "validate", "report", "compare", "capacity", "merge", "help", "version"])
        let usage = FleetCommandLine.usage
        #expect(usage.contains("""
            Commands:
              run SCENARIO        run a scenario (starts an embedded mosquitto when no broker is named)
              pub [options]       run publishers from emqtt-bench-style flags, no scenario file needed
            """))
        #expect(usage.contains("  merge DIR...        merge the results folders of one run's segments into one\n"
            + "  help [COMMAND]      show help for a command\n\nOptions:"))
        #expect(!usage.contains("  version "))
    }

    @Test("help COMMAND and COMMAND --help print the same text, for every listed command")
    func helpForEveryCommand() {
        for command in FleetCommandLine.commands where command.listed && command.name != "help" {
            let viaHelp = FleetCommandLineTests.run(["help", command.name])
            let viaFlag = FleetCommandLineTests.run([command.name, "--help"])
            #expect(viaHelp.code == .success && viaFlag.code == .success)
            #expect(viaHelp.output == command.help() + "\n")
            #expect(viaFlag.output == viaHelp.output, "\(command.name)")
        }
        #expect(FleetCommandLineTests.run(["help", "version"]).code == .usage)
        #expect(FleetCommandLineTests.run(["version", "x"]).output == "fleetbench \(FleetVersion.current)\n")
    }

    @Test("a metrics port already taken is a runtime failure (exit 1) naming the address, not a usage error")
    func metricsListenFailure() throws {
        // Hold a loopback port with a listening socket of our own.
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(holder >= 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, length) == 0 && listen(holder, 1) == 0
                && getsockname(holder, $0, &length) == 0 }
        }
        try #require(bound)
        let taken = UInt16(bigEndian: address.sin_port)
        let work = RunEndToEndTests.temporaryDirectory("metrics-taken")
        defer { try? FileManager.default.removeItem(atPath: work) }
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let scenario = work + "/idle.json"
        try #"{"duration": "1s", "fleets": [{"name": "idle", "count": 1, "client_id": "idle", "protocol": "5"}]}"#
            .write(toFile: scenario, atomically: true, encoding: .utf8)
        // A broker that is never reached: the run stops before connecting anything.
        let brokerPort = try LoopbackPort.free()
        let result = FleetCommandLineTests.run(["run", scenario, "--broker", "mqtt://127.0.0.1:\(brokerPort)",
                                                "--out", work + "/out", "--metrics-listen", "\(taken)", "--quiet"])
        #expect(result.code == .runtimeFailure)
        #expect(result.error.hasPrefix("fleetbench: cannot listen for metrics on 127.0.0.1:\(taken): "), "\(result.error)")
        #expect(!result.error.contains("--help"))
    }
}

extension CommandParsingTests {
    @Test("run: every option whose property is optional refuses a bad value rather than leaving it unset", arguments: [
        ["--duration", "x"], ["--run-id", "0"], ["--run-id", "12345678901234567"], ["--segment", "1/0"],
        ["--start-at", "noon"], ["--receive-coalescing", "1s"], ["--scale", "0"], ["--metrics-listen", "0"],
    ])
    func optionalPropertiesRefuse(option: [String]) {
        #expect(throws: UsageError.self) { try RunCommand.parse(["s.json"] + option) }
        #expect(throws: UsageError.self) { try RunCommand.parse(["s.json", option[0] + "=" + option[1]]) }
    }
}

/// `RunEnvironment`: what a run starts around the engine is stopped by `close()`, whatever path the run took.
@Suite("run environment")
struct RunEnvironmentTests {
    /// Whether something accepts TCP connections on 127.0.0.1:port.
    static func accepts(port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    @Test("close() stops the embedded mosquitto and the metrics server it started")
    func closeStopsWhatOpened() throws {
        let work = RunEndToEndTests.temporaryDirectory("environment")
        defer { try? FileManager.default.removeItem(atPath: work) }
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let scenario = work + "/idle.json"
        try #"{"duration": "1s", "fleets": [{"name": "idle", "count": 1, "client_id": "idle"}]}"#
            .write(toFile: scenario, atomically: true, encoding: .utf8)
        let command = try #require(try RunCommand.parse([scenario, "--out", work + "/out", "--quiet"]))
        var plan = try command.makePlan()
        let environment = RunEnvironment()
        try environment.openBrokers(&plan, embeddedBroker: "mosquitto", control: RunControl(), console: Console(),
                                    quiet: true)
        let broker = try #require(environment.embedded)
        #expect(environment.brokerURLs == [broker.url])
        let metricsPort = try LoopbackPort.free()
        try environment.openMetrics(at: try #require(RunCommand.metricsAddress("\(metricsPort)")), live: LiveStatusBox(),
                                    scenarioName: "idle", runID: 1, segment: nil, console: Console(),
                                    quiet: true)
        #expect(Self.accepts(port: broker.port))
        #expect(Self.accepts(port: metricsPort))
        environment.close()
        #expect(environment.embedded == nil && environment.metricsServer == nil)
        #expect(!Self.accepts(port: broker.port))
        #expect(!Self.accepts(port: metricsPort))
    }
}
