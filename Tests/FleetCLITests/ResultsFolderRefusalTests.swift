import Foundation
import Testing

/// A results folder that cannot be written is refused before anything runs: exit 1, the reason, and no half
/// written folder (the run would otherwise be measured and then lost).
@Suite("results folder refused before the run")
struct ResultsFolderRefusalTests {
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
}
