#if canImport(Glibc)
import Glibc
#endif

/// The `fleetbench` command: parses the first word and hands over to a command.
public enum FleetCommandLine {
    public static let usage = """
        fleetbench \(FleetVersion.current): load-test MQTT brokers and simulate vehicle fleets.

        Usage: fleetbench <command> [options]

        Commands:
          run SCENARIO        run a scenario (starts an embedded mosquitto when no broker is named)
          validate FILE...    check scenario files without running them and print their plan
          report DIR          re-render report.html and junit.xml from DIR/report.json
          compare BASE CAND   compare two report.json files and flag regressions
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
    public static func run(arguments: [String]) -> ExitCode {
        guard let first = arguments.first else {
            printError(usage)
            return .usage
        }
        switch first {
        case "--version", "version":
            print("fleetbench \(FleetVersion.current)")
            return .success
        case "-h", "--help", "help":
            print(usage)
            return .success
        default:
            printError("fleetbench: unknown command '\(first)'\n\n\(usage)")
            return .usage
        }
    }

    /// Writes to standard error through the file descriptor: the C `stderr` global is shared mutable
    /// state that Swift 6 strict concurrency rejects.
    static func printError(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
