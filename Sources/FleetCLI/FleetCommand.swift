/// A `fleetbench` command: its help, a parser for the words after its name, and the run itself. Parsing is
/// separate from running so that tests check a command line without running anything.
protocol FleetCommand {
    /// What `fleetbench COMMAND --help` prints; also the list of options "did you mean" chooses from.
    static var help: String { get }
    /// The command from the words after its name; nil when they ask for the help.
    static func parse(_ arguments: [String]) throws(UsageError) -> Self?
    func run(console: Console) -> ExitCode
}

/// One command as the command line knows it: the one place that names it, says what it does in the usage
/// and how to parse and run it. `FleetCommandLine.commands` lists them all.
struct CommandEntry: Sendable {
    let name: String
    /// The usage's left column, e.g. `run SCENARIO`.
    let synopsis: String
    /// The usage's right column.
    let summary: String
    /// Whether the usage's command list shows it (`version` is listed as the `--version` option).
    var listed = true
    let help: @Sendable () -> String
    /// Parses the words after the name into something to run; nil when they ask for the help.
    let parse: @Sendable ([String]) throws(UsageError) -> ((Console) -> ExitCode)?

    init(_ name: String, _ synopsis: String, _ summary: String, listed: Bool = true,
         help: @escaping @Sendable () -> String,
         parse: @escaping @Sendable ([String]) throws(UsageError) -> ((Console) -> ExitCode)?) {
        self.name = name
        self.synopsis = synopsis
        self.summary = summary
        self.listed = listed
        self.help = help
        self.parse = parse
    }

    /// A command that is a `FleetCommand` type.
    init<Command: FleetCommand>(_ name: String, _ synopsis: String, _ summary: String, _ type: Command.Type) {
        self.init(name, synopsis, summary, help: { Command.help }) { arguments throws(UsageError) in
            guard let command = try Command.parse(arguments) else { return nil }
            return { console in command.run(console: console) }
        }
    }

    /// Parses and runs: the help for `--help`, the usage error (exit 2) for a command line it cannot understand.
    func execute(_ arguments: [String], console: Console) -> ExitCode {
        let run: ((Console) -> ExitCode)?
        do {
            run = try parse(arguments)
        } catch {
            console.usageError(error, command: name, help: help())
            return .usage
        }
        guard let run else {
            console.print(help())
            return .success
        }
        return run(console)
    }
}
