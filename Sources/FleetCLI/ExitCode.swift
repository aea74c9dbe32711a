/// Process exit codes, documented in the README. Stable: CI pipelines branch on them.
public enum ExitCode: Int32, Sendable {
    /// The run finished and every threshold passed.
    case success = 0
    /// A runtime failure (broker unreachable, I/O error, internal error).
    case runtimeFailure = 1
    /// The command line was wrong.
    case usage = 2
    /// The scenario file is invalid (sysexits' EX_DATAERR).
    case invalidScenario = 65
    /// The run finished but thresholds (or a baseline comparison) failed.
    case thresholdsFailed = 99
}
