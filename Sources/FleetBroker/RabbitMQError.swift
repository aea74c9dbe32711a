/// Why a private RabbitMQ node could not be started. Each message says what to do next.
public enum RabbitMQError: Error, Equatable, CustomStringConvertible {
    /// No `rabbitmq-server` start script in any searched place.
    case notInstalled(searched: [String])
    /// The child process could not be launched at all.
    case launchFailed(executable: String, reason: String)
    /// The node exited before its MQTT listener answered a CONNECT.
    case exitedDuringStart(status: Int32, logTail: String)
    /// The node kept running but its MQTT listener did not answer a CONNECT with a CONNACK in time.
    case notReady(port: UInt16, seconds: Double, logTail: String)
    /// A system call needed to prepare the node failed (temporary directory, free port, files).
    case systemCallFailed(call: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .notInstalled(let searched):
            return "rabbitmq-server was not found (searched: \(searched.joined(separator: ", "))). "
                + "Install it with `sudo apt-get install --no-install-recommends rabbitmq-server` "
                + "(scripts/deps.sh does), or pass `--broker URL` to use a running broker."
        case .launchFailed(let executable, let reason):
            return "could not launch \(executable): \(reason)"
        case .exitedDuringStart(let status, let logTail):
            return "rabbitmq-server exited with status \(status) before its MQTT listener answered; log tail:\n\(logTail)"
        case .notReady(let port, let seconds, let logTail):
            return "RabbitMQ's MQTT listener on 127.0.0.1:\(port) did not answer a CONNECT within \(seconds) s; "
                + "log tail:\n\(logTail)"
        case .systemCallFailed(let call, let errno, let message):
            return "\(call) failed: \(message) (errno \(errno))"
        }
    }

    init(_ error: MosquittoError) {
        switch error {
        case .systemCallFailed(let call, let errno, let message):
            self = .systemCallFailed(call: call, errno: errno, message: message)
        default:
            self = .systemCallFailed(call: "port selection", errno: 0, message: error.description)
        }
    }
}
