import FleetTestSupport
import Foundation
import Testing

/// The built `fleetbench` binary run as a user would: exit codes, Ctrl-C, an unreachable broker, a missing file.
/// scripts/test builds the release binary first; a developer's newer debug build is preferred when present.
@Suite("fleetbench run, end to end")
struct RunEndToEndTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func binary() throws -> String {
        let candidates = [".build/debug/fleetbench", ".build/release/fleetbench"].map { root.appendingPathComponent($0).path }
        let existing = candidates.filter { FileManager.default.isExecutableFile(atPath: $0) }
        let newest = existing.max { modified($0) < modified($1) }
        guard let newest else {
            throw BinaryMissing(description: "no fleetbench binary: run `swift build --product fleetbench` first")
        }
        return newest
    }

    struct BinaryMissing: Error, CustomStringConvertible { let description: String }

    static func modified(_ path: String) -> Date {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
    }

    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs the built binary from the repository root: `input` on its standard input (closed after it),
    /// `environment` added to the test's, `launcher` in front (e.g. `prlimit --fsize=N`); `interruptWhen` sends
    /// SIGINT once it holds (checked every 10 ms; after 60 s without, SIGINT anyway so nothing hangs), e.g. once
    /// the run's streamed timeline shows every client connected (`RunProgress`). The one way the tests start
    /// fleetbench as a process.
    static func run(_ arguments: [String], input: String? = nil, environment extra: [String: String] = [:],
                    launcher: [String] = [], interruptWhen: (() -> Bool)? = nil) throws -> Outcome {
        let process = Process()
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = Array(launcher.dropFirst()) + [try binary()] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: try binary())
            process.arguments = arguments
        }
        process.currentDirectoryURL = root
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = standardInput
        try process.run()
        if let input { standardInput.fileHandleForWriting.write(Data(input.utf8)) }
        try standardInput.fileHandleForWriting.close()
        if let interruptWhen {
            EventWait.until(seconds: 60) { interruptWhen() || !process.isRunning }
            kill(process.processIdentifier, SIGINT)
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
                       error: String(decoding: errorData, as: UTF8.self))
    }

    /// report.json of a results folder, parsed.
    static func report(in directory: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/report.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func temporaryDirectory(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("fleetbench-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    }

    @Test("the quickstart runs against the embedded broker, passes and exits 0")
    func quickstartPasses() throws {
        let out = Self.temporaryDirectory("quickstart")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try Self.run(["run", "scenarios/quickstart.json", "--duration", "3s", "--out", out, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains("quickstart: PASSED after "))
        #expect(outcome.output.contains("threshold     pass  delivery.qos1.lost == 0  (observed 0)"))
        let report = try Self.report(in: out)
        #expect(report["schema"] as? String == "fleetbench.report/1")
        #expect(report["passed"] as? Bool == true)
        #expect(report["broker_embedded"] as? Bool == true)
    }

    @Test("the generator's peak RSS is fleetbench's own, not that of the larger program that started it")
    func peakMemoryIsOwn() throws {
        let out = Self.temporaryDirectory("peak-rss")
        defer { try? FileManager.default.removeItem(atPath: out) }
        // A launcher that writes 600 MiB and then execs fleetbench: getrusage's ru_maxrss keeps that peak across
        // the execve, /proc/self/status's VmHWM belongs to the new program alone.
        let launcher = ["/usr/bin/env", "python3", "-c",
                        "import os, sys; held = b'\\x01' * (600 << 20); os.execv(sys.argv[1], sys.argv[1:])"]
        let outcome = try Self.run(["run", "scenarios/quickstart.json", "--duration", "3s", "--out", out, "--quiet"],
                                   launcher: launcher)
        #expect(outcome.status == 0, "\(outcome.error)")
        let generator = try #require(try Self.report(in: out)["generator"] as? [String: Any])
        let peak = try #require(generator["peak_rss_bytes"] as? Int)
        #expect(peak > 0 && peak < 300 << 20, "peak_rss_bytes \(peak)")
    }

    @Test("--quiet with a relative --out prints the results folder as an absolute path; protocols typed unquoted")
    func absoluteResultsPath() throws {
        let out = Self.temporaryDirectory("relative")
        defer { try? FileManager.default.removeItem(atPath: out) }
        // The same folder, relative to the folder fleetbench runs in (the package root).
        let depth = Self.root.standardizedFileURL.pathComponents.count - 1
        let relative = String(repeating: "../", count: depth) + String(out.dropFirst())
        let outcome = try Self.run([
            "run", "scenarios/quickstart.json", "--duration", "2s", "--out", relative, "--quiet",
            "--set", "fleets.sensors.protocol=3.1", "--set", "fleets.dashboard.protocol=4",
        ])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.hasSuffix("\n  results       \(out)\n"))
        let report = try Self.report(in: out)
        let scenario = try #require(report["scenario"] as? [String: Any])
        let fleets = try #require((scenario["redacted"] as? [String: Any])?["fleets"] as? [[String: Any]])
        #expect(fleets.map { $0["protocol"] as? NSNumber } == [3.1, 4])

        // The same scenario without the overrides, gated on the first run: the gate says first that the runs
        // differ in those settings, and --all shows every row (the p999s too).
        let second = Self.temporaryDirectory("gated")
        defer { try? FileManager.default.removeItem(atPath: second) }
        let gated = try Self.run(["run", "scenarios/quickstart.json", "--duration", "2s", "--out", second, "--quiet",
                                  "--baseline", out, "--all"])
        #expect(gated.output.contains("\ncompared with \(out):\nbaseline:  quickstart @ "))
        #expect(gated.output.contains("\nNOT like for like: "))
        #expect(gated.output.contains("\n  setting fleets.sensors.protocol    3.1 -> \"5\"\n"))
        #expect(gated.output.contains("\n  setting fleets.dashboard.protocol  4 -> \"5\"\n"))
        #expect(gated.output.contains("\nlatency.end_to_end.p999 "))
    }

    @Test("failed thresholds exit 99")
    func thresholdsFail() throws {
        let out = Self.temporaryDirectory("thresholds")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try Self.run([
            "run", "scenarios/quickstart.json", "--duration", "2s", "--out", out, "--quiet",
            "--set", #"thresholds=["latency.end_to_end.p99 < 1us", "delivery.qos1.lost == 0"]"#,
        ])
        #expect(outcome.status == 99, "\(outcome.error)")
        #expect(outcome.output.contains("quickstart: FAILED after "))
        #expect(outcome.output.contains("threshold     FAIL  latency.end_to_end.p99 < 1us  (observed "))
        #expect(outcome.output.contains("threshold     pass  delivery.qos1.lost == 0  (observed 0)"))
    }

    @Test("an unreachable broker is a runtime failure (exit 1) with a clear message, results still written")
    func unreachableBroker() throws {
        let out = Self.temporaryDirectory("unreachable")
        defer { try? FileManager.default.removeItem(atPath: out) }
        // Port 1 on loopback: nothing listens there, so every connect is refused at once.
        let outcome = try Self.run(["run", "scenarios/quickstart.json", "--broker", "mqtt://127.0.0.1:1",
                                    "--duration", "2s", "--out", out, "--quiet"])
        #expect(outcome.status == 1)
        #expect(outcome.error.contains("fleetbench: no client could connect to mqtt://127.0.0.1:1 (refused 11)"))
        #expect(outcome.output.contains("connections   attempted 11, succeeded 0, failed 11, reconnects 0, peak 0"))
        let report = try Self.report(in: out)
        #expect(report["passed"] as? Bool == false)
        #expect((report["connections"] as? [String: Any])?["failed_by_reason"] as? [String: Int] == ["refused": 11])
    }

    @Test("Ctrl-C stops the run cleanly, writes its results marked interrupted, and exits 1")
    func interrupted() throws {
        let out = Self.temporaryDirectory("interrupted")
        defer { try? FileManager.default.removeItem(atPath: out) }
        // Stopped once all 11 clients are connected (the streamed timeline says so).
        let outcome = try Self.run(["run", "scenarios/quickstart.json", "--duration", "60s", "--out", out, "--quiet"],
                                   interruptWhen: { RunProgress.connected(in: out) == 11 })
        #expect(outcome.status == 1)
        #expect(outcome.error.contains("fleetbench: stopping (DISCONNECT, then results are written)"))
        #expect(outcome.output.contains("quickstart: INTERRUPTED after "))
        #expect(outcome.output.contains("connections   attempted 11, succeeded 11, failed 0"))
        let report = try Self.report(in: out)
        #expect((report["run"] as? [String: Any])?["interrupted"] as? Bool == true)
        #expect(report["passed"] as? Bool == false)
        for file in ["report.html", "junit.xml", "latency.hlog"] {
            #expect(FileManager.default.fileExists(atPath: out + "/" + file), "\(file) missing")
        }
    }

    @Test("a missing scenario file exits 65 and says so")
    func missingFile() throws {
        let outcome = try Self.run(["run", "no-such-scenario.json"])
        #expect(outcome.status == 65)
        #expect(outcome.error == "no-such-scenario.json: cannot read the file (does it exist?)\n")
    }

    @Test("a bad option is a usage error (exit 2)")
    func usage() throws {
        let outcome = try Self.run(["run", "scenarios/quickstart.json", "--lanes", "zero"])
        #expect(outcome.status == 2)
        #expect(outcome.error.hasPrefix("fleetbench run: --lanes needs a whole number from 1 to 256, got 'zero'\n"))
    }

    @Test("--receive-coalescing takes 0 or a duration up to 100ms", arguments: ["fast", "1s", "250", ""])
    func badCoalescing(_ text: String) throws {
        let outcome = try Self.run(["run", "scenarios/quickstart.json", "--receive-coalescing", text])
        #expect(outcome.status == 2)
        #expect(outcome.error.hasPrefix(
            "fleetbench run: --receive-coalescing needs 0 or a duration up to 100ms such as 250us, got '\(text)'\n"))
    }

    @Test("--io-uring takes auto or off", arguments: ["on", "", "OFF"])
    func badIOUring(_ text: String) throws {
        let outcome = try Self.run(["run", "scenarios/quickstart.json", "--io-uring", text])
        #expect(outcome.status == 2)
        #expect(outcome.error.hasPrefix("fleetbench run: --io-uring needs auto or off, got '\(text)'\n"))
    }
}
