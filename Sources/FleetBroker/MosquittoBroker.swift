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
    public let layout: MosquittoLayout
    public let executablePath: String

    /// All mutable state sits behind this lock: tests may stop a broker from another thread than the one that made it.
    private let lock = NSLock()
    private var process: Process?

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
        lock.withLock { process.flatMap { $0.isRunning ? $0.processIdentifier : nil } }
    }

    public var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

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
        let port = try LoopbackPort.free()
        let websocketsPort = configuration.websocketsListener ? try LoopbackPort.free() : nil
        let tlsPort = configuration.tlsListener != nil ? try LoopbackPort.free() : nil
        layout = MosquittoLayout(
            host: "127.0.0.1", port: port, websocketsPort: websocketsPort, tlsPort: tlsPort, directory: directory)
        let runAsUser = geteuid() == 0 ? "root" : nil
        let text = configuration.renderedFile(layout: layout, runAsUser: runAsUser)
        guard FileManager.default.createFile(atPath: layout.configPath, contents: Data(text.utf8)) else {
            throw .launchFailed(executable: executablePath, reason: "cannot write \(layout.configPath)")
        }
        lock.lock()
        defer { lock.unlock() }
        try startLocked()
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
            guard let running = process else { return }
            if running.isRunning { _ = Glibc.kill(running.processIdentifier, SIGKILL) }
            running.waitUntilExit()
            process = nil
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
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executablePath)
        child.arguments = ["-c", layout.configPath]
        if !FileManager.default.fileExists(atPath: layout.consolePath) {
            _ = FileManager.default.createFile(atPath: layout.consolePath, contents: nil)
        }
        let console = FileHandle(forWritingAtPath: layout.consolePath)
        console?.seekToEndOfFile()
        child.standardOutput = console
        child.standardError = console
        child.standardInput = FileHandle.nullDevice
        do {
            try child.run()
        } catch {
            throw .launchFailed(executable: executablePath, reason: "\(error)")
        }
        process = child
        try waitUntilListening(child)
    }

    /// Polls a TCP connect to each listener every 10 ms until all accept, the child exits, or the deadline passes.
    private func waitUntilListening(_ child: Process) throws(MosquittoError) {
        let ports = [layout.port, layout.websocketsPort, layout.tlsPort].compactMap { $0 }
        let deadline = Date().addingTimeInterval(configuration.startTimeout)
        while true {
            if !child.isRunning {
                child.waitUntilExit()
                process = nil
                throw .exitedDuringStart(status: child.terminationStatus, logTail: logTail())
            }
            if ports.allSatisfy({ LoopbackPort.acceptsConnections(port: $0) }) { return }
            if Date() >= deadline {
                stopLocked()
                throw .notListening(port: layout.port, seconds: configuration.startTimeout, logTail: logTail())
            }
            usleep(10_000)
        }
    }

    private func stopLocked() {
        guard let running = process else { return }
        if running.isRunning {
            _ = Glibc.kill(running.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(configuration.stopTimeout)
            while running.isRunning && Date() < deadline { usleep(5_000) }
            if running.isRunning { _ = Glibc.kill(running.processIdentifier, SIGKILL) }
        }
        running.waitUntilExit()
        process = nil
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
