import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

/// The data of the nth interval of `intervals.hlog`, rebuilt from make_fixtures.py's formula.
func fixtureIntervalValues(_ index: Int) -> [(UInt64, UInt64)] {
    stride(from: 0, to: 500 * (index + 1), by: 7).map { (UInt64(100 * (index + 1) + $0), UInt64(1 + $0 % 3)) }
}

@Suite("HdrHistogram interval logs")
struct HistogramLogTests {
    @Test("the reference's interval log parses: times, tags, untagged lines and every histogram")
    func readReferenceLog() throws {
        let log = try HistogramLog(parsing: try Fixtures.text("intervals.hlog"))
        let expected = try #require(try Fixtures.json("intervals.expected.json") as? [[String: Any]])
        #expect(log.startTimeSeconds == 1_700_000_000)
        #expect(log.baseTimeSeconds == 1_700_000_000)
        #expect(log.comments == [
            "[Made by make_fixtures.py with the hdrhistogram Python package]", "[Histogram log format version 1.3]",
        ])
        #expect(log.tags == ["end_to_end", "puback"])
        #expect(log.intervals.count == expected.count)
        for (interval, reference) in zip(log.intervals, expected) {
            #expect(interval.tag == reference["tag"] as? String)
            #expect(interval.startSeconds == reference["start"] as? Double)
            #expect(interval.absoluteStartSeconds == 1_700_000_000 + (reference["start"] as? Double ?? -1))
            #expect(interval.lengthSeconds == 1)
            #expect(interval.histogram.totalCount == reference["total_count"] as? UInt64)
            #expect(interval.histogram.max == reference["max"] as? UInt64)
            var counts: [String: UInt64] = [:]
            for index in 0..<interval.histogram.countsLength where interval.histogram.count(atIndex: index) > 0 {
                counts[String(index)] = interval.histogram.count(atIndex: index)
            }
            #expect(counts == reference["counts"] as? [String: UInt64])
            let index = try #require(reference["index"] as? Int)
            let local = histogram(of: fixtureIntervalValues(index))
            #expect(interval.histogram.recordedValues() == local.recordedValues())
        }
        var endToEnd = HDRHistogram()
        for index in [0, 3] { endToEnd.add(histogram(of: fixtureIntervalValues(index))) }
        #expect(log.merged(tag: "end_to_end").recordedValues() == endToEnd.recordedValues())
        #expect(log.merged(tag: nil).totalCount == log.intervals[2].histogram.totalCount + log.intervals[5].histogram.totalCount)
    }

    @Test("written logs have the reference layout and read back exactly")
    func writeAndReadBack() throws {
        var endToEnd = HDRHistogram()
        for value in UInt64(1)...5000 { endToEnd.record(value * 3) }
        var puback = HDRHistogram()
        puback.record(250, count: 10)
        var writer = HistogramLogWriter()
        writer.writeHeader(startSecondsSinceEpoch: 1_700_000_000.25, comment: "fleetbench test")
        try writer.writeInterval(startSeconds: 0, lengthSeconds: 1, histogram: endToEnd, tag: "end_to_end")
        try writer.writeInterval(startSeconds: 0, lengthSeconds: 1, histogram: puback, tag: "puback")
        try writer.writeInterval(startSeconds: 1.0005, lengthSeconds: 0.9995, histogram: puback)
        let lines = writer.text.split(separator: "\n").map(String.init)
        #expect(lines.count == 8)
        #expect(lines[0] == "#[fleetbench test]")
        #expect(lines[1] == "#[Histogram log format version 1.3]")
        #expect(lines[2] == "#[StartTime: 1700000000.250 (seconds since epoch), 2023-11-14T22:13:20Z]")
        #expect(lines[3] == "#[BaseTime: 1700000000.250 (seconds since epoch)]")
        #expect(lines[4] == "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")
        // Max column in milliseconds: 15000 µs lies in the bucket ending 15007 µs.
        #expect(lines[5].hasPrefix("Tag=end_to_end,0.000,1.000,15.007,HISTF"))
        #expect(lines[6].hasPrefix("Tag=puback,0.000,1.000,0.250,HISTF"))
        #expect(lines[7].hasPrefix("1.000,1.000,0.250,HISTF") || lines[7].hasPrefix("1.001,0.999,0.250,HISTF"))

        let log = try HistogramLog(parsing: writer.text)
        #expect(log.intervals.map(\.tag) == ["end_to_end", "puback", nil])
        #expect(log.intervals[0].histogram.recordedValues() == endToEnd.recordedValues())
        #expect(log.intervals[1].histogram.recordedValues() == puback.recordedValues())
        #expect(log.intervals[0].maxColumn == 15.007)
        #expect(log.intervals[0].absoluteStartSeconds == 1_700_000_000.25)
    }

    @Test("tags with commas or spaces are refused")
    func invalidTags() {
        var writer = HistogramLogWriter()
        #expect(throws: HistogramLogError.invalidTag("a,b")) {
            try writer.writeInterval(startSeconds: 0, lengthSeconds: 1, histogram: HDRHistogram(), tag: "a,b")
        }
        #expect(throws: HistogramLogError.invalidTag("a b")) {
            try writer.writeInterval(startSeconds: 0, lengthSeconds: 1, histogram: HDRHistogram(), tag: "a b")
        }
        #expect(writer.text.isEmpty)
    }

    @Test(
        "malformed lines are reported with their line number",
        arguments: [
            ("0.0,1.0,HISTFAAAA", "histogram log line 2: expected 4 comma-separated fields, found 3"),
            ("zero,1.0,2.0,HISTFAAAA", "histogram log line 2: start, length and max must be numbers"),
            ("Tag=x", "histogram log line 2: a tag without fields"),
            ("0.0,1.0,2.0,!!!", "histogram log line 2: encoded histogram is not valid base64"),
            ("0.0,1.0,2.0,AAAAAAAAAAA=", "histogram log line 2: not a V2 HdrHistogram encoding: cookie 0x0, expected 0x1c849314"),
        ])
    func malformed(line: String, message: String) {
        do {
            _ = try HistogramLog(parsing: "#[StartTime: 1.0 (seconds since epoch)]\n" + line + "\n")
            Issue.record("parsed a malformed line")
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("without StartTime or BaseTime, times are absolute or relative per the reference's one-year rule")
    func timeInference() throws {
        let payload = try HDRHistogram().encodedBase64()
        let absolute = try HistogramLog(parsing: "1700000000.000,1.000,0.000,\(payload)\n1700000001.000,1.000,0.000,\(payload)\n")
        #expect(absolute.startTimeSeconds == 1_700_000_000)
        #expect(absolute.intervals[1].absoluteStartSeconds == 1_700_000_001)
        let relative = try HistogramLog(
            parsing: "#[StartTime: 1700000000.000 (seconds since epoch), x]\n2.500,1.000,0.000,\(payload)\n")
        #expect(relative.intervals[0].absoluteStartSeconds == 1_700_000_002.5)
    }

    @Test("the reference implementation reads our log: tags, times and every histogram")
    func referenceReadsOurLog() throws {
        var writer = HistogramLogWriter()
        writer.writeHeader(startSecondsSinceEpoch: 1_700_000_000)
        var histograms: [HDRHistogram] = []
        for index in 0..<4 {
            var histogram = HDRHistogram()
            for value in UInt64(1)...UInt64(100 * (index + 1)) { histogram.record(value * 97 + UInt64(index)) }
            histograms.append(histogram)
            try writer.writeInterval(
                startSeconds: Double(index), lengthSeconds: 1, histogram: histogram,
                tag: index % 2 == 0 ? "end_to_end" : nil)
        }
        let path = try ReferenceImplementation.temporaryFile(writer.text, suffix: ".hlog")
        defer { try? FileManager.default.removeItem(atPath: path) }
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
                out.append({"tag": h.get_tag(), "start_ms": h.get_start_time_stamp(), "total": h.get_total_count(),
                    "max": h.get_max_value(), "p90": h.get_value_at_percentile(90)})
            print(json.dumps(out))
            """
        guard let output = ReferenceImplementation.runPython(script, arguments: [path]) else { return }
        let intervals = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
        #expect(intervals.count == 4)
        for (index, interval) in intervals.enumerated() {
            #expect(interval["tag"] as? String == (index % 2 == 0 ? "end_to_end" : nil))
            #expect(interval["start_ms"] as? Double == (1_700_000_000 + Double(index)) * 1000)
            #expect(interval["total"] as? UInt64 == histograms[index].totalCount)
            #expect(interval["max"] as? UInt64 == histograms[index].max)
            #expect(interval["p90"] as? UInt64 == histograms[index].valueAtPercentile(90))
        }
    }
}
