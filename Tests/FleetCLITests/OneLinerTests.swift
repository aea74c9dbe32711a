import FleetTestSupport
@testable import FleetBroker
@testable import FleetCLI
import Foundation
import Testing

/// `fleetbench pub`, `sub` and `conn`: flags into a scenario, run by the built binary against mosquitto with
/// exact counts; `--print-scenario` round trips through `validate` and `run`; flag errors word for word.
@Suite("one-liners: pub, sub, conn")
struct OneLinerTests {
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws
        -> RunEndToEndTests.Outcome {
        try RunEndToEndTests.run(arguments, input: input, environment: environment)
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    static func json(file: String) throws -> [String: Any] {
        try json(String(contentsOfFile: file, encoding: .utf8))
    }

    /// `report["messages"]["qos1"]["published"]` and the like, as an Int.
    static func int(_ object: [String: Any], _ path: String...) -> Int? {
        var value: Any? = object
        for key in path { value = (value as? [String: Any])?[key] }
        return (value as? NSNumber)?.intValue
    }

    static let limitRun = ["pub", "-c", "3", "--limit", "10", "-I", "10", "-q", "1", "--with-subscriber"]

    @Test("pub -c 3 --limit 10 -q 1 --with-subscriber publishes 30 and receives 30; summary JSON, timeline.csv, no escapes in a pipe")
    func publishWithSubscriber() throws {
        let out = RunEndToEndTests.temporaryDirectory("pub")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try Self.run(Self.limitRun + ["--out", out, "--summary-json", out + "/summary.json"],
                                   environment: ["NO_COLOR": "", "TERM": "xterm"])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        #expect(outcome.output.hasPrefix("fleetbench \(FleetVersion.current): running pub for 2100ms against an embedded mosquitto at mqtt://127.0.0.1:"))
        #expect(outcome.output.contains("\n  qos1          published 30, acked 30, unacked at end 0, received 30; expected 30, lost 0, duplicated 0, reordered 0\n"))
        // Standard output is a pipe: progress comes as plain lines, never an escape sequence.
        #expect(!outcome.output.contains("\u{1B}"))
        #expect(!outcome.output.contains("\r"))

        let report = try RunEndToEndTests.report(in: out)
        #expect(Self.int(report, "messages", "qos1", "published") == 30)
        #expect(Self.int(report, "messages", "qos1", "received") == 30)
        #expect(Self.int(report, "delivery", "qos1", "expected") == 30)
        #expect(Self.int(report, "delivery", "qos1", "lost") == 0)
        #expect(Self.int(report, "connections", "succeeded") == 4)
        #expect(report["broker_embedded"] as? Bool == true)
        let scenario = try #require(report["scenario"] as? [String: Any])
        #expect(scenario["name"] as? String == "pub")
        #expect(scenario["file"] as? String == "fleetbench pub")

        let summary = try Self.json(file: out + "/summary.json")
        #expect(summary["schema"] as? String == "fleetbench.summary/1")
        #expect(summary["verdict"] as? String == "passed")
        #expect(summary["exit_code"] as? Int == 0)
        #expect(summary["results"] as? String == out)
        #expect(Self.int(summary, "messages", "qos1", "published") == 30)
        #expect(Self.int(summary, "delivery", "qos1", "received") == 30)
        #expect(Self.int(summary, "latency_ms", "end_to_end", "count") == 30)
        #expect(Self.int(summary, "connections", "peak_connected") == 4)

        let timeline = try String(contentsOfFile: out + "/timeline.csv", encoding: .utf8)
        let rows = timeline.split(separator: "\n")
        #expect(rows.first == "t_s,connected,published,received,end_to_end_p50_ms,end_to_end_p99_ms,ack_timeouts")
        let columns = rows.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        #expect(columns.allSatisfy { $0.count == 7 })
        #expect(columns.reduce(0) { $0 + (Int($1[2]) ?? -1_000) } == 30)
        #expect(columns.reduce(0) { $0 + (Int($1[3]) ?? -1_000) } == 30)
        #expect(columns.count == (report["timeline"] as? [Any])?.count)
    }

    @Test("--print-scenario validates (validate --plan -) and, run, gives the same counts as the one-liner")
    func printScenarioRoundTrip() throws {
        let printed = try Self.run(Self.limitRun + ["--print-scenario"])
        #expect(printed.status == 0, "\(printed.error)")
        #expect(printed.error == "")
        let scenario = try Self.json(printed.output)
        #expect(scenario["name"] as? String == "pub")
        #expect(scenario["duration"] as? String == "2100ms")
        let fleets = try #require(scenario["fleets"] as? [[String: Any]])
        #expect(fleets.map { $0["name"] as? String } == ["pub", "sub"])
        let stream = try #require((fleets[0]["publish"] as? [[String: Any]])?.first)
        #expect(stream["topic"] as? String == "fleetbench/{client_id}")
        #expect(stream["limit"] as? Int == 10)
        #expect((stream["schedule"] as? [String: Any])?["every"] as? String == "10ms")
        #expect((fleets[1]["subscriptions"] as? [[String: Any]])?.first?["filter"] as? String == "fleetbench/+")

        let validated = try Self.run(["validate", "--plan", "-"], input: printed.output)
        #expect(validated.status == 0, "\(validated.error)")
        #expect(validated.output.hasPrefix("<stdin>: valid\nscenario pub: "))
        #expect(validated.output.contains("\n  duration: 2100ms, 4 clients, 300 msg/s published, 300 msg/s delivered when all are connected\n"))
        let plan = try Self.run(Self.limitRun + ["--plan"])
        #expect(plan.status == 0)
        #expect(plan.output == String(validated.output.dropFirst("<stdin>: valid\n".count)))

        let work = RunEndToEndTests.temporaryDirectory("printed")
        defer { try? FileManager.default.removeItem(atPath: work) }
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try printed.output.write(toFile: work + "/pub.json", atomically: true, encoding: .utf8)
        let fromFile = try Self.run(["run", work + "/pub.json", "--out", work + "/file", "--quiet"])
        let fromFlags = try Self.run(Self.limitRun + ["--out", work + "/flags", "--quiet"])
        #expect(fromFile.status == 0, "\(fromFile.error)")
        #expect(fromFlags.status == 0, "\(fromFlags.error)")
        let fileReport = try RunEndToEndTests.report(in: work + "/file")
        let flagsReport = try RunEndToEndTests.report(in: work + "/flags")
        for report in [fileReport, flagsReport] {
            #expect(Self.int(report, "messages", "qos1", "published") == 30)
            #expect(Self.int(report, "messages", "qos1", "received") == 30)
            #expect(Self.int(report, "delivery", "qos1", "lost") == 0)
            #expect(Self.int(report, "connections", "succeeded") == 4)
        }
        // The same bytes were run: the scenario's hash and its redacted copy agree.
        let fileScenario = try #require(fileReport["scenario"] as? [String: Any])
        let flagsScenario = try #require(flagsReport["scenario"] as? [String: Any])
        #expect(fileScenario["sha256"] as? String == flagsScenario["sha256"] as? String)
        #expect(fileScenario["redacted"] as? NSDictionary == flagsScenario["redacted"] as? NSDictionary)
    }

    @Test("pub alone: -c 2 --limit 5 -q 1 publishes 10, all acknowledged, and the broker passes on exactly those 10")
    func publishAlone() throws {
        let out = RunEndToEndTests.temporaryDirectory("pub-alone")
        defer { try? FileManager.default.removeItem(atPath: out) }
        var configuration = MosquittoConfiguration()
        configuration.connectionMessages = false
        let broker = try MosquittoBroker(configuration: configuration)
        defer { broker.stop() }
        // mosquitto's own client as the outside subscriber, on a persistent session: it subscribes and leaves once the
        // broker granted the subscription (-E), so the broker keeps every QoS 1 message of the run for it; after the
        // run it comes back for them, one topic per line. No guessed sleep before the run.
        func subscriber(_ options: [String]) throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
            process.arguments = ["-h", "127.0.0.1", "-p", String(broker.port), "-i", "outside", "-c", "-t", "fleetbench/#",
                                 "-q", "1"] + options
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        #expect(try subscriber(["-E"]).status == 0)

        let outcome = try Self.run(["pub", "-c", "2", "--limit", "5", "-I", "20", "-q", "1", "--broker", broker.url,
                                    "--out", out, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        #expect(outcome.output.contains("\n  qos1          published 10, acked 10, unacked at end 0, received 0; expected 0, lost 0, duplicated 0, reordered 0\n"))
        let report = try RunEndToEndTests.report(in: out)
        #expect(Self.int(report, "messages", "qos1", "published") == 10)
        #expect(Self.int(report, "messages", "qos1", "acked") == 10)
        #expect(Self.int(report, "messages", "qos1", "unacked_at_end") == 0)
        #expect(Self.int(report, "messages", "qos1", "received") == 0)
        #expect(Self.int(report, "connections", "succeeded") == 2)
        #expect(Self.int(report, "latency_ms", "puback", "count") == 10)
        // No subscriber of the run's own: no end-to-end latency at all.
        #expect((report["latency_ms"] as? [String: Any])?["end_to_end"] == nil)

        // -C 10 leaves after ten messages; -W bounds the wait should fewer have been kept.
        let received = try subscriber(["-F", "%t", "-C", "10", "-W", "20"])
        #expect(received.status == 0)
        let topics = received.output.split(separator: "\n")
        #expect(topics.count == 10)
        #expect(Dictionary(grouping: topics, by: { $0 }).mapValues(\.count) == ["fleetbench/pub-0": 5, "fleetbench/pub-1": 5])
    }

    @Test("conn holds 5 clients; sub -q 1 receives what another publisher sends, as foreign; a payload text -V 5 -q 2 -r pub")
    func connSubAndQoS2() throws {
        let work = RunEndToEndTests.temporaryDirectory("conn-sub")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let conn = try Self.run(["conn", "-c", "5", "--connect-rate", "50", "-k", "5", "--duration", "2s", "--out", work + "/conn", "--quiet"])
        #expect(conn.status == 0, "\(conn.error)")
        let connReport = try RunEndToEndTests.report(in: work + "/conn")
        #expect(Self.int(connReport, "connections", "succeeded") == 5)
        #expect(Self.int(connReport, "connections", "peak_connected") == 5)
        #expect(Self.int(connReport, "messages", "qos0", "published") == 0)

        var configuration = MosquittoConfiguration()
        configuration.connectionMessages = false
        configuration.extraLines = [MosquittoBroker.subscriptionLogging]
        let broker = try MosquittoBroker(configuration: configuration)
        defer { broker.stop() }
        // mosquitto_pub sends 4 messages once both subscribers are in (mosquitto logged their subscriptions): not
        // this run's, so foreign, not loss.
        let publisher = Thread {
            guard broker.waitForSubscriptions(to: "outside/#", count: 2) else { return }
            for index in 0..<4 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
                process.arguments = ["-p", String(broker.port), "-q", "1", "-t", "outside/\(index)", "-m", "hello"]
                try? process.run()
                process.waitUntilExit()
            }
        }
        publisher.start()
        let sub = try Self.run(["sub", "-c", "2", "-t", "outside/#", "-q", "1", "--broker", broker.url, "--duration", "3s",
                                "--out", work + "/sub", "--quiet"])
        #expect(sub.status == 0, "\(sub.error)")
        let subReport = try RunEndToEndTests.report(in: work + "/sub")
        #expect(Self.int(subReport, "connections", "succeeded") == 2)
        #expect(Self.int(subReport, "delivery", "foreign") == 8)
        // None of them is this run's: received 0, all 8 arrived.
        #expect(Self.int(subReport, "messages", "qos1", "received") == 0)
        #expect(Self.int(subReport, "messages", "qos1", "arrived") == 8)
        #expect(Self.int(subReport, "delivery", "qos1", "lost") == 0)

        let pub = try Self.run(["pub", "-c", "2", "--limit", "4", "-I", "20", "-q", "2", "-V", "5", "-r", "-m", "hi {x}",
                                "-t", "t/%c/n%i", "--with-subscriber", "--out", work + "/pub", "--quiet"])
        #expect(pub.status == 0, "\(pub.error)")
        let pubReport = try RunEndToEndTests.report(in: work + "/pub")
        #expect(Self.int(pubReport, "messages", "qos2", "published") == 8)
        #expect(Self.int(pubReport, "messages", "qos2", "received") == 8)
        #expect(Self.int(pubReport, "delivery", "qos2", "lost") == 0)
        #expect(Self.int(pubReport, "delivery", "qos2", "duplicated") == 0)
        let redacted = try #require((pubReport["scenario"] as? [String: Any])?["redacted"] as? [String: Any])
        let fleets = try #require(redacted["fleets"] as? [[String: Any]])
        let stream = try #require((fleets[0]["publish"] as? [[String: Any]])?.first)
        #expect(stream["topic"] as? String == "t/{client_id}/n{i}")
        #expect(stream["retain"] as? Bool == true)
        #expect((stream["payload"] as? [String: Any])?["text"] as? String == "hi {{x}}")
        #expect(fleets.map { $0["protocol"] as? String } == ["5", "5"])
        #expect((fleets[1]["subscriptions"] as? [[String: Any]])?.first?["filter"] as? String == "t/+/+")
    }

    @Test("--tls --ws runs over WebSocket over TLS against the embedded broker with exact counts")
    func secureWebSocket() throws {
        let out = RunEndToEndTests.temporaryDirectory("wss")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try Self.run(["pub", "-c", "2", "--limit", "3", "-I", "20", "-q", "1", "--tls", "--ws",
                                    "--with-subscriber", "--out", out, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let report = try RunEndToEndTests.report(in: out)
        #expect(Self.int(report, "messages", "qos1", "published") == 6)
        #expect(Self.int(report, "messages", "qos1", "received") == 6)
        #expect(Self.int(report, "latency_ms", "tls_handshake", "count") == 3)
        #expect(Self.int(report, "latency_ms", "ws_upgrade", "count") == 3)
    }

    @Test("-u/-P log in to a password-protected mosquitto; the password shows nowhere, printed scenario included")
    func credentials() throws {
        let work = RunEndToEndTests.temporaryDirectory("credentials")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let broker = try SecretsExposureTests.passwordProtectedBroker(work + "/broker")
        defer { broker.stop() }
        let password = SecretsExposureTests.password
        let base = ["pub", "-c", "2", "--limit", "3", "-I", "20", "-q", "1", "--with-subscriber", "--broker", broker.url,
                    "-u", SecretsExposureTests.user]
        // Literal -P, then the environment's FLEETBENCH_PASSWORD, then a wrong password (refused).
        let literal = try Self.run(base + ["-P", password, "--out", work + "/literal", "--summary-json", "-"])
        let fromEnvironment = try Self.run(base + ["--out", work + "/environment", "--quiet"],
                                           environment: ["FLEETBENCH_PASSWORD": password])
        let printed = try Self.run(base + ["-P", password, "--print-scenario"])
        for outcome in [literal, fromEnvironment, printed] {
            #expect(outcome.status == 0, "\(outcome.error)")
            #expect(!outcome.output.contains(password) && !outcome.error.contains(password))
        }
        #expect(Self.int(try Self.json(literal.output), "messages", "qos1", "received") == 6)
        #expect(Self.int(try RunEndToEndTests.report(in: work + "/environment"), "messages", "qos1", "received") == 6)
        for folder in ["/literal", "/environment"] {
            for file in try SecretsExposureTests.files(under: work + folder) {
                #expect(!String(decoding: file.bytes, as: UTF8.self).contains(password), "\(file.path)")
            }
        }
        #expect(printed.output.contains(#""password": "${FLEETBENCH_PASSWORD}""#))
        #expect(printed.error == "fleetbench pub: the scenario reads the password from $FLEETBENCH_PASSWORD; set it before `fleetbench run`\n")
        // The printed scenario runs with the variable set.
        try printed.output.write(toFile: work + "/printed.json", atomically: true, encoding: .utf8)
        let rerun = try Self.run(["run", work + "/printed.json", "--out", work + "/rerun", "--quiet"],
                                 environment: ["FLEETBENCH_PASSWORD": password])
        #expect(rerun.status == 0, "\(rerun.error)")
        let wrong = try Self.run(base + ["-P", "not-it", "--out", work + "/wrong", "--quiet"])
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("fleetbench: no client could connect to \(broker.url) (connack_refused_0x87 3)"), "\(wrong.error)")
    }

    // MARK: Flags, in process

    @Test("flag errors: exact messages, exit 2", arguments: [
        (["pub", "-q", "3"], "fleetbench pub: -q needs 0, 1 or 2, got '3'"),
        (["pub", "--limt", "3"], "fleetbench pub: unknown option '--limt' for pub; did you mean '--limit'?"),
        (["conn", "--limit", "10"], "fleetbench conn: unknown option '--limit' for conn"),
        (["sub", "--qso", "1"], "fleetbench sub: unknown option '--qso' for sub"),
        (["sub", "--topci", "a"], "fleetbench sub: unknown option '--topci' for sub; did you mean '--topic'?"),
        (["sub", "--with-subscriber"], "fleetbench sub: unknown option '--with-subscriber' for sub"),
        (["pub", "-I", "10", "--rate", "3"], "fleetbench pub: give -I/--interval or --rate, not both"),
        (["pub", "-s", "10", "-m", "x"], "fleetbench pub: give -s/--size or -m/--message, not both"),
        (["pub", "-P", "x"], "fleetbench pub: -P/--password needs -u/--username"),
        (["pub", "-V", "6"], "fleetbench pub: -V needs 3.1, 3.1.1 or 5 (or emqtt-bench's 3, 4, 5), got '6'"),
        (["pub", "-c", "0"], "fleetbench pub: -c needs a number of clients from 1 to 10000000, got '0'"),
        (["pub", "--count"], "fleetbench pub: --count needs a value"),
        (["pub", "-I", "soon"], "fleetbench pub: -I needs milliseconds above 0 or a duration such as 250ms, got 'soon'"),
        (["pub", "-k", "70000"], "fleetbench pub: -k needs whole seconds from 0 to 65535, such as 30 or 1m, got '70000'"),
        (["pub", "--clean=maybe"], "fleetbench pub: --clean takes true or false, got 'maybe'"),
        (["pub", "--threshold", "latency.end_to_end.p99 < 5 sec"],
         "fleetbench pub: --threshold 'latency.end_to_end.p99 < 5 sec': column 28: unexpected 'sec' after the value"),
        (["pub", "--host", "h", "--broker", "mqtt://h"], "fleetbench pub: give --broker or --host/--port, not both"),
        (["sub", "bench/#"], "fleetbench sub: sub takes options only, got 'bench/#'"),
    ])
    func flagErrors(arguments: [String], message: String) {
        let result = FleetCommandLineTests.run(arguments)
        #expect(result.code == .usage)
        #expect(result.output == "")
        #expect(result.error == message + "\n`fleetbench \(arguments[0]) --help` lists every option.\n")
    }

    @Test("a scenario the flags make invalid exits 65 naming the JSON path, not a position in an unseen text")
    func invalidScenario() {
        let result = FleetCommandLineTests.run(["conn", "--threshold", "latency.end_to_end.p99 < 5ms"])
        #expect(result.code == .invalidScenario)
        #expect(result.error == "fleetbench conn: scenario thresholds[0]: no run of this scenario produces latency.end_to_end.p99: "
            + "it needs a fleet that publishes and a fleet that subscribes\n"
            + "`fleetbench conn ... --print-scenario` prints the scenario these paths refer to\n")
        let transport = FleetCommandLineTests.run(["pub", "--broker", "mqtt://127.0.0.1:1883", "--tls"])
        #expect(transport.code == .invalidScenario)
        #expect(transport.error.hasPrefix("fleetbench pub: scenario fleets[0].transport: no broker with a mqtts:// URL for this fleet; "
            + "brokers are: mqtt://127.0.0.1:1883\n"))
    }

    @Test("flags map to the scenario: emqtt-bench's %i/%c, -V 3/4, -k, -C false, --host/-p, -i, durations")
    func scenarioFromFlags() throws {
        func scenario(_ arguments: [String]) throws -> [String: Any] {
            let result = FleetCommandLineTests.run(arguments + ["--print-scenario"])
            #expect(result.code == .success, "\(result.error)")
            return try Self.json(result.output)
        }
        let emqtt = try scenario(["pub", "-c", "4", "-I", "250", "-t", "bench/%c/%i", "-s", "64", "-V", "4", "-k", "30",
                                  "-C", "false", "--host", "10.0.0.5", "-p", "1884", "-i", "10", "--duration", "1m"])
        #expect(emqtt["brokers"] as? [String] == ["mqtt://10.0.0.5:1884"])
        #expect(emqtt["duration"] as? String == "1m")
        let fleet = try #require((emqtt["fleets"] as? [[String: Any]])?.first)
        #expect(fleet["count"] as? Int == 4)
        #expect(fleet["protocol"] as? String == "3.1.1")
        #expect(fleet["keepalive"] as? String == "30s")
        #expect(fleet["clean_session"] as? Bool == false)
        #expect(fleet["connect_rate"] as? Double == 100)
        let stream = try #require((fleet["publish"] as? [[String: Any]])?.first)
        #expect(stream["topic"] as? String == "bench/{client_id}/{i}")
        #expect((stream["payload"] as? [String: Any])?["size"] as? Int == 64)
        #expect((stream["schedule"] as? [String: Any])?["every"] as? String == "250ms")

        // --limit without --duration: the connects (here 3 clients at 2/s: 2 s), 10 messages at 4/s, 1 s.
        let limited = try scenario(["pub", "-c", "3", "--rate", "4", "--limit", "10", "--connect-rate", "2"])
        #expect(limited["duration"] as? String == "5500ms")
        let rateStream = try #require(((limited["fleets"] as? [[String: Any]])?.first?["publish"] as? [[String: Any]])?.first)
        #expect(rateStream["schedule"] as? NSDictionary == ["type": "rate", "per_second": 4] as NSDictionary)

        let v5 = try scenario(["sub", "-V", "5", "-C", "-S", "--ws", "--host", "::1", "-u", "x{y}", "-t", "u/%u/%i/#"])
        #expect(v5["brokers"] as? [String] == ["wss://[::1]:443/mqtt"])
        let subscriber = try #require((v5["fleets"] as? [[String: Any]])?.first)
        #expect(subscriber["clean_start"] as? Bool == true)
        #expect(subscriber["transport"] as? String == "wss")
        #expect(v5["duration"] as? String == "10s")
        #expect((subscriber["subscriptions"] as? [[String: Any]])?.first?["filter"] as? String == "u/x{{y}}/{i}/#")
    }

    @Test("--prefix puts TEXT- in front of every client id of pub (its subscriber too), sub and conn; braces stay literal")
    func prefixInScenario() throws {
        func fleets(_ arguments: [String]) throws -> [[String: Any]] {
            let result = FleetCommandLineTests.run(arguments + ["--print-scenario"])
            #expect(result.code == .success, "\(result.error)")
            return try #require(try Self.json(result.output)["fleets"] as? [[String: Any]])
        }
        // Without --prefix nothing changes: the scenario default {fleet}-{i} (pub-0, sub-0).
        let plain = try fleets(["pub", "-c", "2", "--with-subscriber"])
        #expect(plain.map { $0["client_id"] as? String } == [nil, nil])
        let pub = try fleets(["pub", "-c", "2", "--with-subscriber", "--prefix", "run2"])
        #expect(pub.map { $0["client_id"] as? String } == ["run2-{fleet}-{i}", "run2-{fleet}-{i}"])
        #expect(((pub[0]["publish"] as? [[String: Any]])?.first)?["topic"] as? String == "fleetbench/{client_id}")
        let named = try fleets(["pub", "-c", "2", "--with-subscriber", "--client-id", "car-%i", "--prefix", "a{b}"])
        #expect(named.map { $0["client_id"] as? String } == ["a{{b}}-car-{i}", "a{{b}}-{fleet}-{i}"])
        #expect(try fleets(["sub", "--prefix", "s1"]).map { $0["client_id"] as? String } == ["s1-{fleet}-{i}"])
        #expect(try fleets(["conn", "--prefix", "c1"]).map { $0["client_id"] as? String } == ["c1-{fleet}-{i}"])
        // The printed scenario says which command line it came from, the prefix included.
        let printed = FleetCommandLineTests.run(["pub", "-c", "2", "--prefix", "run2", "--print-scenario"])
        #expect(try Self.json(printed.output)["description"] as? String == "fleetbench pub -c 2 -q 0 --prefix run2")
        // The same flags print the same scenario: nothing random in it.
        #expect(FleetCommandLineTests.run(["pub", "-c", "2", "--prefix", "run2", "--print-scenario"]).output == printed.output)
        let empty = FleetCommandLineTests.run(["pub", "--prefix", ""])
        #expect(empty.code == .usage)
        #expect(empty.error.contains("--prefix needs a text, such as run2"))
    }

    @Test("two pub --with-subscriber runs at once on one broker and the same topics, with --prefix a and b: the ids on the wire are a-pub-0.., b-sub-0; no session taken over; each receives its own 20")
    func prefixSideBySide() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let work = RunEndToEndTests.temporaryDirectory("prefix")
        defer { try? FileManager.default.removeItem(atPath: work) }
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        func arguments(_ prefix: String) -> [String] {
            ["pub", "-c", "2", "--limit", "10", "-I", "100", "-q", "1", "-t", "side/%i", "--with-subscriber",
             "--prefix", prefix, "--broker", broker.url, "--out", work + "/" + prefix, "--quiet"]
        }
        // Run a as a process of its own, its output into files; run b meanwhile through the usual helper.
        let processA = Process()
        processA.executableURL = URL(fileURLWithPath: try RunEndToEndTests.binary())
        processA.arguments = arguments("a")
        processA.currentDirectoryURL = RunEndToEndTests.root
        FileManager.default.createFile(atPath: work + "/a.stderr", contents: nil)
        processA.standardOutput = FileHandle.nullDevice
        processA.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: work + "/a.stderr"))
        try processA.run()
        defer { if processA.isRunning { processA.terminate() } }
        let outcomeB = try Self.run(arguments("b"))
        processA.waitUntilExit()
        #expect(processA.terminationStatus == 0, "\((try? String(contentsOfFile: work + "/a.stderr", encoding: .utf8)) ?? "")")
        #expect(outcomeB.status == 0, "\(outcomeB.output)\n\(outcomeB.error)")
        let log = try String(contentsOfFile: broker.logPath, encoding: .utf8)
        // mosquitto logs every CONNECT's client id ("... as a-pub-0 (p2, c1, k60)."): each id once, no other.
        let ids = log.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("New client connected"), let range = line.range(of: " as ") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != " " })
        }
        #expect(ids.sorted() == ["a-pub-0", "a-pub-1", "a-sub-0", "b-pub-0", "b-pub-1", "b-sub-0"])
        for prefix in ["a", "b"] {
            let report = try RunEndToEndTests.report(in: work + "/" + prefix)
            #expect(Self.int(report, "connections", "succeeded") == 3)
            #expect(Self.int(report, "connections", "reconnects") == 0)
            #expect((report["connections"] as? [String: Any])?["disconnects_by_reason"] as? NSDictionary
                    == ["client_initiated": 3] as NSDictionary)
            #expect(Self.int(report, "messages", "qos1", "published") == 20)
            // Only the run's own messages are received; the other run's arrive as well, as foreign.
            #expect(Self.int(report, "messages", "qos1", "received") == 20)
            #expect(Self.int(report, "messages", "qos1", "arrived") == 20 + (Self.int(report, "delivery", "foreign") ?? -1))
            #expect(Self.int(report, "delivery", "qos1", "lost") == 0)
            #expect(Self.int(report, "delivery", "qos1", "duplicated") == 0)
        }
    }

    @Test("every option each one-liner takes is in its help with an example; fleetbench --help and help pub list them")
    func helpListsEveryFlag() {
        let shared = ["-c", "--count", "-V", "--protocol", "-k", "--keepalive", "-C", "--clean", "-u", "--username",
                      "-P", "--password", "--client-id", "--prefix", "--connect-rate", "-i", "--connect-interval", "--duration",
                      "--broker", "--host", "-p", "--port", "-S", "--tls", "--ws", "--threshold", "--name", "--print-scenario",
                      "--plan", "--out", "--summary-json", "--seed", "--run-id", "--lanes", "--quiet", "-h", "--help"]
        let pubOnly = ["-I", "--interval", "--rate", "-t", "--topic", "-s", "--size", "-m", "--message", "-q", "--qos",
                       "-r", "--retain", "-L", "--limit", "--with-subscriber"]
        for kind in OneLinerCommand.Kind.allCases {
            let help = OneLinerCommand.help(kind)
            let listed = Set(UsageError.options(in: help))
            var expected = shared
            switch kind {
            case .pub: expected += pubOnly
            case .sub: expected += ["-t", "--topic", "-q", "--qos"]
            case .conn: break
            }
            #expect(Set(expected).subtracting(listed).isEmpty, "\(kind): \(Set(expected).subtracting(listed))")
            // Nothing listed that the command would refuse.
            #expect(listed.filter { !OneLinerCommand.takes($0, kind) }.isEmpty)
            #expect(help.contains("Examples:\n  fleetbench \(kind.rawValue) -c "))
            #expect(FleetCommandLineTests.run(["help", kind.rawValue]).output == help + "\n")
            #expect(FleetCommandLineTests.run([kind.rawValue, "--help"]).output == help + "\n")
        }
        let usage = FleetCommandLineTests.run(["--help"]).output
        #expect(usage.contains("\n  pub [options]       run publishers from emqtt-bench-style flags, no scenario file needed\n"))
        #expect(FleetCommandLineTests.run(["pubb"]).error.hasPrefix("fleetbench: unknown command 'pubb'; did you mean 'pub'?"))
    }
}
