import FleetJSON
import FleetScenario
import Foundation

/// `fleetbench pub|sub|conn [flags]`: a scenario built from emqtt-bench-style flags, run exactly as `run` runs a
/// file (the same RunCommand: results folder, summary, thresholds, exit codes, embedded broker). `--print-scenario`
/// writes the scenario the flags mean instead, `--plan` its plan.
struct OneLinerCommand {
    enum Kind: String, CaseIterable { case pub, sub, conn }

    /// The variable a literal `-P` password is passed through: the scenario text names it, never the password.
    static let passwordVariable = "FLEETBENCH_PASSWORD"

    let kind: Kind
    var count = 10
    var interval: TimeSpan?
    var rate: Double?
    var topic: String?
    var size: Int?
    var message: String?
    var qos = 0
    var retain = false
    var protocolVersion: String?
    var keepalive: TimeSpan?
    var clean: Bool?
    var username: String?
    var password: String?
    var connectRate: Double?
    var limit: Int?
    var duration: TimeSpan?
    var tls = false
    var webSocket = false
    var thresholds: [String] = []
    var brokers: [String] = []
    var host: String?
    var port: Int?
    var clientID: String?
    /// emqtt-bench's --prefix: put in front of every client id of the one-liner (its subscriber's too), joined
    /// with `-`, so runs side by side on one broker do not take over each other's sessions.
    var prefix: String?
    var name: String?
    var withSubscriber = false
    var printScenario = false
    var printPlan = false
    /// Options handed to `run` unchanged.
    var runArguments: [String] = []

    init(kind: Kind) { self.kind = kind }

    // MARK: Help

    static func help(_ kind: Kind) -> String {
        let what: String
        let example: String
        switch kind {
        case .pub:
            what = """
                Runs a fleet of publishers built from the flags, as emqtt-bench pub does, through the same engine,
                results folder, summary, thresholds and exit codes as `fleetbench run`. --with-subscriber adds one
                subscriber to the topics, so end-to-end latency and loss are measured.
                """
            example = """
                  fleetbench pub -c 100 -I 10 -t bench/%i -s 256 -q 1 --with-subscriber --duration 30s
                  fleetbench pub -c 3 --limit 10 -q 1 --with-subscriber --threshold 'delivery.qos1.lost == 0'
                  fleetbench pub -c 1000 --rate 2 --broker mqtt://10.0.0.5:1883 --print-scenario > my.json
                """
        case .sub:
            what = """
                Runs a fleet of subscribers built from the flags, as emqtt-bench sub does. Messages published by
                other tools carry no fleetbench header: they are received and counted as delivery.foreign.
                """
            example = """
                  fleetbench sub -c 500 -t bench/# -q 1 --broker mqtt://10.0.0.5:1883 --duration 1m
                """
        case .conn:
            what = """
                Connects a fleet of idle clients built from the flags and keeps them connected (keepalive only), as
                emqtt-bench conn does.
                """
            example = """
                  fleetbench conn -c 5000 --connect-rate 500 -k 30 --duration 2m
                """
        }
        var options = """
              -c, --count N           clients (default 10), e.g. -c 1000
            """
        switch kind {
        case .pub:
            options += """

                  -I, --interval MS       milliseconds between a client's messages (default 1000), or a duration,
                                          e.g. -I 10 or -I 250us
                  --rate N                messages per second per client instead of -I, e.g. --rate 2.5
                  -t, --topic PATTERN     topic; {i} (client index from 0), {client_id}, and emqtt-bench's %i, %c,
                                          %u (the -u user name) (default fleetbench/{client_id}), e.g. -t bench/%i
                  -s, --size BYTES        payload size, at least the 40-byte end-to-end header (default 256),
                                          e.g. -s 1024
                  -m, --message TEXT      payload text instead of -s (taken literally), e.g. -m hello
                  -q, --qos 0|1|2         QoS of the messages (default 0), e.g. -q 1
                  -r, --retain            publish retained messages
                  -L, --limit N           messages per client, then it stops publishing; without --duration the
                                          run lasts as long as that takes plus 1 s, e.g. --limit 100
                  --with-subscriber       add one subscriber to the topics (same QoS): end-to-end latency and loss
                """
        case .sub:
            options += """

                  -t, --topic FILTER      topic filter; {i}, {client_id}, %i, %c, %u and wildcards (default
                                          fleetbench/#), e.g. -t bench/#
                  -q, --qos 0|1|2         QoS of the subscriptions (default 0), e.g. -q 1
                """
        case .conn:
            break
        }
        options += """

              -V, --protocol VERSION  3.1, 3.1.1 or 5 (emqtt-bench's 3, 4, 5 too; default 3.1.1), e.g. -V 5
              -k, --keepalive S       keepalive in seconds, or a duration (default 60), e.g. -k 30
              -C, --clean [BOOL]      clean session (3.x) / clean start (5): true (the default) or false,
                                      e.g. -C false
              -u, --username NAME     user name, e.g. -u bench
              -P, --password PASS     password; prefer the environment: with -u and no -P the password is
                                      read from FLEETBENCH_PASSWORD, and -P '${MY_VAR}' names another variable.
                                      It is never written to the scenario, the report or the screen.
                                      e.g. FLEETBENCH_PASSWORD=... fleetbench \(kind.rawValue) -u bench
              --client-id PATTERN     client ids, with {i} (default {fleet}-{i}: \(kind.rawValue)-0, \(kind.rawValue)-1, ...),
                                      e.g. --client-id bench-{i:05}
              --prefix TEXT           put TEXT- in front of every client id (emqtt-bench's --prefix);
                                      runs at once on one broker need distinct prefixes or client ids,
                                      else they take over each other's sessions. e.g. --prefix run2
                                      (ids run2-\(kind.rawValue)-0, ...\(kind == .pub ? ", and run2-sub-0" : ""))
              --connect-rate N        new connections per second (default: as fast as 100 in flight allow),
                                      e.g. --connect-rate 500
              -i, --connect-interval MS  emqtt-bench's -i: milliseconds between connects (1000/MS per second),
                                      e.g. -i 10
              --duration D            run time from the first connect (default 10s), e.g. --duration 5m
              --broker URL[,URL...]   brokers (default: an embedded mosquitto on 127.0.0.1), e.g.
                                      --broker mqtt://10.0.0.5:1883
              --host HOST             broker host instead of --broker (with -p), e.g. --host 10.0.0.5
              -p, --port PORT         broker port (default 1883, 8883 with --tls, 80 with --ws, 443 with both),
                                      e.g. -p 1884
              -S, --tls               connect over TLS (mqtts; the embedded broker gets a throwaway CA)
              --ws                    connect over WebSocket (ws; wss with --tls)
              --threshold EXPR        a threshold as in scenarios (repeatable), e.g.
                                      --threshold 'latency.end_to_end.p99 < 50ms'
              --name NAME             the scenario's name, used for the results folder (default \(kind.rawValue))
              --print-scenario        print the scenario the flags mean as JSON and exit (run it with
                                      `fleetbench run FILE`)
              --plan                  print the plan of that scenario (as `fleetbench validate`) and exit
              --out DIR               results folder (default reports/<name>-<UTC yyyymmdd-hhmmss>),
                                      e.g. --out /tmp/pub-test
              --summary-json FILE     also write the summary as JSON (- for standard output; the printed
                                      summary then goes to standard error), e.g. --summary-json -
              --seed N                seed of every random choice, e.g. --seed 42
              --run-id HEX            the run id written into every message, e.g. --run-id 5eed
              --lanes N               lanes (serial queues) to run clients on, e.g. --lanes 2
              --workers N|auto        run as N worker processes, merged at the end (see fleetbench run --help)
              --quiet                 print only the summary
              -h, --help              show this help
            """
        return """
            Usage: fleetbench \(kind.rawValue) [options]

            \(what)

            Examples:
            \(example)

            Options:
            \(options)

            Exit codes: 0 finished and thresholds passed, 1 runtime failure, 2 usage error, 65 invalid scenario,
            99 thresholds failed.
            """
    }

    // MARK: Parsing

    /// The options each kind takes (anything else is an unknown option, with did-you-mean from its help).
    static func takes(_ option: String, _ kind: Kind) -> Bool {
        switch option {
        case "-I", "--interval", "--rate", "-s", "--size", "-m", "--message", "-r", "--retain", "-L", "--limit",
             "--with-subscriber":
            return kind == .pub
        case "-t", "--topic", "-q", "--qos":
            return kind != .conn
        default:
            return true
        }
    }

    static func parse(_ kind: Kind, _ arguments: [String]) throws(UsageError) -> OneLinerCommand? {
        var command = OneLinerCommand(kind: kind)
        // A flag tool's errors are about one flag: a pointer to the help says more than a screen of it.
        var scanner = ArgumentScanner(arguments, command: kind.rawValue, help: help(kind), showsHelp: false)
        func fail(_ message: String) -> UsageError { scanner.failure(message) }
        while let argument = try scanner.next() {
            func value() throws(UsageError) -> String { try scanner.value() }
            func integer(_ range: ClosedRange<Int>, _ what: String) throws(UsageError) -> Int {
                try scanner.value(what) { Int($0).flatMap { range.contains($0) ? $0 : nil } }
            }
            func positive(_ what: String) throws(UsageError) -> Double {
                try scanner.value(what) { Double($0).flatMap { $0 > 0 && $0.isFinite ? $0 : nil } }
            }
            /// A bare number in `unit` (emqtt-bench's way) or a duration string.
            func span(unit: UInt64, _ what: String) throws(UsageError) -> TimeSpan {
                try scanner.value(what) { text in
                    if let number = UInt64(text), number > 0, number < 1_000_000_000 { return TimeSpan(nanoseconds: number * unit) }
                    guard let span = try? TimeSpan.parse(text).get(), span.nanoseconds > 0 else { return nil }
                    return span
                }
            }
            guard argument == "-h" || argument == "--help" || !scanner.isOption || takes(argument, kind) else {
                throw scanner.unknownOption()
            }
            switch argument {
            case "-h", "--help": return nil
            case "-c", "--count": command.count = try integer(1...10_000_000, "a number of clients from 1 to 10000000")
            case "-I", "--interval":
                command.interval = try span(unit: 1_000_000, "milliseconds above 0 or a duration such as 250ms")
            case "--rate": command.rate = try positive("messages per second per client above 0, such as 2.5")
            case "-t", "--topic": command.topic = try value()
            case "-s", "--size": command.size = try integer(0...268_435_455, "a payload size in bytes from 0 to 268435455")
            case "-m", "--message": command.message = try value()
            case "-q", "--qos": command.qos = try integer(0...2, "0, 1 or 2")
            case "-r", "--retain": command.retain = true
            case "-V", "--protocol":
                let text = try value()
                switch text {
                case "3", "3.1": command.protocolVersion = "3.1"
                case "4", "3.1.1": command.protocolVersion = "3.1.1"
                case "5", "5.0": command.protocolVersion = "5"
                default: throw fail("\(argument) needs 3.1, 3.1.1 or 5 (or emqtt-bench's 3, 4, 5), got '\(text)'")
                }
            case "-k", "--keepalive":
                let text = try value()
                if let seconds = UInt64(text), seconds <= 65535 {
                    command.keepalive = .seconds(seconds)
                } else if case .success(let span) = TimeSpan.parse(text), span.nanoseconds % 1_000_000_000 == 0,
                          span.nanoseconds <= 65535 * 1_000_000_000 {
                    command.keepalive = span
                } else {
                    throw fail("\(argument) needs whole seconds from 0 to 65535, such as 30 or 1m, got '\(text)'")
                }
            case "-C", "--clean":
                // `-C`, `-C false` or `--clean=false`: a following word that is not true or false is not its value.
                let text = scanner.optionalValue { Bool($0) != nil } ?? "true"
                guard let flag = Bool(text) else { throw fail("\(argument) takes true or false, got '\(text)'") }
                command.clean = flag
            case "-u", "--username": command.username = try value()
            case "-P", "--password": command.password = try value()
            case "--client-id": command.clientID = try value()
            case "--prefix":
                let text = try value()
                guard !text.isEmpty else { throw fail("--prefix needs a text, such as run2") }
                command.prefix = text
            case "--connect-rate": command.connectRate = try positive("connections per second above 0, such as 500")
            case "-i", "--connect-interval":
                let interval = try span(unit: 1_000_000, "milliseconds above 0 or a duration such as 10ms")
                command.connectRate = 1e9 / Double(interval.nanoseconds)
            case "-L", "--limit": command.limit = try integer(1...1_000_000_000, "a number of messages per client from 1")
            case "--duration":
                let text = try value()
                guard case .success(let duration) = TimeSpan.parse(text), duration.nanoseconds > 0 else {
                    throw fail("--duration needs a duration such as 30s or 5m, got '\(text)'")
                }
                command.duration = duration
            case "-S", "--tls": command.tls = true
            case "--ws": command.webSocket = true
            case "--threshold":
                let text = try value()
                if case .failure(let error) = Threshold.parse(text) {
                    throw fail("--threshold '\(text)': \(error.description)")
                }
                command.thresholds.append(text)
            case "--broker": command.brokers += try value().split(separator: ",").map(String.init)
            case "--host": command.host = try value()
            case "-p", "--port": command.port = try integer(1...65535, "a port from 1 to 65535")
            case "--name": command.name = try value()
            case "--with-subscriber": command.withSubscriber = true
            case "--print-scenario": command.printScenario = true
            case "--plan": command.printPlan = true
            case "--quiet": command.runArguments.append(argument)
            case "--out", "--summary-json", "--seed", "--run-id", "--lanes", "--workers":
                command.runArguments += [argument, try value()]
            default:
                if scanner.isOption { throw scanner.unknownOption() }
                throw fail("\(kind.rawValue) takes options only, got '\(argument)'")
            }
        }
        if command.interval != nil && command.rate != nil { throw fail("give -I/--interval or --rate, not both") }
        if command.size != nil && command.message != nil { throw fail("give -s/--size or -m/--message, not both") }
        if command.password != nil && command.username == nil { throw fail("-P/--password needs -u/--username") }
        if (command.host != nil || command.port != nil) && !command.brokers.isEmpty {
            throw fail("give --broker or --host/--port, not both")
        }
        if command.printScenario && command.printPlan { throw fail("give --print-scenario or --plan, not both") }
        return command
    }

    // MARK: The scenario

    /// emqtt-bench's `%i` and `%c` as fleetbench's `{i}` and `{client_id}`, `%u` as the user name.
    func pattern(_ text: String) -> String {
        var pattern = text.replacingOccurrences(of: "%i", with: "{i}").replacingOccurrences(of: "%c", with: "{client_id}")
        if let username {
            let literal = username.replacingOccurrences(of: "{", with: "{{").replacingOccurrences(of: "}", with: "}}")
            pattern = pattern.replacingOccurrences(of: "%u", with: literal)
        }
        return pattern
    }

    /// A publish topic pattern as a filter matching every client's topic: each level with a per-client
    /// placeholder becomes `+`; `{fleet}` is the publishing fleet's name.
    static func filter(matching topic: String, fleet: String) -> String {
        topic.replacingOccurrences(of: "{fleet}", with: fleet).split(separator: "/", omittingEmptySubsequences: false)
            .map { level in
                level.contains("{i}") || level.contains("{i:") || level.contains("{client_id}") ? "+" : String(level)
            }.joined(separator: "/")
    }

    var fleetName: String { kind.rawValue }

    /// The client id pattern of a fleet of the one-liner: --client-id (the publishers', subscribers' or
    /// connections') or the scenario default, with --prefix in front. Nil leaves the scenario default.
    func clientIDPattern(_ given: String?) -> String? {
        guard let prefix else { return given.map(pattern) }
        let literal = prefix.replacingOccurrences(of: "{", with: "{{").replacingOccurrences(of: "}", with: "}}")
        return literal + "-" + (given.map(pattern) ?? "{fleet}-{i}")
    }

    /// How long the run lasts: --duration; with --limit and no --duration, the connects (1 s, or the clients at
    /// --connect-rate), the limit's messages at their pace, and 1 s; otherwise 10 s.
    var runDuration: TimeSpan {
        if let duration { return duration }
        if kind == .pub, let limit {
            let gap = interval?.nanoseconds ?? rate.map { UInt64((1e9 / $0).rounded(.up)) } ?? 1_000_000_000
            let connecting = connectRate.map { UInt64((Double(count) / $0).rounded(.up)) * 1_000_000_000 } ?? 1_000_000_000
            let publishing = UInt64(limit) * gap
            // Whole milliseconds, so the printed scenario says exactly this.
            let total = connecting + publishing + 1_000_000_000
            return TimeSpan(nanoseconds: (total + 999_999) / 1_000_000 * 1_000_000)
        }
        return .seconds(10)
    }

    /// The password as the scenario names it, and what the environment must add for it: a `${NAME}` given is
    /// kept; a literal password goes through FLEETBENCH_PASSWORD.
    var passwordReference: (text: String, environment: [String: String])? {
        guard username != nil else { return nil }
        if let password {
            if ScenarioRedaction.isOnlyReference(password) { return (password, [:]) }
            return ("${\(Self.passwordVariable)}", [Self.passwordVariable: password])
        }
        if ProcessInfo.processInfo.environment[Self.passwordVariable] != nil { return ("${\(Self.passwordVariable)}", [:]) }
        return nil
    }

    var transport: String? {
        switch (tls, webSocket) {
        case (true, true): return "wss"
        case (true, false): return "mqtts"
        case (false, true): return "ws"
        case (false, false): return nil
        }
    }

    var brokerURLs: [String] {
        if !brokers.isEmpty { return brokers }
        guard host != nil || port != nil else { return [] }
        let scheme = transport ?? "mqtt"
        let defaultPort = ["mqtt": 1883, "mqtts": 8883, "ws": 80, "wss": 443][scheme]!
        var hostText = host ?? "127.0.0.1"
        if hostText.contains(":") && !hostText.hasPrefix("[") { hostText = "[\(hostText)]" }
        return ["\(scheme)://\(hostText):\(port ?? defaultPort)" + (webSocket ? "/mqtt" : "")]
    }

    /// The connection settings every fleet of the one-liner shares.
    func connectionMembers(subscriber: Bool) -> [JSONMember] {
        var members: [JSONMember] = []
        if let protocolVersion { members.append(JSONMember("protocol", .string(protocolVersion))) }
        if let transport { members.append(JSONMember("transport", .string(transport))) }
        if let keepalive { members.append(JSONMember("keepalive", .string(keepalive.description))) }
        if let clean {
            members.append(JSONMember(protocolVersion == "5" ? "clean_start" : "clean_session", .bool(clean)))
        }
        if let username {
            var credentials = [JSONMember("username", .string(username))]
            if let password = passwordReference { credentials.append(JSONMember("password", .string(password.text))) }
            members.append(JSONMember("credentials", .object(credentials)))
        }
        if let connectRate, !subscriber { members.append(JSONMember("connect_rate", .real(connectRate))) }
        return members
    }

    /// The scenario the flags mean, as the JSON a scenario file would hold.
    var scenarioJSON: JSONValue {
        let displayName = name ?? kind.rawValue
        var fleet: [JSONMember] = [JSONMember("name", .string(fleetName)), JSONMember("count", .integer(Int64(count)))]
        if let clientID = clientIDPattern(clientID) { fleet.append(JSONMember("client_id", .string(clientID))) }
        fleet += connectionMembers(subscriber: false)
        var fleets: [JSONValue] = []
        switch kind {
        case .pub:
            let topic = pattern(self.topic ?? "fleetbench/{client_id}")
            var stream: [JSONMember] = [JSONMember("topic", .string(topic)), JSONMember("qos", .integer(Int64(qos)))]
            if retain { stream.append(JSONMember("retain", .bool(true))) }
            if let rate {
                stream.append(JSONMember("schedule", .object([
                    JSONMember("type", .string("rate")), JSONMember("per_second", .real(rate)),
                ])))
            } else {
                stream.append(JSONMember("schedule", .object([
                    JSONMember("type", .string("interval")),
                    JSONMember("every", .string((interval ?? .seconds(1)).description)),
                ])))
            }
            if let message {
                let literal = message.replacingOccurrences(of: "{", with: "{{").replacingOccurrences(of: "}", with: "}}")
                stream.append(JSONMember("payload", .object([JSONMember("text", .string(literal))])))
            } else {
                stream.append(JSONMember("payload", .object([JSONMember("size", .integer(Int64(size ?? 256)))])))
            }
            if let limit { stream.append(JSONMember("limit", .integer(Int64(limit)))) }
            fleet.append(JSONMember("publish", .array([.object(stream)])))
            fleets.append(.object(fleet))
            if withSubscriber {
                var subscriber: [JSONMember] = [JSONMember("name", .string("sub")), JSONMember("count", .integer(1))]
                // Not the publishers' --client-id: the scenario default, behind the --prefix.
                if clientID != nil || prefix != nil {
                    subscriber.append(JSONMember("client_id", .string(clientIDPattern(nil) ?? "{fleet}-{i}")))
                }
                subscriber += connectionMembers(subscriber: true)
                subscriber.append(JSONMember("subscriptions", .array([.object([
                    JSONMember("filter", .string(Self.filter(matching: topic, fleet: fleetName))),
                    JSONMember("qos", .integer(Int64(qos))),
                ])])))
                fleets.append(.object(subscriber))
            }
        case .sub:
            fleet.append(JSONMember("subscriptions", .array([.object([
                JSONMember("filter", .string(pattern(topic ?? "fleetbench/#"))),
                JSONMember("qos", .integer(Int64(qos))),
            ])])))
            fleets.append(.object(fleet))
        case .conn:
            fleets.append(.object(fleet))
        }
        var root: [JSONMember] = [
            JSONMember("name", .string(displayName)),
            JSONMember("description", .string("fleetbench " + describedArguments)),
        ]
        let urls = brokerURLs
        if !urls.isEmpty { root.append(JSONMember("brokers", .array(urls.map { .string($0) }))) }
        root.append(JSONMember("duration", .string(runDuration.description)))
        root.append(JSONMember("fleets", .array(fleets)))
        if !thresholds.isEmpty { root.append(JSONMember("thresholds", .array(thresholds.map { .string($0) }))) }
        return .object(root)
    }

    /// The command line the scenario came from, for its description (the password left out).
    var describedArguments: String { arguments.joined(separator: " ") }

    /// The flags that shape the scenario, rebuilt in a canonical order (no password, no run options).
    var arguments: [String] {
        var words = [kind.rawValue, "-c", String(count)]
        if let interval { words += ["-I", interval.description] }
        if let rate { words += ["--rate", JSONWriter.formatReal(rate)] }
        if let topic { words += ["-t", topic] }
        if let size { words += ["-s", String(size)] }
        if message != nil { words += ["-m", "..."] }
        if kind != .conn { words += ["-q", String(qos)] }
        if retain { words.append("-r") }
        if let protocolVersion { words += ["-V", protocolVersion] }
        if let limit { words += ["--limit", String(limit)] }
        if withSubscriber { words.append("--with-subscriber") }
        if let prefix { words += ["--prefix", prefix] }
        return words
    }

    /// The scenario text: what --print-scenario writes and what the run reads.
    var scenarioText: String { JSONWriter.string(from: scenarioJSON) }

    // MARK: Running

    /// `fleetbench pub:12:6: thresholds[0]: ...` → `fleetbench pub: scenario thresholds[0]: ...`: line and column
    /// of a text nobody wrote say nothing; the JSON path does.
    static func withoutPositions(_ message: String, label: String) -> String {
        message.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.hasPrefix(label + ":") else { return String(line) }
            var rest = line.dropFirst(label.count + 1)
            for _ in 0..<2 {
                let digits = rest.prefix { $0.isNumber }
                guard !digits.isEmpty, rest.dropFirst(digits.count).first == ":" else { return String(line) }
                rest = rest.dropFirst(digits.count + 1)
            }
            return label + ": scenario" + rest
        }.joined(separator: "\n")
    }

    func run(console: Console) -> ExitCode {
        let label = "fleetbench \(kind.rawValue)"
        let text = scenarioText
        let environment = passwordReference?.environment ?? [:]
        // The scenario must be valid before it is printed, planned or run.
        let scenario: Scenario
        do {
            var merged = ProcessInfo.processInfo.environment
            merged.merge(environment) { _, extra in extra }
            scenario = try Scenario.decode(document: try JSONDocument.parse(text: text, file: label), environment: merged)
        } catch {
            console.error(Self.withoutPositions("\(error)", label: label)
                + "\n`\(label) ... --print-scenario` prints the scenario these paths refer to")
            return .invalidScenario
        }
        if printScenario {
            console.write(text, to: console.outputDescriptor)
            if password != nil && environment[Self.passwordVariable] != nil {
                console.error("fleetbench \(kind.rawValue): the scenario reads the password from $\(Self.passwordVariable); "
                    + "set it before `fleetbench run`")
            }
            return .success
        }
        if printPlan {
            console.print(ScenarioPlan(scenario).render())
            return .success
        }
        let parsed: RunCommand?
        do {
            parsed = try RunCommand.parse([label] + runArguments)
        } catch {
            console.usageError(error, command: kind.rawValue, help: Self.help(kind))
            return .usage
        }
        guard var command = parsed else { return .usage }
        command.generatedScenario = text
        command.extraEnvironment = environment
        return command.run(console: console)
    }
}
