import FleetMetrics
import FleetReports
import Foundation
import Testing
@testable import FleetCLI

/// `fleetbench report` and `fleetbench compare` through the command line, on report.json files written here.
@Suite("fleetbench report and compare")
struct ReportCommandsTests {
    /// A minimal report: end-to-end latency `base`...`base + 99` µs and `lost` QoS 1 losses.
    static func report(endToEndBase base: UInt64, lost: UInt64 = 0, name: String = "ci") -> RunReport {
        var report = RunReport(
            toolVersion: "0.1.0", scenario: ScenarioInfo(name: name, file: "ci.json", sha256: "00"),
            run: RunInfo(startedAt: Date(timeIntervalSince1970: 1_700_000_000), durationSeconds: 10, seed: 1))
        var latency = LatencyRecorder()
        for value in base..<(base + 100) { latency.record(.endToEnd, from: .intended, microseconds: value) }
        report.latency = latency
        report.messages.published = PerQoSCounts(qos0: 0, qos1: 1000, qos2: 0)
        report.messages.received = PerQoSCounts(qos0: 0, qos1: 1000 - lost, qos2: 0)
        report.delivery.qos1 = DeliveryCounts(expected: 1000, received: 1000 - lost, unique: 1000 - lost,
                                              duplicated: 0, reordered: 0)
        return report
    }

    static func folder(_ report: RunReport) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fleetbench-cli-\(UUID().uuidString)").path
        try ReportWriter.write(report, to: path)
        return path
    }

    static let run = FleetCommandLineTests.run

    @Test("compare: no regression exits 0 and prints the table")
    func compareSame() throws {
        let baseline = try Self.folder(Self.report(endToEndBase: 1000))
        let candidate = try Self.folder(Self.report(endToEndBase: 1050))
        let result = Self.run(["compare", baseline, candidate + "/report.json"])
        #expect(result.code == .success)
        #expect(result.output.contains("\nlatency.end_to_end.p99 "))
        #expect(result.output.hasSuffix("\nNo regression beyond the 10 % tolerance.\n"))
        #expect(result.error == "")
    }

    @Test("compare: a regression beyond the tolerance exits 99; a wider tolerance lets it pass")
    func compareRegression() throws {
        let baseline = try Self.folder(Self.report(endToEndBase: 1000))
        let candidate = try Self.folder(Self.report(endToEndBase: 1500))
        let failing = Self.run(["compare", baseline, candidate])
        #expect(failing.code == .thresholdsFailed)
        #expect(failing.code.rawValue == 99)
        #expect(failing.output.contains("REGRESSION"))
        #expect(Self.run(["compare", baseline, candidate, "--tolerance", "60%"]).code == .success)
        #expect(Self.run(["compare", baseline, candidate, "--tolerance=60"]).code == .success)
    }

    @Test("compare: new losses are a regression whatever the tolerance")
    func compareLoss() throws {
        let baseline = try Self.folder(Self.report(endToEndBase: 1000))
        let candidate = try Self.folder(Self.report(endToEndBase: 1000, lost: 1))
        let result = Self.run(["compare", baseline, candidate, "--tolerance", "1000%", "--format", "markdown"])
        #expect(result.code == .thresholdsFailed)
        #expect(result.output.contains("| `delivery.qos1.lost` | messages | 0 | 1 | +∞ % | **regression** |\n"))
    }

    @Test("compare --format json --output writes the same JSON it prints")
    func compareJSON() throws {
        let baseline = try Self.folder(Self.report(endToEndBase: 1000))
        let output = baseline + "/compare.json"
        let result = Self.run(["compare", baseline, baseline, "--format", "json", "--output", output])
        #expect(result.code == .success)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == result.output)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
        #expect(json["has_regression"] as? Bool == false)
    }

    @Test("compare: usage errors exit 2, unreadable reports 65", arguments: [
        (["compare"], ExitCode.usage, "fleetbench compare: compare needs a baseline and a candidate report, got 0 paths\n"),
        (["compare", "a.json"], .usage, "fleetbench compare: compare needs a baseline and a candidate report, got 1 path\n"),
        (["compare", "a", "b", "--tolerance", "x"], .usage,
         "fleetbench compare: --tolerance needs a non-negative percentage such as 10% (got 'x')\n"),
        (["compare", "a", "b", "--format", "xml"], .usage,
         "fleetbench compare: --format must be table, markdown or json (got 'xml')\n"),
        (["compare", "a", "b", "--tolerance"], .usage, "fleetbench compare: --tolerance needs a value\n"),
        (["compare", "a", "b", "--frob"], .usage, "fleetbench compare: unknown option '--frob' for compare\n"),
        (["compare", "/nonexistent/base.json", "b"], .invalidScenario, "fleetbench compare: /nonexistent/base.json:1:1: "),
    ])
    func compareErrors(arguments: [String], code: ExitCode, message: String) {
        let result = Self.run(arguments)
        #expect(result.code == code)
        #expect(result.error.hasPrefix(message))
    }

    @Test("compare: a file that is not a report exits 65 naming the problem")
    func compareNotAReport() throws {
        let folder = try Self.folder(Self.report(endToEndBase: 1000))
        let bogus = folder + "/bogus.json"
        try Data("{\"schema\": \"something/else\"}".utf8).write(to: URL(fileURLWithPath: bogus))
        let result = Self.run(["compare", folder, bogus])
        #expect(result.code.rawValue == 65)
        #expect(result.error == "fleetbench compare: \(bogus): schema: expected \"fleetbench.report/1\", found \"something/else\"\n")
    }

    @Test("report DIR rewrites report.html and junit.xml from report.json")
    func reportRerender() throws {
        let folder = try Self.folder(Self.report(endToEndBase: 1000, name: "nightly"))
        try FileManager.default.removeItem(atPath: folder + "/report.html")
        try FileManager.default.removeItem(atPath: folder + "/junit.xml")
        let result = Self.run(["report", folder])
        #expect(result.code == .success)
        #expect(result.output == "passed: nightly\nwrote \(folder)/report.html and \(folder)/junit.xml\n")
        #expect(FileManager.default.fileExists(atPath: folder + "/report.html"))
        #expect(FileManager.default.fileExists(atPath: folder + "/junit.xml"))
        #expect(Self.run(["report", folder + "/report.json"]).code == .success)
    }

    @Test("report: usage errors exit 2, a folder without report.json 65")
    func reportErrors() throws {
        #expect(Self.run(["report"]).error.hasPrefix("fleetbench report: report needs a results folder\n"))
        #expect(Self.run(["report", "a", "b"]).code == .usage)
        #expect(Self.run(["report", "--bogus"]).code == .usage)
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("fleetbench-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let result = Self.run(["report", empty])
        #expect(result.code == .invalidScenario)
        #expect(result.error.hasPrefix("fleetbench report: \(empty)/report.json:1:1: "))
    }

    @Test("help for report and compare")
    func help() {
        #expect(Self.run(["help", "compare"]).output == CompareCommand.help + "\n")
        #expect(Self.run(["report", "--help"]).output == ReportCommand.help + "\n")
    }
}
