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
        #expect(result.output.hasSuffix(
            "\nNo regression beyond the 10 % tolerance (latency changes within 1 ms are not counted).\n"
            + "3 more rows (mean, p90, p999 of each latency) with --all.\n"))
        #expect(result.error == "")
        // --all: every row, the p999 of 100 samples saying it has too few.
        let all = Self.run(["compare", baseline, candidate, "--all"])
        #expect(all.output.contains("\nlatency.end_to_end.p999   ms              1.099      1.149       –  too few samples (100 and 100; p999 needs 1000)\n"))
        #expect(all.output.hasSuffix("(latency changes within 1 ms are not counted).\n"))
    }

    @Test("compare --format html: the page to --output (the table printed), or to stdout; the exit code as for text")
    func compareHTML() throws {
        let baseline = try Self.folder(Self.report(endToEndBase: 10_000))
        let candidate = try Self.folder(Self.report(endToEndBase: 15_000))
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("fleetbench-compare-\(UUID().uuidString).html").path
        defer { try? FileManager.default.removeItem(atPath: page) }
        let written = Self.run(["compare", baseline, candidate, "--format", "html", "--output", page])
        #expect(written.code == .thresholdsFailed)
        let table = Self.run(["compare", baseline, candidate])
        #expect(written.output == table.output + "wrote \(page)\n")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>\n"))
        #expect(html.contains("<div class=\"badge\">REGRESSED</div>"))
        #expect(html.contains("<figcaption>end_to_end</figcaption>"))
        let printed = Self.run(["compare", baseline, candidate, "--format=html"])
        #expect(printed.code == .thresholdsFailed)
        #expect(printed.output == html)
    }

    @Test("compare A B C: each later run against the first, side by side; 99 when any regressed")
    func compareTrend() throws {
        let first = try Self.folder(Self.report(endToEndBase: 10_000))
        let same = try Self.folder(Self.report(endToEndBase: 10_000))
        let slower = try Self.folder(Self.report(endToEndBase: 15_000))
        let regressed = Self.run(["compare", first, same, slower])
        #expect(regressed.code == .thresholdsFailed)
        #expect(regressed.output.hasPrefix("run 1 (baseline): ci @ 2023-11-14T22:13:20.000Z\nrun 2: ci @ "))
        #expect(regressed.output.hasSuffix("\n\nrun 3: 5 regressions beyond the 10 % tolerance (latency changes within 1 ms are not counted): "
            + "latency.end_to_end.mean, latency.end_to_end.p50, latency.end_to_end.p90, latency.end_to_end.p99, latency.end_to_end.max\n"))
        #expect(Self.run(["compare", first, same, first]).code == .success)
        let json = Self.run(["compare", first, same, slower, "--format", "json"])
        #expect(json.output.contains("\"schema\": \"fleetbench.compare-trend/1\""))
        let html = Self.run(["compare", first, same, slower, "--format", "html"])
        #expect(html.output.contains("<th class=\"num\">Run 3</th>"))
    }

    @Test("compare: a regression beyond the tolerance exits 99; a wider tolerance lets it pass")
    func compareRegression() throws {
        // p99 10.098 ms -> 15.098 ms: +49.5 %, and 5 ms, beyond the default latency floor.
        let baseline = try Self.folder(Self.report(endToEndBase: 10_000))
        let candidate = try Self.folder(Self.report(endToEndBase: 15_000))
        let failing = Self.run(["compare", baseline, candidate])
        #expect(failing.code == .thresholdsFailed)
        #expect(failing.code.rawValue == 99)
        #expect(failing.output.contains("REGRESSION"))
        #expect(Self.run(["compare", baseline, candidate, "--tolerance", "60%"]).code == .success)
        #expect(Self.run(["compare", baseline, candidate, "--tolerance=60"]).code == .success)
    }

    @Test("compare --latency-floor: p99 1.0 ms -> 1.2 ms (+20 %) passes with the default 1 ms floor, fails without")
    func compareLatencyFloor() throws {
        // Latency 902...1001 µs against 1102...1201 µs: every statistic 0.2 ms (about +20 %) worse.
        let baseline = try Self.folder(Self.report(endToEndBase: 902))
        let candidate = try Self.folder(Self.report(endToEndBase: 1102))
        let passing = Self.run(["compare", baseline, candidate])
        #expect(passing.code == .success)
        #expect(passing.output.contains("\nlatency.end_to_end.p99    ms                  1        1.2   +20 %  worse\n"))
        #expect(passing.output.hasSuffix(
            "\nNo regression beyond the 10 % tolerance (latency changes within 1 ms are not counted).\n"
            + "3 more rows (mean, p90, p999 of each latency) with --all.\n"))
        #expect(Self.run(["compare", baseline, candidate, "--latency-floor", "1ms"]).code == .success)
        // Exactly at the floor is not a regression.
        #expect(Self.run(["compare", baseline, candidate, "--latency-floor=200us"]).code == .success)

        let failing = Self.run(["compare", baseline, candidate, "--latency-floor", "0"])
        #expect(failing.code == .thresholdsFailed)
        #expect(failing.code.rawValue == 99)
        // The regressed p90 (+20.2 %) is shown too, and widens the change column.
        #expect(failing.output.contains("\nlatency.end_to_end.p99    ms                  1        1.2    +20 %  REGRESSION\n"))
        // 100 samples are too few for a p999.
        #expect(failing.output.hasSuffix("\n5 regressions beyond the 10 % tolerance: latency.end_to_end.mean, "
            + "latency.end_to_end.p50, latency.end_to_end.p90, latency.end_to_end.p99, latency.end_to_end.max\n"
            + "1 more row (mean, p90, p999 of each latency) with --all.\n"))
        // The regressed mean and p90 are in the default table, not only in the summary.
        #expect(failing.output.contains("\nlatency.end_to_end.mean   ms "))
        #expect(failing.output.contains("\nlatency.end_to_end.p90    ms "))
        #expect(Self.run(["compare", baseline, candidate, "--latency-floor", "199us"]).code == .thresholdsFailed)

        let json = Self.run(["compare", baseline, candidate, "--latency-floor", "500us", "--format", "json"])
        #expect(json.code == .success)
        #expect(json.output.contains("\n  \"latency_floor_ms\": 0.5,\n"))
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
         "fleetbench compare: --format must be table, markdown, json or html (got 'xml')\n"),
        (["compare", "a", "b", "--tolerance"], .usage, "fleetbench compare: --tolerance needs a value\n"),
        (["compare", "a", "b", "--latency-floor", "x"], .usage,
         "fleetbench compare: --latency-floor needs 0 or a duration such as 1ms, got 'x'\n"),
        (["compare", "a", "b", "--latency-floor=1"], .usage,
         "fleetbench compare: --latency-floor needs 0 or a duration such as 1ms, got '1'\n"),
        (["compare", "a", "b", "--latency-floor", "-1ms"], .usage,
         "fleetbench compare: --latency-floor needs 0 or a duration such as 1ms, got '-1ms'\n"),
        (["compare", "a", "b", "--latency-floor"], .usage, "fleetbench compare: --latency-floor needs a value\n"),
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

    @Test("report DIR rewrites report.html, junit.xml and timeline.csv from report.json")
    func reportRerender() throws {
        let folder = try Self.folder(Self.report(endToEndBase: 1000, name: "nightly"))
        try FileManager.default.removeItem(atPath: folder + "/report.html")
        try FileManager.default.removeItem(atPath: folder + "/junit.xml")
        let result = Self.run(["report", folder])
        #expect(result.code == .success)
        #expect(result.output == "passed: nightly\nwrote \(folder)/report.html, \(folder)/junit.xml and \(folder)/timeline.csv\n")
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

    @Test("help of compare and run lists --latency-floor with its 1ms default")
    func latencyFloorHelp() {
        #expect(CompareCommand.help.contains("""
              --latency-floor D   latency changes up to D are not regressions, whatever their percentage
                                  (default 1ms, the engine's timing resolution; 0 disables)
            """))
        #expect(RunCommand.help.contains("""
              --latency-floor D       latency changes up to D against the baseline are not regressions,
                                      whatever their percentage (default 1ms; 0 disables)
            """))
    }

    @Test("run --latency-floor: 0 or a duration, in milliseconds for the baseline gate", arguments: [
        ([String](), 1.0), (["--latency-floor", "0"], 0.0), (["--latency-floor", "500us"], 0.5),
        (["--latency-floor", "2ms"], 2.0), (["--latency-floor", "0ms"], 0.0),
    ])
    func runLatencyFloor(options: [String], milliseconds: Double) throws {
        let command = try #require(try RunCommand.parse(["scenario.json", "--baseline", "base"] + options))
        #expect(command.latencyFloorMilliseconds == milliseconds)
        #expect(command.baseline == "base")
    }

    @Test("run --latency-floor: a bad value is a usage error (exit 2) before anything runs",
          arguments: ["x", "1", "", "fast"])
    func runLatencyFloorUsage(text: String) {
        let result = Self.run(["run", "/nonexistent/scenario.json", "--latency-floor", text])
        #expect(result.code == .usage)
        #expect(result.code.rawValue == 2)
        #expect(result.error.hasPrefix("fleetbench run: --latency-floor needs 0 or a duration such as 1ms, got '\(text)'\n"))
        #expect(result.output == "")
    }
}
