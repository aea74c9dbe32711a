import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A mosquitto child process on free loopback ports with a generated configuration, for `fleetbench run`'s embedded
/// broker, tests and benchmarks. Started by `init`; stopped by `stop()`, `kill()` or deinit.
///
/// Open files: the child inherits this process's RLIMIT_NOFILE (raised to the hard limit before launch). On this
/// machine the hard limit is 20,000, so one mosquitto holds at most about 19,990 clients; mosquitto has no fd cap of
/// its own beyond that (`max_connections` defaults to unlimited).
public final class MosquittoBroker: @unchecked Sendable {
    public let configuration: MosquittoConfiguration
    /// Set during init (re-picked if a port was taken in the meantime) and fixed afterwards, across restarts.
    public private(set) var layout: MosquittoLayout
    public let executablePath: String

    /// All mutable state sits behind this lock: tests may stop a broker from another thread than the one that made it.
    private let lock = NSLock()
    /// The running child's pid; nil when none runs. Spawned with posix_spawn and reaped with waitpid by this class
    /// alone (Foundation's Process reported exits late here, which made every stop wait out its timeout).
    private var childPid: pid_t?

    public var host: String { layout.host }
    public var port: UInt16 { layout.port }
    /// `mqtt://127.0.0.1:<port>`, the form `--broker` takes.
    public var url: String { "mqtt://\(layout.host):\(layout.port)" }
    /// `ws://127.0.0.1:<port>/` when the websockets listener is configured.
    public var websocketsURL: String? { layout.websocketsPort.map { "ws://\(layout.host):\($0)/" } }
    public var tlsPort: UInt16? { layout.tlsPort }
    public var logPath: String { layout.logPath }
    public var configPath: String { layout.configPath }

    /// The child's pid while it runs, nil after stop/kill.
    public var pid: Int32? {
        lock.withLock { () -> Int32? in
            reapIfExitedLocked()
            return childPid
        }
    }

    public var isRunning: Bool { pid != nil }

    /// Locates mosquitto, picks free ports, writes the configuration and starts the broker; returns once it accepts
    /// TCP connections on every listener.
    public init(configuration: MosquittoConfiguration = MosquittoConfiguration()) throws(MosquittoError) {
        self.configuration = configuration
        if let directories = configuration.searchDirectories {
            executablePath = try MosquittoLocator.locate(in: directories)
        } else {
            executablePath = try MosquittoLocator.locate()
        }
        let directory = try Self.makeTemporaryDirectory()
        layout = try Self.pickLayout(configuration: configuration, directory: directory)
        lock.lock()
        defer { lock.unlock() }
        // A port checked free can be taken before mosquitto binds it (another test or broker starting at the same
        // moment); then mosquitto exits and new ports are tried, up to three times. A taken TCP port says "Address
        // already in use"; a taken websockets port "Unable to create websockets listener"; and an exit before
        // anything reached the logs is retried too (the last attempt's error is the one reported).
        for attempt in 1...3 {
            do {
                try writeConfiguration()
                try startLocked()
                return
            } catch .exitedDuringStart(_, let tail) where attempt < 3 && Self.mayBeAPortRace(tail) {
                layout = try Self.pickLayout(configuration: configuration, directory: directory)
            }
        }
    }

    /// Whether mosquitto's log tail after an exit during start may mean a port was taken meanwhile.
    public static func mayBeAPortRace(_ logTail: String) -> Bool {
        logTail.contains("Address already in use") || logTail.contains("Unable to create websockets listener")
            || logTail.allSatisfy(\.isWhitespace)
    }

    private static func pickLayout(
        configuration: MosquittoConfiguration, directory: String
    ) throws(MosquittoError) -> MosquittoLayout {
        let port = try LoopbackPort.free()
        let websocketsPort = configuration.websocketsListener ? try LoopbackPort.free() : nil
        let tlsPort = configuration.tlsListener != nil ? try LoopbackPort.free() : nil
        return MosquittoLayout(
            host: "127.0.0.1", port: port, websocketsPort: websocketsPort, tlsPort: tlsPort, directory: directory)
    }

    private func writeConfiguration() throws(MosquittoError) {
        let runAsUser = geteuid() == 0 ? "root" : nil
        let text = configuration.renderedFile(layout: layout, runAsUser: runAsUser)
        guard FileManager.default.createFile(atPath: layout.configPath, contents: Data(text.utf8)) else {
            throw .launchFailed(executable: executablePath, reason: "cannot write \(layout.configPath)")
        }
        // Fresh logs per attempt, so an error message belongs to this attempt.
        _ = FileManager.default.createFile(atPath: layout.consolePath, contents: nil)
        try? FileManager.default.removeItem(atPath: layout.logPath)
    }

    deinit {
        stopLocked()
        try? FileManager.default.removeItem(atPath: layout.directory)
    }

    /// SIGTERM, then SIGKILL if the broker has not exited within `configuration.stopTimeout`. Idempotent.
    public func stop() {
        lock.withLock { stopLocked() }
    }

    /// SIGKILL at once: an abrupt broker crash (no DISCONNECT, no will handling beyond what clients notice).
    public func kill() {
        lock.withLock {
            guard let running = childPid else { return }
            _ = Glibc.kill(running, SIGKILL)
            _ = Self.waitForExit(running)
            childPid = nil
        }
    }

    /// Stops (gracefully) and starts again on the same ports with the same configuration. mosquitto sets
    /// SO_REUSEADDR on its listeners, so the port is bindable again despite connections left in TIME_WAIT.
    public func restart() throws(MosquittoError) {
        lock.lock()
        defer { lock.unlock() }
        stopLocked()
        try startLocked()
    }

    /// The last `lines` lines of mosquitto's log file and its console output, for error messages.
    public func logTail(lines: Int = 20) -> String {
        Self.tail(of: layout.consolePath, lines: lines) + Self.tail(of: layout.logPath, lines: lines)
    }

    // MARK: - Internals (called with the lock held)

    private func startLocked() throws(MosquittoError) {
        Self.raiseOpenFileLimitToHardLimit()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // mosquitto's console output (errors printed before its log file opens) is appended to console.log.
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, layout.consolePath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        BrokerSpawn.closeInheritedDescriptors(&actions)
        let arguments = [executablePath, "-c", layout.configPath]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        BrokerSpawn.resetSignals(&attributes, ownProcessGroup: false)
        var spawned: pid_t = 0
        var status = posix_spawn(&spawned, executablePath, &actions, &attributes, &argv, environ)
        // ETXTBSY: the executable is still open for writing somewhere (just installed, or a child another thread
        // is spawning inherited the writer's descriptor for a moment). It clears by itself; try a few more times.
        for _ in 0..<100 where status == ETXTBSY {
            usleep(10_000)
            status = posix_spawn(&spawned, executablePath, &actions, &attributes, &argv, environ)
        }
        if status != 0 {
            throw .launchFailed(executable: executablePath, reason: String(cString: strerror(status)))
        }
        childPid = spawned
        try waitUntilListening()
    }

    /// Polls a TCP connect to each listener every 10 ms until all accept, the child exits, or the deadline passes.
    private func waitUntilListening() throws(MosquittoError) {
        let ports = [layout.port, layout.websocketsPort, layout.tlsPort].compactMap { $0 }
        let deadline = Date().addingTimeInterval(configuration.startTimeout)
        while true {
            if let exitStatus = reapIfExitedLocked() {
                throw .exitedDuringStart(status: exitStatus, logTail: logTail())
            }
            if ports.allSatisfy({ LoopbackPort.acceptsConnections(port: $0) }) { return }
            if Date() >= deadline {
                stopLocked()
                throw .notListening(port: layout.port, seconds: configuration.startTimeout, logTail: logTail())
            }
            usleep(10_000)
        }
    }

    /// If the child has exited, reaps it, clears `childPid` and returns its exit status (128+signal if killed).
    @discardableResult
    private func reapIfExitedLocked() -> Int32? {
        guard let running = childPid else { return nil }
        var status: Int32 = 0
        let result = waitpid(running, &status, WNOHANG)
        if result == 0 { return nil }  // still running
        childPid = nil
        return result == running ? Self.exitCode(fromWaitStatus: status) : -1
    }

    private func stopLocked() {
        guard let running = childPid else { return }
        _ = Glibc.kill(running, SIGTERM)
        let deadline = Date().addingTimeInterval(configuration.stopTimeout)
        while reapIfExitedLocked() == nil && childPid != nil {
            if Date() >= deadline {
                _ = Glibc.kill(running, SIGKILL)
                _ = Self.waitForExit(running)
                childPid = nil
                return
            }
            usleep(2_000)
        }
    }

    /// Blocking waitpid, retried on EINTR.
    private static func waitForExit(_ child: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        return exitCode(fromWaitStatus: status)
    }

    /// WIFEXITED/WEXITSTATUS/WTERMSIG are macros Swift does not import; the encoding is glibc's.
    private static func exitCode(fromWaitStatus status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    private static func makeTemporaryDirectory() throws(MosquittoError) -> String {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp")
        var template = Array((base + "/fleetbench-mosquitto-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return mkdtemp(base) != nil
        }
        if !made { throw LoopbackPort.systemError("mkdtemp") }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// The open-file limit a broker started now would get (this process's soft limit after raising it to the hard
    /// limit). Roughly the most clients one embedded mosquitto can hold; `fleetbench run` can warn above it.
    public static func openFileLimitForChild() -> UInt64 {
        raiseOpenFileLimitToHardLimit()
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        return UInt64(limit.rlim_cur)
    }

    private static func raiseOpenFileLimitToHardLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    private static func tail(of path: String, lines: Int) -> String {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return "" }
        let text = String(decoding: data, as: UTF8.self)
        let all = text.split(separator: "\n", omittingEmptySubsequences: false)
        let trimmed = all.last == "" ? all.dropLast() : all[...]
        return trimmed.suffix(lines).joined(separator: "\n") + "\n"
    }
}
