/// Why the embedded broker could not be started or stopped. Each message says what to do next.
public enum MosquittoError: Error, Equatable, CustomStringConvertible {
    /// No `mosquitto` executable in any searched directory.
    case notInstalled(searchedDirectories: [String])
    /// The child process could not be launched at all.
    case launchFailed(executable: String, reason: String)
    /// The child exited before it accepted connections (bad configuration, port taken, ...).
    case exitedDuringStart(status: Int32, logTail: String)
    /// The child kept running but did not accept TCP connections within the deadline.
    case notListening(port: UInt16, seconds: Double, logTail: String)
    /// A system call needed to prepare the run failed (temporary directory, free port).
    case systemCallFailed(call: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .notInstalled(let searched):
            return "mosquitto was not found (searched: \(searched.joined(separator: ", "))). "
                + "Install it with `sudo apt-get install mosquitto`, or pass `--broker URL` to use a running broker."
        case .launchFailed(let executable, let reason):
            return "could not launch \(executable): \(reason)"
        case .exitedDuringStart(let status, let logTail):
            return "mosquitto exited with status \(status) before accepting connections; log tail:\n\(logTail)"
        case .notListening(let port, let seconds, let logTail):
            return "mosquitto did not accept connections on 127.0.0.1:\(port) within \(seconds) s; log tail:\n\(logTail)"
        case .systemCallFailed(let call, let errno, let message):
            return "\(call) failed: \(message) (errno \(errno))"
        }
    }
}
