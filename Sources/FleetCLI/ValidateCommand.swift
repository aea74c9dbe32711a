import FleetJSON
import FleetScenario
import Foundation

/// `fleetbench validate FILE... [--set path=value]...`: checks scenario files without running them and prints
/// each one's plan. Every error of every file is printed (file:line:column: path: message), not only the first.
struct ValidateCommand: FleetCommand {
    static let help = """
        Usage: fleetbench validate FILE... [--set path=value]... [--plan]

        Checks scenario files without running them: JSON syntax, duplicate and unknown keys, types, ranges,
        thresholds, and subscriptions that would deliver one stream to a client twice (plain and shared, or two
        shared groups). Prints every error as file:line:column: path: message, and for a valid file a short plan
        (fleets, client counts, expected message rates, duration). FILE - reads standard input, e.g.
        fleetbench pub -c 10 -q 1 --with-subscriber --print-scenario | fleetbench validate --plan -

        Options:
          --set path=value    override a value before checking (repeatable), e.g. --set fleets.vehicles.count=5000
          --plan              print each valid file's plan (the default; kept for scripts that say so)
          -h, --help          show this help

        Exit codes: 0 all files valid, 2 usage error, 65 at least one file invalid.
        """

    var files: [String] = []
    var overrides: [String] = []

    /// Parses the arguments after `validate`.
    static func parse(_ arguments: [String]) throws(UsageError) -> ValidateCommand? {
        var command = ValidateCommand()
        var scanner = ArgumentScanner(arguments, command: "validate", help: help)
        while let option = try scanner.next() {
            switch option {
            case "-h", "--help": return nil
            case "--plan": break
            case "--set": command.overrides.append(try scanner.value())
            default: try scanner.positional(into: &command.files)
            }
        }
        guard !command.files.isEmpty else { throw UsageError("validate needs at least one scenario file") }
        return command
    }

    func run(console output: Console) -> ExitCode {
        var invalid = 0
        let environment = ProcessInfo.processInfo.environment
        for file in files {
            if file == "-" {
                // Standard input, named <stdin> in messages.
                let text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
                do {
                    let document = try JSONDocument.parse(text: text, file: "<stdin>")
                    let scenario = try Scenario.decode(document: document, overrides: overrides, environment: environment,
                                                       defaultName: "stdin")
                    output.print("<stdin>: valid")
                    output.print(ScenarioPlan(scenario).render())
                } catch {
                    output.error("\(error)")
                    invalid += 1
                }
                continue
            }
            guard FileManager.default.isReadableFile(atPath: file) else {
                output.error("\(file): cannot read the file (does it exist?)")
                invalid += 1
                continue
            }
            do {
                let scenario = try Scenario.load(path: file, overrides: overrides, environment: environment)
                if let refusal = ScenarioRouteCheck.diagnostic(scenario, file: file) {
                    output.error(refusal)
                    invalid += 1
                    continue
                }
                output.print("\(file): valid")
                output.print(ScenarioPlan(scenario).render())
            } catch {
                output.error(error.description)
                invalid += 1
            }
        }
        if invalid > 0 {
            output.error("\(invalid) of \(files.count) scenario file\(files.count == 1 ? "" : "s") invalid")
            return .invalidScenario
        }
        return .success
    }
}
