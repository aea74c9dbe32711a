import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

@Suite("The results folder")
struct ReportWriterTests {
    @Test("write puts the five files in the folder; report.json is the report's JSON, timeline.csv its timeline")
    func writesFiveFiles() throws {
        let directory = try SampleReports.temporaryDirectory() + "/nested/results"
        let report = SampleReports.make()
        try ReportWriter.write(report, to: directory)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["junit.xml", "latency.hlog", "report.html", "report.json", "timeline.csv"])
        #expect(try String(contentsOfFile: directory + "/timeline.csv", encoding: .utf8) == TimelineCSV.render(report.timeline))
        #expect(try String(contentsOfFile: directory + "/report.json", encoding: .utf8) == report.jsonText())
        #expect(try String(contentsOfFile: directory + "/report.html", encoding: .utf8) == ReportHTML.render(report))
        #expect(try String(contentsOfFile: directory + "/junit.xml", encoding: .utf8) == JUnitReport.render(report))
        // FLEETBENCH_REPORT_SAMPLE_DIR keeps a copy to look at in a browser (the screenshot check).
        if let keep = ProcessInfo.processInfo.environment["FLEETBENCH_REPORT_SAMPLE_DIR"] {
            try ReportWriter.write(SampleReports.realistic(name: "vehicles <soak> & \"friends\""), to: keep)
        }
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test("rerender rebuilds report.html, junit.xml and timeline.csv from report.json alone")
    func rerender() throws {
        let directory = try SampleReports.temporaryDirectory()
        try ReportWriter.write(SampleReports.make(), to: directory)
        let html = try String(contentsOfFile: directory + "/report.html", encoding: .utf8)
        let junit = try String(contentsOfFile: directory + "/junit.xml", encoding: .utf8)
        let timeline = try String(contentsOfFile: directory + "/timeline.csv", encoding: .utf8)
        try FileManager.default.removeItem(atPath: directory + "/report.html")
        try FileManager.default.removeItem(atPath: directory + "/junit.xml")
        try FileManager.default.removeItem(atPath: directory + "/timeline.csv")
        let report = try ReportWriter.rerender(directory: directory)
        #expect(report.scenario.name == "vehicles soak")
        #expect(try String(contentsOfFile: directory + "/report.html", encoding: .utf8) == html)
        #expect(try String(contentsOfFile: directory + "/junit.xml", encoding: .utf8) == junit)
        #expect(try String(contentsOfFile: directory + "/timeline.csv", encoding: .utf8) == timeline)
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test("rerender of a folder without report.json says which file it could not read")
    func rerenderMissing() throws {
        let directory = try SampleReports.temporaryDirectory()
        do {
            try ReportWriter.rerender(directory: directory)
            Issue.record("rerender succeeded without report.json")
        } catch {
            #expect(error.message.hasPrefix(directory + "/report.json:1:1: "))
        }
        try FileManager.default.removeItem(atPath: directory)
    }

    @Test("latency.hlog: one tagged line per kind and origin per interval, read back by the log reader")
    func latencyLog() throws {
        let text = try ReportWriter.latencyLog(SampleReports.make())
        let log = try HistogramLog(parsing: text)
        #expect(log.startTimeSeconds == 1_795_965_390.125)
        #expect(log.baseTimeSeconds == 1_795_965_390.125)
        #expect(log.comments.first == "[fleetbench 0.1.0, scenario vehicles soak, latencies in microseconds]")
        #expect(log.intervals.map(\.tag) == ["end_to_end", "end_to_end_from_sent", "tcp_connect"])
        #expect(log.intervals.map(\.startSeconds) == [0, 0, 1])
        #expect(log.intervals.map(\.lengthSeconds) == [1, 1, 1])
        #expect(log.intervals[0].histogram.max == 700)
        #expect(log.intervals[1].histogram.max == 600)
        #expect(log.intervals[2].histogram.max == 150)
        #expect(text.contains("\nTag=end_to_end,0.000,1.000,0.700,HISTF"))
    }

    @Test("latency.hlog without per-second intervals holds the whole run as one interval")
    func latencyLogWholeRun() throws {
        var report = SampleReports.make()
        report.latencyIntervals = []
        let log = try HistogramLog(parsing: try ReportWriter.latencyLog(report))
        #expect(log.intervals.map(\.tag) == [
            "tcp_connect", "puback", "end_to_end", "end_to_end_from_sent", "schedule_lag",
        ])
        #expect(log.intervals.allSatisfy { $0.startSeconds == 0 && $0.lengthSeconds == 3 })
        #expect(log.merged(tag: "end_to_end").totalCount == 1000)
        #expect(log.merged(tag: "end_to_end_from_sent").totalCount == 500)
    }

    @Test("the reference HdrHistogram reads latency.hlog and the hdr payloads of report.json, with the same figures")
    func referenceReadsOutputs() throws {
        var report = SampleReports.make()
        report.latencyIntervals = []
        let directory = try SampleReports.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try ReportWriter.write(report, to: directory)
        let script = """
            import sys, json
            from hdrh.histogram import HdrHistogram
            from hdrh.log import HistogramLogReader
            reader = HistogramLogReader(sys.argv[1] + "/latency.hlog", HdrHistogram(1, 3600000000, 3))
            log = []
            while True:
                h = reader.get_next_interval_histogram()
                if h is None:
                    break
                log.append([h.get_tag(), h.get_total_count(), h.get_value_at_percentile(99), h.get_max_value()])
            with open(sys.argv[1] + "/report.json") as f:
                latency = json.load(f)["latency_ms"]
            payloads = {}
            for kind, entry in latency.items():
                h = HdrHistogram.decode(entry["hdr"])
                payloads[kind] = [h.get_total_count(), h.get_value_at_percentile(99), h.get_max_value()]
            print(json.dumps({"log": log, "payloads": payloads}))
            """
        guard let output = ReferenceImplementation.runPython(script, arguments: [directory]) else { return }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let log = try #require(json["log"] as? [[Any]])
        #expect(log.map { $0[0] as? String } == [
            "tcp_connect", "puback", "end_to_end", "end_to_end_from_sent", "schedule_lag",
        ])
        #expect(log.map { $0[1] as? Int } == [3, 3, 1000, 500, 11])
        #expect(log.map { $0[2] as? Int } == [300, 2000, 990, 495, 20])
        let payloads = try #require(json["payloads"] as? [String: [Int]])
        #expect(payloads == [
            "tcp_connect": [3, 300, 300], "puback": [3, 2000, 2000], "end_to_end": [1000, 990, 1000],
            "schedule_lag": [11, 20, 20],
        ])
    }
}
