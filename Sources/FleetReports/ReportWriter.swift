import FleetMetrics
import Foundation

/// Writes a run's results folder: report.json, report.html, junit.xml and latency.hlog.
public enum ReportWriter {
    public static let jsonName = "report.json"
    public static let htmlName = "report.html"
    public static let junitName = "junit.xml"
    public static let hlogName = "latency.hlog"

    /// Writes all four files into `directory` (created if missing).
    public static func write(_ report: RunReport, to directory: String) throws(ReportError) {
        try createDirectory(directory)
        try writeFile(try report.jsonText(), to: path(directory, jsonName))
        try writeFile(ReportHTML.render(report), to: path(directory, htmlName))
        try writeFile(JUnitReport.render(report), to: path(directory, junitName))
        try writeFile(try latencyLog(report), to: path(directory, hlogName))
    }

    /// `fleetbench report DIR`: reads DIR/report.json and writes report.html and junit.xml again beside it.
    @discardableResult
    public static func rerender(directory: String) throws(ReportError) -> RunReport {
        let report = try RunReport.load(path: path(directory, jsonName))
        try rerender(report, directory: directory)
        return report
    }

    /// Writes report.html and junit.xml of an already read report into `directory`.
    public static func rerender(_ report: RunReport, directory: String) throws(ReportError) {
        try writeFile(ReportHTML.render(report), to: path(directory, htmlName))
        try writeFile(JUnitReport.render(report), to: path(directory, junitName))
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

    static func writeFile(_ text: String, to path: String) throws(ReportError) {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw ReportError("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
