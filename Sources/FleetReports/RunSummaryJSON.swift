import FleetJSON
import FleetMetrics

/// `fleetbench run --summary-json FILE`: the printed summary's figures as JSON, for scripts. Schema
/// `fleetbench.summary/1` (docs/report-format.md): the sections share report.json's keys and meanings, without
/// histograms, timeline or environment, plus the results folder and the exit code.
public enum RunSummaryJSON {
    public static let schema = "fleetbench.summary/1"

    /// The summary of `report`; `directory` is the results folder (nil when it could not be written).
    public static func value(_ report: RunReport, directory: String?, exitCode: Int32) -> JSONValue {
        let verdict = report.run.interrupted ? "interrupted" : (report.passed ? "passed" : "failed")
        var latency: [JSONMember] = []
        for kind in report.latency.kindsWithSamples {
            let intended = report.latency.histogram(kind, from: .intended)
            let histogram = intended.totalCount > 0 ? intended : report.latency.histogram(kind, from: .sent)
            guard histogram.totalCount > 0 else { continue }
            latency.append(JSONMember(kind.reportName, .object(LatencySummary(histogram).members)))
        }
        var members: [JSONMember] = [
            JSONMember("schema", .string(schema)),
            JSONMember("scenario", .string(report.scenario.name)),
            JSONMember("verdict", .string(verdict)),
            JSONMember("passed", .bool(report.passed)),
            JSONMember("exit_code", .integer(Int64(exitCode))),
            JSONMember("results", directory.map { .string($0) } ?? .null),
            JSONMember("run", report.run.jsonValue),
            JSONMember("connections", report.connections.jsonValue),
            JSONMember("messages", report.messages.jsonValue),
            JSONMember("rates", .object([
                JSONMember("published", .real(rounded(report.run.rate(report.messages.published.total)))),
                JSONMember("received", .real(rounded(report.run.rate(report.messages.received.total)))),
                JSONMember("arrived", .real(rounded(report.run.rate(report.messages.arrived.total)))),
            ])),
            JSONMember("delivery", report.delivery.jsonValue),
            JSONMember("ack_timeouts", RunReport.ackTimeoutsJSON(report.ackTimeouts, seconds: nil)),
            JSONMember("downgrades", report.downgrades.jsonValue),
            JSONMember("latency_ms", .object(latency)),
            JSONMember("thresholds", .array(report.thresholds.map(\.jsonValue))),
            JSONMember("generator", .object([
                JSONMember("cpu_s", .real(report.generator.cpuSeconds)),
                JSONMember("peak_rss_bytes", .count(report.generator.peakRSSBytes)),
                JSONMember("lanes", .integer(Int64(report.generator.lanes))),
                JSONMember("saturated", .bool(report.generator.saturated)),
                JSONMember("dropped_slots", .count(report.generator.droppedSlots)),
                JSONMember("unsent_at_end", .count(report.generator.unsentAtEnd)),
                JSONMember("abandoned_publishes", .count(report.generator.abandonedPublishes)),
            ])),
        ]
        // As report.json: only when some fleet emulates network conditions.
        members.append(contentsOf: report.networkMembers)
        return .object(members)
    }

    /// Messages per second to three decimals.
    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
}

/// `timeline.csv` in the results folder: report.json's `timeline[]` for spreadsheets and notebooks.
public enum TimelineCSV {
    public static let header = "t_s,connected,published,received,end_to_end_p50_ms,end_to_end_p99_ms,ack_timeouts"

    /// One line per second, `\n`-terminated; a latency without samples that second is an empty field.
    public static func render(_ timeline: [TimelinePoint]) -> String {
        var text = header + "\n"
        for point in timeline { text += row(point) }
        return text
    }

    /// One second's line, `\n`-terminated. Numbers as in report.json (shortest form that reads back exactly).
    public static func row(_ point: TimelinePoint) -> String {
        [
            JSONWriter.formatReal(point.t), String(point.connected), String(point.published),
            String(point.received), point.endToEndP50Ms.map(JSONWriter.formatReal) ?? "",
            point.endToEndP99Ms.map(JSONWriter.formatReal) ?? "", String(point.ackTimeouts),
        ].joined(separator: ",") + "\n"
    }

    /// Reads what `render` wrote. A malformed line is an error naming `path` and the line.
    public static func parse(_ text: String, path: String) throws(ReportError) -> [TimelinePoint] {
        var points: [TimelinePoint] = []
        var lineNumber = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.isEmpty || (lineNumber == 1 && line == header) { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count == 7, let t = Double(fields[0]), let connected = UInt64(fields[1]),
                let published = UInt64(fields[2]), let received = UInt64(fields[3]),
                fields[4].isEmpty || Double(fields[4]) != nil, fields[5].isEmpty || Double(fields[5]) != nil,
                let ackTimeouts = UInt64(fields[6])
            else {
                throw ReportError("\(path):\(lineNumber): expected \(header)")
            }
            points.append(
                TimelinePoint(
                    t: t, connected: connected, published: published, received: received,
                    endToEndP50Ms: Double(fields[4]), endToEndP99Ms: Double(fields[5]), ackTimeouts: ackTimeouts))
        }
        return points
    }
}
