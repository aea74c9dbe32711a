#if canImport(Glibc)
import Glibc
#endif
import FleetPayload

/// The `fleetbench` command: parses the first word and hands over to a command.
public enum FleetCommandLine {
    public static let usage = """
        fleetbench \(FleetVersion.current): load-test MQTT brokers and simulate vehicle fleets.

        Usage: fleetbench <command> [options]

        Commands:
          run SCENARIO        run a scenario (starts an embedded mosquitto when no broker is named)
          pub [options]       run publishers from emqtt-bench-style flags, no scenario file needed
          sub [options]       run subscribers from flags
          conn [options]      connect idle clients from flags
          validate FILE...    check scenario files without running them and print their plan
          report DIR          re-render report.html, junit.xml and timeline.csv from DIR/report.json
          compare BASE CAND   compare two report.json files and flag regressions
          capacity SCENARIO   find the highest level of one value (--vary) at which the thresholds hold
          help [COMMAND]      show help for a command

        Options:
          -h, --help          show this help
          --version           print the version

        Exit codes: 0 passed, 1 runtime failure, 2 usage error, 65 invalid scenario, 99 thresholds failed.
        """

    /// Runs the command line and exits the process with its code.
    public static func main(arguments: [String]) -> Never {
        let code = run(arguments: arguments)
        exit(code.rawValue)
    }

    /// Runs the command line and returns its exit code (testable without exiting).
    public static func run(arguments: [String], console: Console = Console()) -> ExitCode {
        guard let first = arguments.first else {
            console.error(usage)
            return .usage
        }
        let rest = Array(arguments.dropFirst())
        switch first {
        case "--version", "version":
            console.print("fleetbench \(FleetVersion.current)")
            return .success
        case "-h", "--help":
            console.print(usage)
            return .success
        case "help":
            return help(for: rest.first, console: console)
        case "validate":
            do {
                guard let command = try ValidateCommand.parse(rest) else {
                    console.print(ValidateCommand.help)
                    return .success
                }
                return command.run(output: console)
            } catch {
                console.usageError(error, command: "validate", help: ValidateCommand.help)
                return .usage
            }
        case "run":
            do {
                guard let command = try RunCommand.parse(rest) else {
                    console.print(RunCommand.help)
                    return .success
                }
                return command.run(console: console)
            } catch {
                console.usageError(error, command: "run", help: RunCommand.help)
                return .usage
            }
        case "pub", "sub", "conn":
            let kind = OneLinerCommand.Kind(rawValue: first)!
            do {
                guard let command = try OneLinerCommand.parse(kind, rest) else {
                    console.print(OneLinerCommand.help(kind))
                    return .success
                }
                return command.run(console: console)
            } catch {
                console.usageError(error, command: first, help: OneLinerCommand.help(kind))
                return .usage
            }
        // MARK: report and compare (wt-reports)
        case "report":
            do {
                guard let command = try ReportCommand.parse(rest) else {
                    console.print(ReportCommand.help)
                    return .success
                }
                return command.run(console: console)
            } catch {
                console.usageError(error, command: "report", help: ReportCommand.help)
                return .usage
            }
        case "compare":
            do {
                guard let command = try CompareCommand.parse(rest) else {
                    console.print(CompareCommand.help)
                    return .success
                }
                return command.run(console: console)
            } catch {
                console.usageError(error, command: "compare", help: CompareCommand.help)
                return .usage
            }
        // MARK: end of report and compare
        case "capacity":
            do {
                guard let command = try CapacityCommand.parse(rest) else {
                    console.print(CapacityCommand.help)
                    return .success
                }
                return command.run(console: console)
            } catch {
                console.usageError(error, command: "capacity", help: CapacityCommand.help)
                return .usage
            }
        default:
            console.error(unknownCommand(first))
            return .usage
        }
    }

    /// The commands, in the order the usage lists them.
    static let commands = ["run", "pub", "sub", "conn", "validate", "report", "compare", "capacity", "help", "version"]

    /// `unknown command 'valdate'; did you mean 'validate'?`: the closest command rather than the whole usage.
    static func unknownCommand(_ word: String, in context: String = "fleetbench") -> String {
        if word.hasPrefix("-") {
            let options = UsageError.options(in: usage)
            var message = "\(context): unknown option '\(word)'"
            if let suggestion = closestMatch(to: word, among: options) { message += "; did you mean '\(suggestion)'?" }
            return message + "\n`fleetbench --help` lists the commands and options."
        }
        var message = "\(context): unknown command '\(word)'"
        if let suggestion = closestMatch(to: word, among: commands) {
            message += "; did you mean '\(suggestion)'?"
        } else {
            message += " (commands: \(commands.joined(separator: ", ")))"
        }
        return message + "\n`fleetbench --help` describes them."
    }

    static func help(for command: String?, console: Console) -> ExitCode {
        switch command {
        case nil:
            console.print(usage)
        case "validate":
            console.print(ValidateCommand.help)
        case "run":
            console.print(RunCommand.help)
        case "report":
            console.print(ReportCommand.help)
        case "compare":
            console.print(CompareCommand.help)
        case "pub", "sub", "conn":
            console.print(OneLinerCommand.help(OneLinerCommand.Kind(rawValue: command!)!))
        case "capacity":
            console.print(CapacityCommand.help)
        default:
            console.error(unknownCommand(command!, in: "fleetbench help"))
            return .usage
        }
        return .success
    }
}
