import FleetMetrics
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a run's results folder: report.json, report.html, junit.xml, latency.hlog and timeline.csv.
public enum ReportWriter {
    public static let jsonName = "report.json"
    public static let htmlName = "report.html"
    public static let junitName = "junit.xml"
    public static let hlogName = "latency.hlog"
    public static let timelineName = "timeline.csv"

    /// Writes all five files into `directory` (created if missing).
    public static func write(_ report: RunReport, to directory: String) throws(ReportError) {
        try createDirectory(directory)
        try writeFile(try report.jsonText(), to: path(directory, jsonName))
        try writeFile(ReportHTML.render(report), to: path(directory, htmlName))
        try writeFile(JUnitReport.render(report), to: path(directory, junitName))
        try writeFile(try latencyLog(report), to: path(directory, hlogName))
        try writeFile(TimelineCSV.render(report.timeline), to: path(directory, timelineName))
    }

    /// `fleetbench report DIR`: reads DIR/report.json and writes report.html, junit.xml and timeline.csv again
    /// beside it.
    @discardableResult
    public static func rerender(directory: String) throws(ReportError) -> RunReport {
        let report = try RunReport.load(path: path(directory, jsonName))
        try rerender(report, directory: directory)
        return report
    }

    /// Writes report.html, junit.xml and timeline.csv of an already read report into `directory`.
    public static func rerender(_ report: RunReport, directory: String) throws(ReportError) {
        try writeFile(ReportHTML.render(report), to: path(directory, htmlName))
        try writeFile(JUnitReport.render(report), to: path(directory, junitName))
        try writeFile(TimelineCSV.render(report.timeline), to: path(directory, timelineName))
    }

    /// `directory/name` (no doubled slash).
    public static func path(in directory: String, _ name: String) -> String { path(directory, name) }

    /// latency.hlog: for every interval, one line per latency kind with samples, tagged with the kind's report
    /// name (`end_to_end`); kinds measured from the intended send time get a second line with the actual-send
    /// figures tagged `<kind>_from_sent`. Without per-second intervals the whole run is written as one interval.
    public static func latencyLog(_ report: RunReport) throws(ReportError) -> String {
        var writer = HistogramLogWriter()
        let comment = "fleetbench \(report.toolVersion), scenario \(report.scenario.name), latencies in microseconds"
        writer.writeHeader(startSecondsSinceEpoch: report.run.startedAt.timeIntervalSince1970, comment: comment)
        let intervals =
            report.latencyIntervals.isEmpty
            ? [ReportLatencyInterval(startSeconds: 0, lengthSeconds: report.run.durationSeconds, latencies: report.latency)]
            : report.latencyIntervals
        do {
            for interval in intervals {
                for kind in interval.latencies.kindsWithSamples {
                    let intended = interval.latencies.histogram(kind, from: .intended)
                    let sent = interval.latencies.histogram(kind, from: .sent)
                    if intended.totalCount > 0 {
                        try writer.writeInterval(
                            startSeconds: interval.startSeconds, lengthSeconds: interval.lengthSeconds,
                            histogram: intended, tag: kind.reportName)
                        if sent.totalCount > 0 {
                            try writer.writeInterval(
                                startSeconds: interval.startSeconds, lengthSeconds: interval.lengthSeconds,
                                histogram: sent, tag: sentTag(kind))
                        }
                    } else {
                        try writer.writeInterval(
                            startSeconds: interval.startSeconds, lengthSeconds: interval.lengthSeconds,
                            histogram: sent, tag: kind.reportName)
                    }
                }
            }
        } catch {
            throw ReportError("cannot write latency.hlog: \(error.description)")
        }
        return writer.text
    }

    /// The hlog tag of a kind's actual-send-time histogram.
    public static func sentTag(_ kind: LatencyKind) -> String { kind.reportName + "_from_sent" }

    static func path(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    static func createDirectory(_ directory: String) throws(ReportError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ReportError("cannot create the results folder \(directory): \(error.localizedDescription)")
        }
    }

    /// Writes `text` to a temporary file beside `path`, flushes it to disk and renames it over `path`: a full
    /// disk, a file size limit or a crash leaves the previous file or none, never a truncated one. The error
    /// gives the system's reason (e.g. "No space left on device").
    public static func writeFile(_ text: String, to path: String) throws(ReportError) {
        let temporary = path + ".partial-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ReportError("cannot write \(path): \(String(cString: strerror(errno)))") }
        var failure: Int32 = 0
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw ReportError("cannot write \(path): \(String(cString: strerror(failure)))")
        }
    }
}
