import FleetBroker
import Foundation
import Testing

/// A results folder that cannot be written is refused before anything runs: exit 1, the reason, and no half
/// written folder (the run would otherwise be measured and then lost).
@Suite("results folder refused before the run")
struct ResultsFolderRefusalTests {
    /// The binary under `prlimit --fsize`: every file it writes is limited to `bytes`.
    static func runWithFileSizeLimit(_ bytes: Int, _ arguments: [String]) throws -> RunEndToEndTests.Outcome {
        try RunEndToEndTests.run(arguments, launcher: ["/usr/bin/prlimit", "--fsize=\(bytes)"])
    }

    static func scenario(in work: String) throws -> String {
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let path = work + "/one.json"
        try #"{"duration": "1s", "fleets": [{"name": "idle", "count": 1, "client_id": "idle", "protocol": "5"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("--out below a regular file: exit 1 before the run, with the reason")
    func outBelowARegularFile() throws {
        let work = RunEndToEndTests.temporaryDirectory("unwritable-file")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try Self.scenario(in: work)
        let blocker = work + "/plain-file"
        try "not a folder".write(toFile: blocker, atomically: true, encoding: .utf8)
        let outcome = try RunEndToEndTests.run(["run", scenario, "--out", blocker + "/results"])
        #expect(outcome.status == 1)
        #expect(outcome.error == "fleetbench: cannot write results to \(blocker)/results: cannot create the folder: "
            + "\(blocker) is not a folder; nothing was run\n")
        #expect(!outcome.output.contains("running"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: work).sorted() == ["one.json", "plain-file"])
    }

    @Test("--out on a read-only file system: exit 1 before the run, with the reason")
    func outOnAReadOnlyFileSystem() throws {
        let work = RunEndToEndTests.temporaryDirectory("unwritable-proc")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try Self.scenario(in: work)
        let outcome = try RunEndToEndTests.run(["run", scenario, "--out", "/proc/fleetbench-results"])
        #expect(outcome.status == 1)
        #expect(outcome.error.hasPrefix("fleetbench: cannot write results to /proc/fleetbench-results: cannot create the folder: "))
        #expect(outcome.error.hasSuffix("; nothing was run\n"))
        #expect(!outcome.output.contains("running"))
    }

    @Test("results that cannot be written whole (file size limit) leave the previous report.json intact: exit 1, the reason")
    func failedWriteLeavesThePreviousReport() throws {
        let work = RunEndToEndTests.temporaryDirectory("results-too-large")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let scenario = try Self.scenario(in: work)
        // An outside broker: the embedded one would inherit the limit and be killed writing its log.
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let results = work + "/results"
        try FileManager.default.createDirectory(atPath: results, withIntermediateDirectories: true)
        let previous = #"{"schema": "fleetbench.report/1", "previous": true}"#
        try previous.write(toFile: results + "/report.json", atomically: true, encoding: .utf8)

        // report.json of this run is larger than 1 KiB, so its write fails part way with EFBIG.
        let outcome = try Self.runWithFileSizeLimit(
            1024, ["run", scenario, "--broker", broker.url, "--out", results, "--quiet"])
        #expect(outcome.status == 1, "\(outcome.output)\n\(outcome.error)")
        #expect(outcome.error.contains(
            "fleetbench: cannot write results to \(results): cannot write \(results)/report.json: File too large\n"))
        #expect(try String(contentsOfFile: results + "/report.json", encoding: .utf8) == previous)
        #expect(try FileManager.default.contentsOfDirectory(atPath: results) == ["report.json"])
    }
}
