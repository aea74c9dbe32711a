import Foundation
import Testing

/// latency.hlog and timeline.csv are written second by second during a run (the process keeps neither): after a
/// finished and after an interrupted run they are complete, the reference HdrHistogram reader takes the log, and
/// everything adds up to report.json.
@Suite("fleetbench run streams its seconds to disk", .serialized)
struct RunStreamedResultsTests {
    /// Every interval of a log as the reference implementation reads it: tag, start (s since the epoch), count.
    static func referenceIntervals(_ path: String) throws -> [(tag: String, start: Double, count: Int)]? {
        let script = """
            import sys, json
            from hdrh.histogram import HdrHistogram
            from hdrh.log import HistogramLogReader
            reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600000000, 3))
            out = []
            while True:
                h = reader.get_next_interval_histogram()
                if h is None:
                    break
                out.append([h.get_tag(), h.get_start_time_stamp() / 1000.0, h.get_total_count()])
            print(json.dumps(out))
            """
        guard let output = PythonReference.run(script, arguments: [path]) else { return nil }
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[Any]])
        return try rows.map { row in
            (try #require(row[0] as? String), try #require(row[1] as? Double), try #require(row[2] as? Int))
        }
    }

    /// The checks shared by a finished and an interrupted run.
    static func checkResults(in out: String) throws {
        let report = try RunEndToEndTests.report(in: out)
        let files = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(files == ["junit.xml", "latency.hlog", "report.html", "report.json", "timeline.csv"])

        // timeline.csv is report.json's timeline, row for row.
        let timeline = try #require(report["timeline"] as? [[String: Any]])
        let rows = try String(contentsOfFile: out + "/timeline.csv", encoding: .utf8).split(separator: "\n")
        #expect(rows.first == "t_s,connected,published,received,end_to_end_p50_ms,end_to_end_p99_ms,ack_timeouts")
        #expect(rows.count == timeline.count + 1)
        for (row, point) in zip(rows.dropFirst(), timeline) {
            let fields = row.split(separator: ",", omittingEmptySubsequences: false)
            #expect(Double(fields[0]) == point["t"] as? Double)
            #expect(UInt64(fields[2]) == (point["published"] as? NSNumber)?.uint64Value)
            #expect(UInt64(fields[3]) == (point["received"] as? NSNumber)?.uint64Value)
        }
        let messages = try #require(report["messages"] as? [String: Any])
        let published = timeline.reduce(UInt64(0)) { $0 + ((($1["published"] as? NSNumber)?.uint64Value) ?? 0) }
        let reported = (0...2).reduce(UInt64(0)) {
            $0 + ((((messages["qos\($1)"] as? [String: Any])?["published"]) as? NSNumber)?.uint64Value ?? 0)
        }
        #expect(published == reported)
        #expect(published > 0)

        // latency.hlog: per kind, one interval per second that had samples, at that second's start; the
        // intervals add up to report.json's whole-run count.
        guard let intervals = try referenceIntervals(out + "/latency.hlog") else { return }
        let latency = try #require(report["latency_ms"] as? [String: Any])
        let startedAt = try #require(
            (report["run"] as? [String: Any])?["started_at"] as? String)
        #expect(!startedAt.isEmpty)
        let tags = Set(intervals.map(\.tag))
        #expect(tags.isSuperset(of: ["end_to_end", "end_to_end_from_sent", "puback", "connect", "tcp_connect"]))
        for tag in tags {
            let mine = intervals.filter { $0.tag == tag }
            let starts = mine.map(\.start)
            #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 > 0.5 }, "\(tag): two intervals in one second")
            let total = mine.reduce(0) { $0 + $1.count }
            let kind = tag.hasSuffix("_from_sent") ? String(tag.dropLast("_from_sent".count)) : tag
            let entry = try #require(latency[kind] as? [String: Any], "\(kind) missing from report.json")
            let summary = tag.hasSuffix("_from_sent") ? try #require(entry["from_sent"] as? [String: Any]) : entry
            #expect(total == (summary["count"] as? Int), "\(tag)")
        }
        // End to end: exactly the seconds in which messages arrived, with as many samples as arrived.
        let endToEnd = intervals.filter { $0.tag == "end_to_end" }.map(\.count)
        let received = timeline.compactMap { ($0["received"] as? NSNumber)?.intValue }.filter { $0 > 0 }
        #expect(endToEnd == received)
    }

    @Test("a finished run: latency.hlog has one interval per second and kind, summing to report.json")
    func finishedRun() throws {
        let out = RunEndToEndTests.temporaryDirectory("streamed")
        defer { try? FileManager.default.removeItem(atPath: out) }
        // No thresholds: a loaded machine's latency must not turn this test of the files into a failed run.
        let outcome = try RunEndToEndTests.run(["run", "scenarios/quickstart.json", "--duration", "4s", "--out", out,
                                                "--quiet", "--set", "thresholds=[]"])
        #expect(outcome.status == 0, "\(outcome.error)")
        try Self.checkResults(in: out)
        let report = try RunEndToEndTests.report(in: out)
        #expect((report["timeline"] as? [Any])?.count ?? 0 >= 4)
    }

    @Test("an interrupted run (SIGINT) still writes complete latency.hlog and timeline.csv, no partial files")
    func interruptedRun() throws {
        let out = RunEndToEndTests.temporaryDirectory("streamed-interrupted")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try RunEndToEndTests.run(
            ["run", "scenarios/quickstart.json", "--duration", "60s", "--out", out, "--quiet"],
            interruptWhen: { RunProgress.published(in: out) > 0 && RunProgress.received(in: out) > 0 })
        #expect(outcome.status == 1)
        #expect(outcome.output.contains("quickstart: INTERRUPTED after "))
        try Self.checkResults(in: out)
        let report = try RunEndToEndTests.report(in: out)
        #expect((report["run"] as? [String: Any])?["interrupted"] as? Bool == true)
    }
}

/// The reference HdrHistogram implementation (Python package hdrhistogram, module hdrh; scripts/deps.sh installs it).
enum PythonReference {
    static func run(_ script: String, arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch {
            Issue.record("could not start python3")
            return nil
        }
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let reason = String(decoding: stderr, as: UTF8.self)
            Issue.record(Comment(rawValue: "python3 failed (the reference HdrHistogram is `pip install hdrhistogram`): \(reason)"))
            return nil
        }
        return String(decoding: stdout, as: UTF8.self)
    }
}
