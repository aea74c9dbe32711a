#if canImport(Glibc)
import Glibc
#endif
import FleetPayload

/// The `fleetbench` command: parses the first word and hands over to a command.
public enum FleetCommandLine {
    /// The commands, in the order the usage lists them: adding a command is adding its line here.
    static let commands: [CommandEntry] = [
        CommandEntry("run", "run SCENARIO", "run a scenario (starts an embedded mosquitto when no broker is named)",
                     RunCommand.self),
        oneLiner(.pub, "run publishers from emqtt-bench-style flags, no scenario file needed"),
        oneLiner(.sub, "run subscribers from flags"),
        oneLiner(.conn, "connect idle clients from flags"),
        CommandEntry("validate", "validate FILE...", "check scenario files without running them and print their plan",
                     ValidateCommand.self),
        CommandEntry("report", "report DIR", "re-render report.html, junit.xml and timeline.csv from DIR/report.json",
                     ReportCommand.self),
        CommandEntry("compare", "compare BASE CAND", "compare two report.json files and flag regressions",
                     CompareCommand.self),
        CommandEntry("capacity", "capacity SCENARIO",
                     "find the highest level of one value (--vary) at which the thresholds hold", CapacityCommand.self),
        CommandEntry("merge", "merge DIR...", "merge the results folders of one run's segments into one",
                     MergeCommand.self),
        CommandEntry("help", "help [COMMAND]", "show help for a command", help: { usage }) { arguments in
            { console in help(for: arguments.first, console: console) }
        },
        CommandEntry("version", "version", "print the version", listed: false, help: { usage }) { _ in
            { console in version(console: console) }
        },
    ]

    static func oneLiner(_ kind: OneLinerCommand.Kind, _ summary: String) -> CommandEntry {
        CommandEntry(kind.rawValue, "\(kind.rawValue) [options]", summary, help: { OneLinerCommand.help(kind) }) {
            arguments throws(UsageError) in
            guard let command = try OneLinerCommand.parse(kind, arguments) else { return nil }
            return { console in command.run(console: console) }
        }
    }

    public static let usage = """
        fleetbench \(FleetVersion.current): load-test MQTT brokers and simulate vehicle fleets.

        Usage: fleetbench <command> [options]

        Commands:
        \(commandList)

        Options:
          -h, --help          show this help
          --version           print the version

        Exit codes: 0 passed, 1 runtime failure, 2 usage error, 65 invalid scenario, 99 thresholds failed.
        """

    /// The usage's command list: synopsis and summary in two columns, from `commands`.
    static var commandList: String {
        let lines: [String] = commands.filter(\.listed).map { command in
            let synopsis = command.synopsis.padding(toLength: 18, withPad: " ", startingAt: 0)
            return "  \(synopsis)  \(command.summary)"
        }
        return lines.joined(separator: "\n")
    }

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
        switch first {
        case "--version": return version(console: console)
        case "-h", "--help":
            console.print(usage)
            return .success
        default:
            guard let command = command(named: first) else {
                console.error(unknownCommand(first))
                return .usage
            }
            return command.execute(Array(arguments.dropFirst()), console: console)
        }
    }

    static func command(named name: String) -> CommandEntry? { commands.first { $0.name == name } }

    static func version(console: Console) -> ExitCode {
        console.print("fleetbench \(FleetVersion.current)")
        return .success
    }

    /// `unknown command 'valdate'; did you mean 'validate'?`: the closest command rather than the whole usage.
    static func unknownCommand(_ word: String, in context: String = "fleetbench") -> String {
        if word.hasPrefix("-") {
            let options = UsageError.options(in: usage)
            var message = "\(context): unknown option '\(word)'"
            if let suggestion = closestMatch(to: word, among: options) { message += "; did you mean '\(suggestion)'?" }
            return message + "\n`fleetbench --help` lists the commands and options."
        }
        var message = "\(context): unknown command '\(word)'"
        if let suggestion = closestMatch(to: word, among: commands.map(\.name)) {
            message += "; did you mean '\(suggestion)'?"
        } else {
            message += " (commands: \(commands.map(\.name).joined(separator: ", ")))"
        }
        return message + "\n`fleetbench --help` describes them."
    }

    /// `fleetbench help [COMMAND]`.
    static func help(for name: String?, console: Console) -> ExitCode {
        guard let name else {
            console.print(usage)
            return .success
        }
        guard let command = command(named: name), command.listed else {
            console.error(unknownCommand(name, in: "fleetbench help"))
            return .usage
        }
        console.print(command.help())
        return .success
    }
}
