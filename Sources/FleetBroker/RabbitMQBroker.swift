import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How a private RabbitMQ node is set up. Stock RabbitMQ apart from what a private loopback node needs: its
/// listeners on 127.0.0.1 and the MQTT plugin enabled. RabbitMQ's defaults already let MQTT clients log in
/// anonymously as `guest` (`mqtt.allow_anonymous`), and `guest` may log in over loopback, which is all tests use.
public struct RabbitMQConfiguration: Sendable, Equatable {
    /// Lines appended to the generated rabbitmq.conf (sysctl format), for settings not modelled here.
    public var extraLines: [String] = []
    /// How long to wait for the MQTT listener to answer a CONNECT (seconds). Erlang boots slowly: about 6 s on
    /// an idle 2-core machine, several times that under load.
    public var startTimeout: Double = 180
    /// How long stop() waits for a graceful shutdown before SIGKILL (seconds).
    public var stopTimeout: Double = 30
    /// The start script (the real one, not Debian's /usr/sbin wrapper that switches to the rabbitmq user and
    /// writes under /var); nil: searched with `RabbitMQLocator`.
    public var serverScript: String? = nil

    public init() {}
}

/// Ports, names and files of one node. Fixed after start.
public struct RabbitMQLayout: Sendable, Equatable {
    public var host: String
    public var mqttPort: UInt16
    public var amqpPort: UInt16
    /// The Erlang distribution port of the node (`RABBITMQ_DIST_PORT`), bound to 127.0.0.1.
    public var distributionPort: UInt16
    /// The node's own epmd (`ERL_EPMD_PORT`): private, so it can be stopped with the node and never clashes with
    /// another node's epmd on the machine.
    public var epmdPort: UInt16
    public var nodeName: String
    public var directory: String

    public init(host: String, mqttPort: UInt16, amqpPort: UInt16, distributionPort: UInt16, epmdPort: UInt16,
                nodeName: String, directory: String) {
        self.host = host
        self.mqttPort = mqttPort
        self.amqpPort = amqpPort
        self.distributionPort = distributionPort
        self.epmdPort = epmdPort
        self.nodeName = nodeName
        self.directory = directory
    }

    public var configPath: String { directory + "/rabbitmq.conf" }
    public var enabledPluginsPath: String { directory + "/enabled_plugins" }
    public var environmentFilePath: String { directory + "/rabbitmq-env.conf" }
    public var advancedConfigPath: String { directory + "/advanced.config" }
    public var mnesiaBase: String { directory + "/mnesia" }
    public var logBase: String { directory + "/log" }
    public var logPath: String { logBase + "/\(nodeName).log" }
    public var consolePath: String { directory + "/console.log" }
    public var pidPath: String { directory + "/rabbitmq.pid" }
}

/// Finds RabbitMQ's start script.
public enum RabbitMQLocator {
    /// Debian's and the generic-unix package's places for the real start script. /usr/sbin/rabbitmq-server on
    /// Debian is a wrapper that runs the node as the rabbitmq user under /var/lib/rabbitmq, so it is not used.
    public static let defaultCandidates = [
        "/usr/lib/rabbitmq/bin/rabbitmq-server", "/usr/local/lib/rabbitmq/bin/rabbitmq-server",
    ]

    public static func locate(candidates: [String] = defaultCandidates) throws(RabbitMQError) -> String {
        for candidate in candidates where access(candidate, X_OK) == 0 { return candidate }
        throw .notInstalled(searched: candidates)
    }
}

/// A private RabbitMQ node with the MQTT plugin, for tests and benchmarks: its own node name, ports (MQTT, AMQP,
/// Erlang distribution, epmd; all on 127.0.0.1) and data directory under /tmp. `init` returns once the MQTT listener
/// answers a CONNECT with a CONNACK; `stop()` (or deinit) shuts the node and its private epmd down and removes
/// the data directory.
///
/// The node runs under a small shell wrapper whose standard input is a pipe held by this process: when the pipe
/// closes (stop, or this process dying, even by SIGKILL), the wrapper stops the node. So a crashed test run does
/// not leave an Erlang VM behind on the machine. Everything runs in its own process group, killed with SIGKILL if
/// the graceful stop takes longer than `stopTimeout`.
public final class RabbitMQBroker: @unchecked Sendable {
    public let configuration: RabbitMQConfiguration
    public private(set) var layout: RabbitMQLayout
    public let serverScript: String
    /// Seconds from spawning the node to its first CONNACK (the last attempt's, if a port race forced a retry).
    public private(set) var startupSeconds: Double = 0

    private let lock = NSLock()
    /// The wrapper's pid (also the process group id) while it runs.
    private var childPid: pid_t?
    /// Write end of the wrapper's stdin pipe; closing it stops the node.
    private var lifelineFD: Int32 = -1

    public var host: String { layout.host }
    public var port: UInt16 { layout.mqttPort }
    /// `mqtt://127.0.0.1:<port>`, the form `--broker` takes.
    public var url: String { "mqtt://\(layout.host):\(layout.mqttPort)" }

    /// The Erlang VM's pid (beam.smp, from the node's pid file) while it runs: for measuring the broker's CPU.
    public var nodePid: Int32? {
        guard isRunning, let data = FileManager.default.contents(atPath: layout.pidPath) else { return nil }
        return Int32(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    public var isRunning: Bool {
        lock.withLock { () -> Bool in
            reapIfExitedLocked()
            return childPid != nil
        }
    }

    public init(configuration: RabbitMQConfiguration = RabbitMQConfiguration()) throws(RabbitMQError) {
        self.configuration = configuration
        if let path = configuration.serverScript {
            serverScript = try RabbitMQLocator.locate(candidates: [path])
        } else {
            serverScript = try RabbitMQLocator.locate()
        }
        let directory = try Self.makeTemporaryDirectory()
        do {
            layout = try Self.pickLayout(directory: directory)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        lock.lock()
        defer { lock.unlock() }
        // A port checked free can be taken before the node binds it; then the node exits and new ports are tried.
        for attempt in 1...3 {
            do {
                try writeFiles()
                try startLocked()
                return
            } catch .exitedDuringStart(_, let tail) where attempt < 3 && tail.contains("eaddrinuse") {
                try? FileManager.default.removeItem(atPath: layout.mnesiaBase)
                layout = try Self.pickLayout(directory: directory)
            } catch {
                stopLocked()
                try? FileManager.default.removeItem(atPath: directory)
                throw error
            }
        }
    }

    deinit {
        stopLocked()
        try? FileManager.default.removeItem(atPath: layout.directory)
    }

    /// Stops the node gracefully (SIGKILL to its process group after `stopTimeout`), then its private epmd, and
    /// removes its data directory (a node is never restarted; a process that exits without releasing the broker,
    /// as a benchmark's global does, leaves nothing behind). Idempotent.
    public func stop() {
        lock.withLock {
            stopLocked()
            try? FileManager.default.removeItem(atPath: layout.directory)
        }
    }

    /// The last lines of the node's console output and its log file, for error messages.
    public func logTail(lines: Int = 30) -> String {
        Self.tail(of: layout.consolePath, lines: lines) + Self.tail(of: layout.logPath, lines: lines)
    }

    /// The rabbitmq.conf written for a layout: the listeners on loopback, nothing else changed from stock.
    public static func renderedConfiguration(layout: RabbitMQLayout, extraLines: [String] = []) -> String {
        var lines = [
            "# Written by fleetbench for a private test node; everything else is RabbitMQ's default.",
            "listeners.tcp.1 = \(layout.host):\(layout.amqpPort)",
            "mqtt.listeners.tcp.1 = \(layout.host):\(layout.mqttPort)",
        ]
        lines += extraLines
        return lines.joined(separator: "\n") + "\n"
    }

    /// The environment the node starts with: this process's, minus any RABBITMQ_*/ERL_EPMD_* setting that could
    /// point it at the machine's own node, plus the private layout. HOME is the data directory, so the Erlang
    /// cookie is written there and not into the user's home.
    public static func environment(layout: RabbitMQLayout, inherited: [String: String]) -> [String: String] {
        var environment = inherited.filter { !$0.key.hasPrefix("RABBITMQ_") && !$0.key.hasPrefix("ERL_EPMD_") }
        environment["HOME"] = layout.directory
        environment["RABBITMQ_NODENAME"] = layout.nodeName
        environment["RABBITMQ_MNESIA_BASE"] = layout.mnesiaBase
        environment["RABBITMQ_LOG_BASE"] = layout.logBase
        environment["RABBITMQ_CONFIG_FILE"] = layout.configPath
        environment["RABBITMQ_ADVANCED_CONFIG_FILE"] = layout.advancedConfigPath
        environment["RABBITMQ_ENABLED_PLUGINS_FILE"] = layout.enabledPluginsPath
        environment["RABBITMQ_CONF_ENV_FILE"] = layout.environmentFilePath
        environment["RABBITMQ_PID_FILE"] = layout.pidPath
        environment["RABBITMQ_DIST_PORT"] = String(layout.distributionPort)
        environment["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"] = "-kernel inet_dist_use_interface {127,0,0,1}"
        environment["ERL_EPMD_PORT"] = String(layout.epmdPort)
        environment["ERL_EPMD_ADDRESS"] = "127.0.0.1"
        return environment
    }

    // MARK: - Internals

    private static func pickLayout(directory: String) throws(RabbitMQError) -> RabbitMQLayout {
        var ports: [UInt16] = []
        do {
            while ports.count < 4 {
                let port = try LoopbackPort.free()
                if !ports.contains(port) { ports.append(port) }
            }
        } catch {
            throw RabbitMQError(error)
        }
        return RabbitMQLayout(
            host: "127.0.0.1", mqttPort: ports[0], amqpPort: ports[1], distributionPort: ports[2], epmdPort: ports[3],
            nodeName: "fleetbench-\(ports[0])@localhost", directory: directory)
    }

    private func writeFiles() throws(RabbitMQError) {
        let files = [
            (layout.configPath, Self.renderedConfiguration(layout: layout, extraLines: configuration.extraLines)),
            // Enabling the plugin by file, as `rabbitmq-plugins enable --offline` would, without its own Erlang VM.
            (layout.enabledPluginsPath, "[rabbitmq_mqtt].\n"),
            // An empty rabbitmq-env.conf, so /etc/rabbitmq/rabbitmq-env.conf does not apply to this node.
            (layout.environmentFilePath, ""),
            (layout.consolePath, ""),
        ]
        for (path, text) in files where !FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) {
            throw .systemCallFailed(call: "write \(path)", errno: 0, message: "cannot create the file")
        }
    }

    /// Stops the node when its stdin reaches end of file; exits with the node's status.
    private static let wrapperScript = """
        exec 3<&0
        "$1" </dev/null 3<&- &
        node=$!
        ( read -r _ <&3; kill -TERM "$node" 2>/dev/null ) &
        watcher=$!
        wait "$node"; status=$?
        kill "$watcher" 2>/dev/null
        exit "$status"
        """

    private func startLocked() throws(RabbitMQError) {
        var pipeEnds: [Int32] = [-1, -1]
        if pipe(&pipeEnds) != 0 { throw Self.systemError("pipe") }
        // Close-on-exec at once, so no other child spawned meanwhile holds the write end (which would keep the
        // node alive after this process is gone); the spawn's dup2 gives the wrapper its own stdin.
        _ = fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeEnds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, layout.consolePath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        BrokerSpawn.closeInheritedDescriptors(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own: the Erlang VM's children go with it on SIGKILL.
        BrokerSpawn.resetSignals(&attributes, ownProcessGroup: true)
        let arguments = ["/bin/sh", "-c", Self.wrapperScript, "fleetbench-rabbitmq", serverScript]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let environment = Self.environment(layout: layout, inherited: ProcessInfo.processInfo.environment)
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for entry in envp { free(entry) } }
        let started = Date()
        var spawned: pid_t = 0
        let status = posix_spawn(&spawned, "/bin/sh", &actions, &attributes, &argv, &envp)
        close(pipeEnds[0])
        if status != 0 {
            close(pipeEnds[1])
            throw .launchFailed(executable: serverScript, reason: String(cString: strerror(status)))
        }
        childPid = spawned
        lifelineFD = pipeEnds[1]
        try waitUntilReady()
        startupSeconds = Date().timeIntervalSince(started)
    }

    /// Polls every 50 ms: the listener accepting TCP, then a CONNECT answered by a successful CONNACK.
    private func waitUntilReady() throws(RabbitMQError) {
        let deadline = Date().addingTimeInterval(configuration.startTimeout)
        while true {
            if let exitStatus = reapIfExitedLocked() {
                closeLifeline()
                throw .exitedDuringStart(status: exitStatus, logTail: logTail())
            }
            if LoopbackPort.acceptsConnections(port: layout.mqttPort),
               Self.answersConnect(port: layout.mqttPort) {
                return
            }
            if Date() >= deadline {
                let tail = logTail()
                stopLocked()
                throw .notReady(port: layout.mqttPort, seconds: configuration.startTimeout, logTail: tail)
            }
            usleep(50_000)
        }
    }

    /// True when an MQTT 3.1.1 CONNECT (clean session, empty client id) gets CONNACK "accepted" within 2 s.
    static func answersConnect(port: UInt16) -> Bool {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if socketDescriptor < 0 { return false }
        defer { close(socketDescriptor) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(socketDescriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = LoopbackPort.loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return false }
        let connectPacket: [UInt8] = [0x10, 12, 0, 4, 0x4D, 0x51, 0x54, 0x54, 4, 0x02, 0, 60, 0, 0]
        let sent = send(socketDescriptor, connectPacket, connectPacket.count, Int32(MSG_NOSIGNAL))
        guard sent == connectPacket.count else { return false }
        var answer = [UInt8](repeating: 0, count: 4)
        var have = 0
        while have < 4 {
            let got = answer.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress! + have, 4 - have, 0) }
            if got <= 0 { return false }
            have += got
        }
        let disconnect: [UInt8] = [0xE0, 0]
        _ = send(socketDescriptor, disconnect, disconnect.count, Int32(MSG_NOSIGNAL))
        return answer == [0x20, 0x02, 0x00, 0x00]
    }

    private func closeLifeline() {
        if lifelineFD >= 0 {
            close(lifelineFD)
            lifelineFD = -1
        }
    }

    @discardableResult
    private func reapIfExitedLocked() -> Int32? {
        guard let running = childPid else { return nil }
        var status: Int32 = 0
        let result = waitpid(running, &status, WNOHANG)
        if result == 0 { return nil }
        childPid = nil
        let signal = status & 0x7F
        return result != running ? -1 : signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    private func stopLocked() {
        closeLifeline()
        if let running = childPid {
            let deadline = Date().addingTimeInterval(configuration.stopTimeout)
            while reapIfExitedLocked() == nil && childPid != nil && Date() < deadline { usleep(10_000) }
            // Whatever is left in the group (the node itself after a timeout) is killed; the group is empty
            // after a graceful stop and this is a no-op.
            _ = Glibc.kill(-running, SIGKILL)
            if childPid != nil {
                var status: Int32 = 0
                while waitpid(running, &status, 0) < 0 && errno == EINTR {}
                childPid = nil
            }
            Self.stopEpmd(port: layout.epmdPort)
        }
    }

    /// Asks the node's private epmd to exit (epmd's KILL_REQ: length 1, 'k'; it answers "OK"). epmd accepts it
    /// from loopback once no node is registered with it.
    static func stopEpmd(port: UInt16) {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if socketDescriptor < 0 { return }
        defer { close(socketDescriptor) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(socketDescriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = LoopbackPort.loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return }
        let request: [UInt8] = [0, 1, UInt8(ascii: "k")]
        guard send(socketDescriptor, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return }
        var answer = [UInt8](repeating: 0, count: 2)
        _ = answer.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress!, 2, 0) }
    }

    private static func makeTemporaryDirectory() throws(RabbitMQError) -> String {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp")
        var template = Array((base + "/fleetbench-rabbitmq-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return mkdtemp(base) != nil
        }
        if !made { throw systemError("mkdtemp") }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    private static func systemError(_ call: String) -> RabbitMQError {
        let code = errno
        return .systemCallFailed(call: call, errno: code, message: String(cString: strerror(code)))
    }

    private static func tail(of path: String, lines: Int) -> String {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return "" }
        let text = String(decoding: data, as: UTF8.self)
        let all = text.split(separator: "\n", omittingEmptySubsequences: false)
        let trimmed = all.last == "" ? all.dropLast() : all[...]
        return trimmed.suffix(lines).joined(separator: "\n") + "\n"
    }
}
