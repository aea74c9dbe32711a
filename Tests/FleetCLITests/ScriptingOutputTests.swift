@testable import FleetCLI
import Foundation
import Glibc
import Testing

/// Output for scripts: `run --summary-json`, and progress that writes escapes only to a terminal that wants them.
@Suite("output for scripts")
struct ScriptingOutputTests {
    @Test("run --summary-json - writes only JSON to stdout, the summary to stderr; a failed threshold is exit_code 99")
    func summaryOnStandardOutput() throws {
        let out = RunEndToEndTests.temporaryDirectory("summary-stdout")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try RunEndToEndTests.run([
            "run", "scenarios/quickstart.json", "--duration", "2s", "--out", out, "--summary-json", "-",
            "--set", #"thresholds=["latency.end_to_end.p99 < 1us", "delivery.qos1.lost == 0"]"#,
        ])
        #expect(outcome.status == 99, "\(outcome.error)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any])
        #expect(summary["schema"] as? String == "fleetbench.summary/1")
        #expect(summary["scenario"] as? String == "quickstart")
        #expect(summary["verdict"] as? String == "failed")
        #expect(summary["exit_code"] as? Int == 99)
        #expect(summary["results"] as? String == out)
        let thresholds = try #require(summary["thresholds"] as? [[String: Any]])
        #expect(thresholds.map { $0["passed"] as? Bool } == [false, true])
        #expect(outcome.error.contains("\nquickstart: FAILED after "))
        #expect(outcome.error.contains("\n  results       \(out)\n"))
        // The file form holds the same figures as report.json.
        let report = try RunEndToEndTests.report(in: out)
        let messages = try #require(summary["messages"] as? NSDictionary)
        #expect(messages == report["messages"] as? NSDictionary)
    }

    @Test("--summary-json to a folder that cannot be written: exit 1, said on stderr, results still written")
    func summaryUnwritable() throws {
        let out = RunEndToEndTests.temporaryDirectory("summary-unwritable")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try RunEndToEndTests.run([
            "conn", "-c", "1", "--duration", "1s", "--out", out, "--quiet", "--summary-json", out + "/missing/summary.json",
        ])
        #expect(outcome.status == 1)
        #expect(outcome.error.hasPrefix("fleetbench: cannot write \(out)/missing/summary.json: No such file or directory"))
        #expect(FileManager.default.fileExists(atPath: out + "/report.json"))
    }

    /// A pseudo-terminal: (the terminal side for writing, the controlling side for reading).
    static func pseudoTerminal() throws -> (terminal: Int32, reader: Int32) {
        // posix_openpt, grantpt, unlockpt and ptsname are not in Swift's Glibc module (they need _XOPEN_SOURCE):
        // looked up in libc itself.
        typealias OpenPT = @convention(c) (Int32) -> Int32
        typealias OnDescriptor = @convention(c) (Int32) -> Int32
        typealias PtsName = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?
        func function<T>(_ name: String, _ type: T.Type) throws -> T { unsafeBitCast(try #require(dlsym(nil, name)), to: type) }
        let reader = try function("posix_openpt", OpenPT.self)(O_RDWR | O_NOCTTY)
        #expect(reader >= 0)
        #expect(try function("grantpt", OnDescriptor.self)(reader) == 0)
        #expect(try function("unlockpt", OnDescriptor.self)(reader) == 0)
        let name = try #require(try function("ptsname", PtsName.self)(reader))
        let terminal = open(name, O_RDWR | O_NOCTTY)
        #expect(terminal >= 0)
        return (terminal, reader)
    }

    static func progress(environment: [String: String]) throws -> String {
        let (terminal, reader) = try pseudoTerminal()
        defer { close(reader) }
        var console = Console(environment: environment)
        console.outputDescriptor = terminal
        let printer = ProgressPrinter(console: console, quiet: false, totalSeconds: 10, targetClients: 3)
        var status = LiveStatus()
        status.elapsedSeconds = 1
        status.connected = 3
        status.endToEndP99Ms = 12.5
        printer.show(status)
        status.elapsedSeconds = 2
        status.endToEndP99Ms = nil
        printer.show(status)
        printer.finish()
        close(terminal)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(reader, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        // The terminal turns "\n" into "\r\n".
        return String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
    }

    @Test("on a terminal the progress line is refreshed with ESC [K; with NO_COLOR or TERM=dumb with spaces only")
    func noColor() throws {
        let first = "[   1s/10s]  connected 3/3  pub 0/s  recv 0/s  e2e p99 12.50 ms  ack timeouts 0  errors 0"
        let second = "[   2s/10s]  connected 3/3  pub 0/s  recv 0/s  ack timeouts 0  errors 0"
        #expect(try Self.progress(environment: ["TERM": "xterm"]) == "\r\u{1B}[K" + first + "\r\u{1B}[K" + second + "\n")
        let plain = "\r" + first + "\r" + second + String(repeating: " ", count: first.count - second.count) + "\n"
        #expect(try Self.progress(environment: ["TERM": "xterm", "NO_COLOR": "1"]) == plain)
        #expect(try Self.progress(environment: ["TERM": "dumb"]) == plain)
        // An empty NO_COLOR does not count (no-color.org).
        #expect(try Self.progress(environment: ["NO_COLOR": ""]).contains("\u{1B}[K"))
    }
}
