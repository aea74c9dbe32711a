import FleetTestSupport
import Foundation
import Testing

/// Ctrl-C while the fleet is still connecting: once stops cleanly with whole results; twice quits at once,
/// exit 130, with no results, no partial files and no embedded broker left behind.
@Suite("Ctrl-C during the connect phase", .serialized)
struct RunInterruptTests {
    /// 300 clients at 30 connects/s: the connect phase lasts 10 s.
    static func scenario(in work: String) throws -> String {
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let path = work + "/slow-connect.json"
        try #"""
        {"duration": "30s", "seed": 3,
         "fleets": [
           {"name": "cars", "count": 300, "client_id": "int-{i:03}", "protocol": "5", "connect_rate": 30,
            "publish": [{"topic": "int/{client_id}", "qos": 1, "schedule": {"type": "interval", "every": "1s"},
                         "payload": {"size": 32}}]},
           {"name": "backend", "count": 1, "client_id": "int-backend", "protocol": "5",
            "subscriptions": [{"filter": "int/#", "qos": 1}]}
         ]}
        """#.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Children of `pid` (from /proc/*/stat).
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { candidate in
            guard let stat = try? String(contentsOfFile: "/proc/\(candidate)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && Int32(fields[1]) == pid
        }
    }

    /// Whether `pid` still runs (a zombie nobody reaped yet counts as gone).
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return !stat[stat.index(after: close)...].hasPrefix(" Z")
    }

    struct Outcome {
        var status: Int32
        var output: String
        var error: String
        var broker: Int32?
    }

    /// Starts the run, sends SIGINT once `signalWhen` holds (checked every 20 ms; after 60 s without, SIGINT
    /// anyway so nothing hangs) and notes the embedded broker; with `twice`, sends a second SIGINT as soon as the
    /// run has said it is stopping.
    static func run(_ arguments: [String], signalWhen: () -> Bool, twice: Bool = false) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try RunEndToEndTests.binary())
        process.arguments = arguments
        process.currentDirectoryURL = RunEndToEndTests.root
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin"
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let errors = ErrorText()
        error.fileHandleForReading.readabilityHandler = { handle in errors.append(handle.availableData) }
        try process.run()
        var broker: Int32?
        EventWait.until(seconds: 60, interval: 0.02) {
            if broker == nil { broker = children(of: process.processIdentifier).first }
            return signalWhen() || !process.isRunning
        }
        if broker == nil { broker = children(of: process.processIdentifier).first }
        kill(process.processIdentifier, SIGINT)
        if twice {
            let deadline = Date().addingTimeInterval(10)
            while !errors.text.contains("fleetbench: stopping") && Date() < deadline { usleep(1000) }
            kill(process.processIdentifier, SIGINT)
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        error.fileHandleForReading.readabilityHandler = nil
        errors.append(error.fileHandleForReading.readDataToEndOfFile())
        return Outcome(status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
                       error: errors.text, broker: broker)
    }

    final class ErrorText: @unchecked Sendable {
        // Safety: behind `lock`.
        private let lock = NSLock()
        private var data = Data()
        func append(_ more: Data) { lock.withLock { data.append(more) } }
        var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
    }

    @Test("Ctrl-C while connecting: exit 1, results whole and marked interrupted, every connect accounted for")
    func onceWhileConnecting() throws {
        let work = RunEndToEndTests.temporaryDirectory("interrupt-connect")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try Self.scenario(in: work)
        let out = work + "/results"
        // Part way through the connects: 30 of 301 clients connected (10 s at 30/s in all).
        let outcome = try Self.run(["run", scenario, "--out", out, "--quiet"],
                                   signalWhen: { RunProgress.connected(in: out) >= 30 })
        #expect(outcome.status == 1, "\(outcome.error)")
        #expect(outcome.error.contains("fleetbench: stopping (DISCONNECT, then results are written)"))
        let report = try RunEndToEndTests.report(in: out)
        #expect((report["run"] as? [String: Any])?["interrupted"] as? Bool == true)
        let connections = try #require(report["connections"] as? [String: Any])
        let attempted = try #require(connections["attempted"] as? Int)
        let succeeded = try #require(connections["succeeded"] as? Int)
        // Stopped part way: some connected, not all; nothing failed; a connect still awaiting its CONNACK when
        // the stop came (one or two at 30/s) is attempted without success; every client that never got
        // connected is counted, and every connected one disconnected cleanly.
        #expect(attempted > 1 && attempted < 301, "attempted \(attempted)")
        #expect(succeeded <= attempted && attempted - succeeded <= 2, "attempted \(attempted), succeeded \(succeeded)")
        #expect(connections["failed"] as? Int == 0)
        #expect(connections["never_connected"] as? Int == 301 - succeeded)
        let disconnects = try #require(connections["disconnects_by_reason"] as? [String: Any])
        #expect(disconnects["client_initiated"] as? Int == succeeded)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted()
            == ["junit.xml", "latency.hlog", "report.html", "report.json", "timeline.csv"])
        if let broker = outcome.broker { #expect(!Self.isRunning(broker), "the embedded mosquitto outlived the run") }
    }

    @Test("Ctrl-C twice while connecting: exit 130 at once, no results or partial files, broker stopped")
    func twiceWhileConnecting() throws {
        let work = RunEndToEndTests.temporaryDirectory("interrupt-twice")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try Self.scenario(in: work)
        let out = work + "/results"
        let outcome = try Self.run(["run", scenario, "--out", out, "--quiet"],
                                   signalWhen: { RunProgress.connected(in: out) >= 30 }, twice: true)
        #expect(outcome.status == 130, "\(outcome.error)")
        #expect(outcome.error.contains("fleetbench: stopping (DISCONNECT, then results are written)"))
        #expect(outcome.error.contains("fleetbench: quitting without writing results\n"))
        #expect(outcome.output.isEmpty)
        // The folder was made (and proved writable) before the run; nothing is left in it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == [])
        let broker = try #require(outcome.broker, "no embedded mosquitto was seen")
        // Killed before fleetbench exited; give init a moment to reap it.
        var running = Self.isRunning(broker)
        for _ in 0..<40 where running {
            Thread.sleep(forTimeInterval: 0.05)
            running = Self.isRunning(broker)
        }
        #expect(!running, "the embedded mosquitto (pid \(broker)) outlived fleetbench")
    }
}
