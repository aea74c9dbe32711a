import Foundation
import Testing
@testable import FleetCLI

/// The command line through `FleetCommandLine.run`, with output captured in pipes.
@Suite("fleetbench command line")
struct FleetCommandLineTests {
    /// Runs the command line with stdout and stderr sent to pipes; returns the exit code and both texts.
    static func run(_ arguments: [String]) -> (code: ExitCode, output: String, error: String) {
        let output = Pipe()
        let error = Pipe()
        var console = Console()
        console.outputDescriptor = output.fileHandleForWriting.fileDescriptor
        console.errorDescriptor = error.fileHandleForWriting.fileDescriptor
        let code = FleetCommandLine.run(arguments: arguments, console: console)
        try? output.fileHandleForWriting.close()
        try? error.fileHandleForWriting.close()
        let outputText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errorText = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (code, outputText, errorText)
    }

    static let scenarios = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scenarios").path

    @Test("--version prints the version and exits 0")
    func version() {
        let result = Self.run(["--version"])
        #expect(result.code == .success)
        #expect(result.output == "fleetbench \(FleetVersion.current)\n")
        #expect(result.error == "")
    }

    @Test("--help prints the usage and exits 0")
    func help() {
        let result = Self.run(["--help"])
        #expect(result.code == .success)
        #expect(result.output == FleetCommandLine.usage + "\n")
    }

    @Test("no command, or an unknown one, is a usage error (exit 2)")
    func usageErrors() {
        #expect(Self.run([]).code == .usage)
        let unknown = Self.run(["frobnicate"])
        #expect(unknown.code == .usage)
        #expect(unknown.error.hasPrefix("fleetbench: unknown command 'frobnicate' (commands: "))
        #expect(Self.run(["validate"]).error.hasPrefix("fleetbench validate: validate needs at least one scenario file\n"))
        #expect(Self.run(["validate", "--bogus", "x.json"]).code == .usage)
    }

    @Test("an unknown command or option names the closest one instead of printing the whole help", arguments: [
        (["valdate", "x.json"], "fleetbench: unknown command 'valdate'; did you mean 'validate'?\n`fleetbench --help` describes them.\n"),
        (["comapre"], "fleetbench: unknown command 'comapre'; did you mean 'compare'?\n`fleetbench --help` describes them.\n"),
        (["frobnicate"], "fleetbench: unknown command 'frobnicate' (commands: run, pub, sub, conn, validate, report, compare, capacity, help, version)\n"
            + "`fleetbench --help` describes them.\n"),
        (["--verison"], "fleetbench: unknown option '--verison'; did you mean '--version'?\n`fleetbench --help` lists the commands and options.\n"),
        (["help", "rnu"], "fleetbench help: unknown command 'rnu' (commands: run, pub, sub, conn, validate, report, compare, capacity, help, version)\n"
            + "`fleetbench --help` describes them.\n"),
        (["help", "reprot"], "fleetbench help: unknown command 'reprot'; did you mean 'report'?\n`fleetbench --help` describes them.\n"),
        (["run", "x.json", "--qiuet"], "fleetbench run: unknown option '--qiuet' for run; did you mean '--quiet'?\n"
            + "`fleetbench run --help` lists every option.\n"),
        (["run", "x.json", "--baseine", "b"], "fleetbench run: unknown option '--baseine' for run; did you mean '--baseline'?\n"
            + "`fleetbench run --help` lists every option.\n"),
        (["validate", "--sett", "a=1", "x.json"], "fleetbench validate: unknown option '--sett' for validate; did you mean '--set'?\n"
            + "`fleetbench validate --help` lists every option.\n"),
        (["compare", "a", "b", "--toleranse=5%"], "fleetbench compare: unknown option '--toleranse=5%' for compare; did you mean '--tolerance'?\n"
            + "`fleetbench compare --help` lists every option.\n"),
        (["report", "--hepl"], "fleetbench report: unknown option '--hepl' for report; did you mean '--help'?\n"
            + "`fleetbench report --help` lists every option.\n"),
    ])
    func didYouMean(arguments: [String], error: String) {
        let result = Self.run(arguments)
        #expect(result.code == .usage)
        #expect(result.error == error)
        #expect(result.output == "")
    }

    @Test("the options of a command are read from its help")
    func optionsFromHelp() {
        #expect(UsageError.options(in: CompareCommand.help)
            == ["--tolerance", "--latency-floor", "--format", "--output", "--all", "-h", "--help"])
        #expect(UsageError.options(in: FleetCommandLine.usage) == ["-h", "--help", "--version"])
    }

    @Test("validate accepts the library's quickstart and prints its plan")
    func validateQuickstart() {
        let file = Self.scenarios + "/quickstart.json"
        let result = Self.run(["validate", file])
        #expect(result.code == .success)
        #expect(result.output.hasPrefix("\(file): valid\nscenario quickstart: "))
    }

    @Test("validate reports every error with file:line:column and exits 65")
    func validateInvalid() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fleetbench-cli-\(getpid()).json").path
        try #"{"name": "x", "duration": "10 parsecs", "fleets": []}"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = Self.run(["validate", file])
        #expect(result.code == .invalidScenario)
        #expect(result.error == """
            \(file):1:27: duration: expected a duration such as "250ms", "30s" or "5m", got string "10 parsecs" \
            (missing unit after '10')
            \(file):1:51: fleets: expected at least one fleet, got an empty array
            1 of 1 scenario file invalid

            """)
    }

    @Test("validate of a missing file says so and exits 65")
    func validateMissing() {
        let result = Self.run(["validate", "/nonexistent/scenario.json"])
        #expect(result.code == .invalidScenario)
        #expect(result.error == "/nonexistent/scenario.json: cannot read the file (does it exist?)\n1 of 1 scenario file invalid\n")
    }
}
