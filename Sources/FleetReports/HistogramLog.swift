import FleetMetrics
import Foundation

/// Writes HdrHistogram interval logs (`.hlog`) that HdrHistogram's own tools read: its Java
/// `HistogramLogReader`/`HistogramLogProcessor`, the Python `hdrh` package, `hdr_log` in C, HistogramLogAnalyzer
/// and hdr-plot.
///
/// Layout, following the reference Java `HistogramLogWriter`:
/// ```
/// #[comment lines]
/// #[Histogram log format version 1.3]
/// #[StartTime: 1700000000.000 (seconds since epoch), 2023-11-14T22:13:20Z]
/// #[BaseTime: 1700000000.000 (seconds since epoch)]
/// "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
/// Tag=end_to_end,0.000,1.000,12.345,HISTFAAAA...
/// ```
/// Interval start times are seconds relative to the base time. The max column is informational (readers decode
/// the histogram): the reference divides the histogram's max by a "max value unit ratio", 1,000,000 by default
/// because Java users record nanoseconds and want milliseconds. fleetbench records microseconds, so the ratio
/// here defaults to 1,000 and the column is in milliseconds too. (Tools that print percentiles, such as
/// `HistogramLogProcessor -outputValueUnitRatio`, need 1000 for these logs.)
public struct HistogramLogWriter: Sendable {
    public static let formatVersion = "1.3"
    public static let legend =
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""

    public let maxValueUnitRatio: Double
    /// Everything written so far.
    public private(set) var text = ""

    public init(maxValueUnitRatio: Double = 1000) {
        self.maxValueUnitRatio = maxValueUnitRatio
    }

    /// Writes `#<comment>`. Line breaks in the comment are replaced by spaces so it stays one line.
    public mutating func writeComment(_ comment: String) {
        text += "#" + comment.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ")
            + "\n"
    }

    public mutating func writeFormatVersion() {
        writeComment("[Histogram log format version \(Self.formatVersion)]")
    }

    /// `#[StartTime: <seconds since epoch, 3 decimals> (seconds since epoch), <ISO 8601 UTC>]`.
    public mutating func writeStartTime(secondsSinceEpoch seconds: Double) {
        text += "#[StartTime: \(Self.decimal3(seconds)) (seconds since epoch), \(Self.isoDate(seconds))]\n"
    }

    /// `#[BaseTime: <seconds since epoch> (seconds since epoch)]`: interval start times are relative to it.
    public mutating func writeBaseTime(secondsSinceEpoch seconds: Double) {
        text += "#[BaseTime: \(Self.decimal3(seconds)) (seconds since epoch)]\n"
    }

    public mutating func writeLegend() { text += Self.legend + "\n" }

    /// Returns what was written since the last call and forgets it: for logs streamed to a file as they grow.
    public mutating func takeText() -> String {
        defer { text = "" }
        return text
    }

    /// Writes the usual head: optional comment, format version, start time, base time (equal to the start time,
    /// so interval times are seconds since the start) and the legend.
    public mutating func writeHeader(startSecondsSinceEpoch start: Double, comment: String? = nil) {
        if let comment { writeComment("[\(comment)]") }
        writeFormatVersion()
        writeStartTime(secondsSinceEpoch: start)
        writeBaseTime(secondsSinceEpoch: start)
        writeLegend()
    }

    /// Writes one interval line: `[Tag=<tag>,]<start>,<length>,<max / ratio>,<base64 compressed V2>`.
    /// Tags may not contain commas, spaces or line breaks (the reference refuses them too).
    public mutating func writeInterval(
        startSeconds: Double, lengthSeconds: Double, histogram: HDRHistogram, tag: String? = nil
    ) throws(HistogramLogError) {
        if let tag {
            guard !tag.isEmpty, !tag.contains(where: { $0 == "," || $0.isWhitespace }) else {
                throw .invalidTag(tag)
            }
        }
        let payload: String
        do {
            payload = try histogram.encodedBase64()
        } catch {
            throw .encoding(error.description)
        }
        let max = Double(histogram.max) / maxValueUnitRatio
        let prefix = tag.map { "Tag=\($0)," } ?? ""
        text += "\(prefix)\(Self.decimal3(startSeconds)),\(Self.decimal3(lengthSeconds)),\(Self.decimal3(max)),\(payload)\n"
    }

    static func decimal3(_ value: Double) -> String { String(format: "%.3f", value) }

    static func isoDate(_ secondsSinceEpoch: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: secondsSinceEpoch))
    }
}

public enum HistogramLogError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidTag(String)
    case encoding(String)
    case malformedLine(line: Int, reason: String)

    public var description: String {
        switch self {
        case .invalidTag(let tag): return "invalid histogram log tag \"\(tag)\": no commas, spaces or line breaks"
        case .encoding(let message): return message
        case .malformedLine(let line, let reason): return "histogram log line \(line): \(reason)"
        }
    }
}

/// One interval line of a log.
public struct HistogramLogInterval: Sendable {
    public let tag: String?
    /// Start as written in the log (seconds, relative to the base time unless the log uses absolute times).
    public let startSeconds: Double
    public let lengthSeconds: Double
    /// The max column as written (already divided by the writer's unit ratio).
    public let maxColumn: Double
    /// Start in seconds since the epoch: the written start plus the base time (see `HistogramLog`).
    public let absoluteStartSeconds: Double
    public let histogram: HDRHistogram
}

/// A parsed interval log.
public struct HistogramLog: Sendable {
    public private(set) var startTimeSeconds: Double?
    public private(set) var baseTimeSeconds: Double?
    public private(set) var intervals: [HistogramLogInterval] = []
    public private(set) var comments: [String] = []

    /// Parses a log, with the reference reader's rules: `#[StartTime: x` and `#[BaseTime: x` set the times; other
    /// `#` lines are comments; the legend line is skipped; interval lines may start with `Tag=<tag>,`. Without a
    /// BaseTime line, interval times far (over a year) before the start time are taken as relative to it, others
    /// as absolute. A malformed line is an error naming its line number.
    public init(parsing text: String) throws(HistogramLogError) {
        var lineNumber = 0
        var observedBaseTime: Double? = nil
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if let seconds = Self.leadingNumber(after: "#[StartTime:", in: line) {
                    startTimeSeconds = seconds
                } else if let seconds = Self.leadingNumber(after: "#[BaseTime:", in: line) {
                    baseTimeSeconds = seconds
                    observedBaseTime = seconds
                } else {
                    comments.append(String(line.dropFirst()))
                }
                continue
            }
            if line.hasPrefix("\"StartTimestamp\"") { continue }
            var body = Substring(line)
            var tag: String? = nil
            if body.hasPrefix("Tag=") {
                guard let comma = body.firstIndex(of: ",") else {
                    throw .malformedLine(line: lineNumber, reason: "a tag without fields")
                }
                tag = String(body[body.index(body.startIndex, offsetBy: 4)..<comma])
                body = body[body.index(after: comma)...]
            }
            let fields = body.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count == 4 else {
                throw .malformedLine(line: lineNumber, reason: "expected 4 comma-separated fields, found \(fields.count)")
            }
            guard let start = Double(fields[0]), let length = Double(fields[1]), let max = Double(fields[2]),
                start.isFinite, length.isFinite
            else {
                throw .malformedLine(line: lineNumber, reason: "start, length and max must be numbers")
            }
            let histogram: HDRHistogram
            do {
                histogram = try HDRHistogram(decodingBase64: fields[3])
            } catch {
                throw .malformedLine(line: lineNumber, reason: error.description)
            }
            if startTimeSeconds == nil { startTimeSeconds = start }
            if observedBaseTime == nil {
                let startTime = startTimeSeconds ?? start
                observedBaseTime = start < startTime - 365 * 24 * 3600 ? startTime : 0
            }
            intervals.append(
                HistogramLogInterval(
                    tag: tag, startSeconds: start, lengthSeconds: length, maxColumn: max,
                    absoluteStartSeconds: start + (observedBaseTime ?? 0), histogram: histogram))
        }
    }

    /// The tags present, in order of first appearance (untagged lines are not listed).
    public var tags: [String] {
        var seen: [String] = []
        for interval in intervals { if let tag = interval.tag, !seen.contains(tag) { seen.append(tag) } }
        return seen
    }

    /// All intervals with `tag` (nil: the untagged ones) added into one histogram.
    public func merged(tag: String?) -> HDRHistogram {
        var total = HDRHistogram()
        for interval in intervals where interval.tag == tag { total.add(interval.histogram) }
        return total
    }

    private static func leadingNumber(after prefix: String, in line: String) -> Double? {
        guard line.hasPrefix(prefix) else { return nil }
        let rest = line.dropFirst(prefix.count).drop(while: { $0 == " " })
        let number = rest.prefix(while: { $0.isNumber || $0 == "." })
        return Double(number)
    }
}
