import FleetReports
import Foundation

/// Writes a run's results folder: report.json, report.html, junit.xml, latency.hlog.
enum ResultsFolder {
    static func write(_ report: RunReport, to directory: String, streamed: Bool = false) throws {
        try ReportWriter.write(report, to: directory, streamed: streamed)
    }

    /// Creates `directory` if needed and proves a file can be created in it, before any client connects: a run
    /// whose results cannot be kept is refused up front rather than measured and lost. nil when writable, else why
    /// not. Only the probe file is written (and removed); permissions are tried, not inferred, so this holds for
    /// root, read-only mounts and paths through a regular file alike.
    static func writabilityProblem(_ directory: String) -> String? {
        if let failure = makeDirectories(directory) { return "cannot create the folder: \(failure)" }
        let probe = directory + "/.fleetbench-write-check-\(getpid())"
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return "cannot create files in it: \(String(cString: strerror(errno)))" }
        close(descriptor)
        unlink(probe)
        return nil
    }

    /// `mkdir -p`, with the system's reason when it fails (Foundation's message is generic on Linux).
    static func makeDirectories(_ directory: String) -> String? {
        var path = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) == 0 || errno == EEXIST {
                var status = stat()
                guard stat(path, &status) == 0 else { return String(cString: strerror(errno)) }
                if status.st_mode & S_IFMT != S_IFDIR { return "\(path) is not a folder" }
                continue
            }
            return String(cString: strerror(errno))
        }
        return nil
    }

    /// The folder as an absolute path, `.` and `..` resolved: a relative `reports/…` printed at the end of a run
    /// is lost on whoever started fleetbench from another folder, or reads its log later.
    static func absolute(_ path: String, from currentDirectory: String = FileManager.default.currentDirectoryPath) -> String {
        let joined = path.hasPrefix("/") ? path : currentDirectory + "/" + path
        var components: [Substring] = []
        for component in joined.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }
}
