import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

@Suite("Per-second results streamed to disk")
struct RunStreamWriterTests {
    static let startedAt = Date(timeIntervalSince1970: 1_795_965_390.125)

    /// Second `index`'s latencies: end-to-end from both origins (100 + index samples) and, every third second,
    /// connect latencies from the sent time only.
    static func latencies(second index: Int) -> LatencyRecorder {
        var recorder = LatencyRecorder()
        for sample in 0..<(100 + index) {
            let value = UInt64(200 + (sample * 37 + index * 11) % 5000)
            recorder.record(.endToEnd, from: .intended, microseconds: value + 50)
            recorder.record(.endToEnd, from: .sent, microseconds: value)
        }
        if index % 3 == 0 {
            for sample in 0..<7 { recorder.record(.connect, from: .sent, microseconds: UInt64(900 + sample * 13)) }
        }
        return recorder
    }

    static func writer(in directory: String) throws -> RunStreamWriter {
        try RunStreamWriter(directory: directory, toolVersion: "0.1.0", scenarioName: "soak", startedAt: startedAt)
    }

    @Test("latency.hlog gets one line per kind and origin and second; they add up to the run's totals")
    func latencyLogStreamed() throws {
        let directory = try SampleReports.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stream = try Self.writer(in: directory)
        var total = LatencyRecorder()
        for second in 0..<10 {
            let latencies = Self.latencies(second: second)
            total.add(latencies)
            stream.append(ReportLatencyInterval(startSeconds: Double(second), lengthSeconds: 1, latencies: latencies))
        }
        #expect(stream.intervalsWritten == 10)
        _ = try stream.finish()
        try stream.commit()
        let text = try String(contentsOfFile: directory + "/latency.hlog", encoding: .utf8)
        // Byte for byte what the whole-run writer produces from the same intervals.
        var report = SampleReports.make()
        report.toolVersion = "0.1.0"
        report.scenario.name = "soak"
        report.run.startedAt = Self.startedAt
        report.latencyIntervals = (0..<10).map {
            ReportLatencyInterval(startSeconds: Double($0), lengthSeconds: 1, latencies: Self.latencies(second: $0))
        }
        #expect(text == (try ReportWriter.latencyLog(report)))
        let log = try HistogramLog(parsing: text)
        #expect(log.intervals.filter { $0.tag == "end_to_end" }.map(\.startSeconds) == (0..<10).map(Double.init))
        #expect(log.intervals.filter { $0.tag == "end_to_end_from_sent" }.count == 10)
        #expect(log.intervals.filter { $0.tag == "connect" }.map(\.startSeconds) == [0, 3, 6, 9])
        #expect(log.intervals.count == 24)
        #expect(log.merged(tag: "end_to_end").totalCount == total.histogram(.endToEnd, from: .intended).totalCount)
        #expect(log.merged(tag: "end_to_end").totalCount == (0..<10).reduce(0) { $0 + 100 + UInt64($1) })
        #expect(log.merged(tag: "end_to_end").recordedValues() == total.histogram(.endToEnd, from: .intended).recordedValues())
        #expect(log.merged(tag: "end_to_end_from_sent").recordedValues() == total.histogram(.endToEnd, from: .sent).recordedValues())
        #expect(log.merged(tag: "connect").recordedValues() == total.histogram(.connect, from: .sent).recordedValues())
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["latency.hlog", "timeline.csv"])
    }

    @Test("the reference implementation reads the streamed log: every second, tag and count")
    func referenceReadsStreamedLog() throws {
        let directory = try SampleReports.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stream = try Self.writer(in: directory)
        for second in 0..<5 {
            stream.append(ReportLatencyInterval(startSeconds: Double(second), lengthSeconds: 1,
                                                latencies: Self.latencies(second: second)))
        }
        _ = try stream.finish()
        try stream.commit()
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
                out.append([h.get_tag(), h.get_start_time_stamp(), h.get_total_count()])
            print(json.dumps(out))
            """
        guard let output = ReferenceImplementation.runPython(script, arguments: [directory + "/latency.hlog"]) else { return }
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[Any]])
        let endToEnd = rows.filter { $0[0] as? String == "end_to_end" }
        #expect(endToEnd.map { $0[2] as? Int } == (0..<5).map { 100 + $0 })
        #expect(endToEnd.map { $0[1] as? Double } == (0..<5).map { (1_795_965_390.125 + Double($0)) * 1000 })
        #expect(rows.filter { $0[0] as? String == "connect" }.map { $0[2] as? Int } == [7, 7])
        #expect(rows.count == 12)
    }

    @Test("timeline.csv holds each second's own counts and reads back to the same points")
    func timelineStreamed() throws {
        let directory = try SampleReports.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stream = try Self.writer(in: directory)
        let cumulative = [
            TimelinePoint(t: 1.000213, connected: 3, published: 10, received: 9, endToEndP50Ms: 1.25,
                          endToEndP99Ms: 7.0625, ackTimeouts: 0),
            TimelinePoint(t: 2.0001, connected: 5, published: 25, received: 24, ackTimeouts: 2),
            TimelinePoint(t: 2.5, connected: 0, published: 25, received: 25, endToEndP50Ms: 0.1,
                          endToEndP99Ms: 0.30000000000000004, ackTimeouts: 2),
        ]
        for point in cumulative { stream.appendTimeline(cumulative: point) }
        let points = try stream.finish()
        try stream.commit()
        #expect(points == TimelinePoint.differenced(cumulative))
        #expect(points.map(\.published) == [10, 15, 0])
        #expect(try String(contentsOfFile: directory + "/timeline.csv", encoding: .utf8) == """
            t_s,connected,published,received,end_to_end_p50_ms,end_to_end_p99_ms,ack_timeouts
            1.000213,3,10,9,1.25,7.0625,0
            2.0001,5,15,15,,,2
            2.5,0,0,1,0.1,0.30000000000000004,0

            """)
        #expect(try RunStreamWriter.readTimeline(path: directory + "/timeline.csv") == points)
        // The same text `fleetbench report` renders from report.json's timeline.
        #expect(try String(contentsOfFile: directory + "/timeline.csv", encoding: .utf8) == TimelineCSV.render(points))
    }

    @Test("an hour of seconds leaves the writer holding what one second needs, not the hour")
    func boundedState() throws {
        let directory = try SampleReports.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stream = try Self.writer(in: directory)
        // Every second alike (the largest), so the buffer reaches its size in the first second.
        let latencies = Self.latencies(second: 301)
        var retained: [Int] = []
        for second in 0..<3600 {
            stream.append(ReportLatencyInterval(startSeconds: Double(second), lengthSeconds: 1, latencies: latencies))
            stream.appendTimeline(cumulative: TimelinePoint(
                t: Double(second + 1), connected: 15_000, published: UInt64(second + 1) * 15_000,
                received: UInt64(second + 1) * 15_000, endToEndP50Ms: 1.5, endToEndP99Ms: 4.25))
            if second == 9 || second == 3599 { retained.append(stream.retainedBytes) }
        }
        #expect(retained[0] == retained[1])
        #expect(retained[1] <= 128 * 1024)
        #expect(stream.intervalsWritten == 3600)
        #expect(stream.timelineRows == 3600)
        let points = try stream.finish()
        try stream.commit()
        #expect(points.count == 3600)
        #expect(points.allSatisfy { $0.published == 15_000 })
        let log = try HistogramLog(parsing: try String(contentsOfFile: directory + "/latency.hlog", encoding: .utf8))
        #expect(log.intervals.count == 3600 * 2)
        #expect(log.merged(tag: "end_to_end").totalCount == 3600 * 401)
    }

    @Test("until commit the files are partial; abandon removes them and leaves the folder as it was")
    func partialUntilCommit() throws {
        let directory = try SampleReports.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stream = try Self.writer(in: directory)
        stream.append(ReportLatencyInterval(startSeconds: 0, lengthSeconds: 1, latencies: Self.latencies(second: 0)))
        let pid = getpid()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            == ["latency.hlog.partial-\(pid)", "timeline.csv.partial-\(pid)"])
        // What a process killed now would leave: a log the reader takes whole.
        let partial = try HistogramLog(parsing: try String(contentsOfFile: directory + "/latency.hlog.partial-\(pid)",
                                                           encoding: .utf8))
        #expect(partial.merged(tag: "end_to_end").totalCount == 100)
        _ = try stream.finish()
        stream.abandon()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test("a write that fails (disk full: /dev/full) is reported by finish with the file and the system's reason")
    func writeFailure() throws {
        let directory = try SampleReports.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A writer whose descriptors point at /dev/full: every write fails with ENOSPC.
        let stream = try Self.writer(in: directory)
        try stream.redirectToDeviceForTesting("/dev/full")
        stream.append(ReportLatencyInterval(startSeconds: 0, lengthSeconds: 1, latencies: Self.latencies(second: 0)))
        stream.appendTimeline(cumulative: TimelinePoint(t: 1, connected: 1, published: 1, received: 1))
        #expect(stream.intervalsWritten == 0)
        do {
            _ = try stream.finish()
            Issue.record("finish succeeded after a failed write")
        } catch {
            #expect(error.message == "cannot write \(directory)/latency.hlog: No space left on device")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
