import FleetMetrics
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a run's per-second results to disk as each second completes, so a run of any length holds only the
/// second being written: latency.hlog (one line per latency kind with samples and second, see
/// `ReportWriter.latencyLog`) and timeline.csv (one row per second, `TimelineCSV`, the report's `timeline`).
///
/// Both grow as `<name>.partial-<pid>` in the results folder; `finish()` flushes them to disk, and `commit()`
/// renames them into place once report.json is written: like every results file, a crash or a full disk leaves
/// no truncated latency.hlog (a process killed mid-run leaves the partial files, with every second written until
/// then). A write error (e.g. "No space left on device") stops the writing, is kept, and `finish()` throws it.
///
/// Not thread-safe: call from one queue at a time (the engine's merge queue during the run, the caller after).
public final class RunStreamWriter: @unchecked Sendable {
    // Safety: used from one queue at a time (see above); `Engine.run` returns only after its last callback.

    public let directory: String
    private var log: HistogramLogWriter
    private var hlog: Int32
    private var timeline: Int32
    private let hlogPartial: String
    private let timelinePartial: String
    /// The previous second's running totals, to turn running totals into each second's own counts.
    private var previous = TimelinePoint(t: 0, connected: 0, published: 0, received: 0)
    /// One second's bytes before they are written; emptied (capacity kept) after every write.
    private var buffer: [UInt8] = []
    private var failure: ReportError?
    private enum State { case open, finished, done }
    private var state = State.open
    /// Seconds written to each file.
    public private(set) var intervalsWritten = 0
    public private(set) var timelineRows = 0

    /// Creates both partial files in `directory` (which must exist) and writes their heads.
    public init(directory: String, toolVersion: String, scenarioName: String, startedAt: Date) throws(ReportError) {
        self.directory = directory
        hlogPartial = ReportWriter.path(directory, ReportWriter.hlogName) + ".partial-\(getpid())"
        timelinePartial = ReportWriter.path(directory, ReportWriter.timelineName) + ".partial-\(getpid())"
        log = ReportWriter.latencyLogHeader(toolVersion: toolVersion, scenarioName: scenarioName, startedAt: startedAt)
        hlog = open(hlogPartial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard hlog >= 0 else {
            throw ReportError("cannot write \(ReportWriter.hlogName) in \(directory): \(String(cString: strerror(errno)))")
        }
        timeline = open(timelinePartial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard timeline >= 0 else {
            let reason = String(cString: strerror(errno))
            close(hlog)
            unlink(hlogPartial)
            throw ReportError("cannot write \(ReportWriter.timelineName) in \(directory): \(reason)")
        }
        buffer.reserveCapacity(64 * 1024)
        write(log.takeText(), to: hlog, name: ReportWriter.hlogName)
        write(TimelineCSV.header + "\n", to: timeline, name: ReportWriter.timelineName)
    }

    deinit {
        abandon()
    }

    /// Appends one second's latencies to latency.hlog.
    public func append(_ interval: ReportLatencyInterval) {
        guard failure == nil, state == .open else { return }
        do {
            try ReportWriter.writeLatencyLines(interval, to: &log)
        } catch {
            failure = error
            return
        }
        write(log.takeText(), to: hlog, name: ReportWriter.hlogName)
        if failure == nil { intervalsWritten += 1 }
    }

    /// Appends one second to timeline.csv. `cumulative` carries running totals of published, received and ack
    /// timeouts (as the engine's snapshots do); the row holds that second's own counts.
    public func appendTimeline(cumulative point: TimelinePoint) {
        guard failure == nil, state == .open else { return }
        let second = TimelinePoint.differenced([previous, point])[1]
        previous = point
        write(TimelineCSV.row(second), to: timeline, name: ReportWriter.timelineName)
        if failure == nil { timelineRows += 1 }
    }

    /// Flushes both partial files to disk and closes them, and returns the timeline read back from the partial
    /// timeline.csv. Throws the first write error of the run, if any (the partial files are then removed).
    /// `commit()` then puts both files in place, once the rest of the results were written.
    public func finish() throws(ReportError) -> [TimelinePoint] {
        guard state == .open else { throw ReportError("the results stream was already finished") }
        state = .finished
        for (descriptor, name) in [(hlog, ReportWriter.hlogName), (timeline, ReportWriter.timelineName)] {
            if failure == nil, fsync(descriptor) != 0 { failure = Self.error(name, directory, errno) }
            if close(descriptor) != 0, failure == nil { failure = Self.error(name, directory, errno) }
        }
        var points: [TimelinePoint] = []
        if failure == nil {
            do { points = try Self.readTimeline(path: timelinePartial) } catch { failure = error }
        }
        if let failure {
            removePartials()
            throw failure
        }
        return points
    }

    /// Renames the finished files to latency.hlog and timeline.csv.
    public func commit() throws(ReportError) {
        guard state == .finished else { throw ReportError("the results stream is not finished") }
        state = .done
        let hlogPath = ReportWriter.path(directory, ReportWriter.hlogName)
        let timelinePath = ReportWriter.path(directory, ReportWriter.timelineName)
        var failure: ReportError?
        if rename(hlogPartial, hlogPath) != 0 { failure = Self.error(ReportWriter.hlogName, directory, errno) }
        if failure == nil, rename(timelinePartial, timelinePath) != 0 {
            failure = Self.error(ReportWriter.timelineName, directory, errno)
        }
        if let failure {
            removePartials()
            throw failure
        }
    }

    /// Removes the partial files (closing them first if still open): a run whose results are not written.
    public func abandon() {
        if state == .open {
            close(hlog)
            close(timeline)
        }
        if state != .done { removePartials() }
        state = .done
    }

    /// Points both files' descriptors at `device` (tests: /dev/full makes every later write fail with ENOSPC).
    func redirectToDeviceForTesting(_ device: String) throws(ReportError) {
        let replacement = open(device, O_WRONLY | O_CLOEXEC)
        guard replacement >= 0, dup2(replacement, hlog) >= 0, dup2(replacement, timeline) >= 0 else {
            throw ReportError("cannot open \(device): \(String(cString: strerror(errno)))")
        }
        close(replacement)
    }

    /// Unlinks the partial files, from any thread (a process about to exit at once: writes still under way go
    /// to the unlinked files).
    public func removePartialFiles() { removePartials() }

    private func removePartials() {
        unlink(hlogPartial)
        unlink(timelinePartial)
    }

    /// Bytes this writer holds between seconds: its reusable buffer. Constant once the largest second was seen,
    /// however many seconds were written.
    public var retainedBytes: Int { buffer.capacity + log.text.utf8.count }

    private func write(_ text: String, to descriptor: Int32, name: String) {
        guard failure == nil else { return }
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: text.utf8)
        let error: Int32 = buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return 0
        }
        buffer.removeAll(keepingCapacity: true)
        if error != 0 { failure = Self.error(name, directory, error) }
    }

    private static func error(_ name: String, _ directory: String, _ code: Int32) -> ReportError {
        ReportError("cannot write \(ReportWriter.path(directory, name)): \(String(cString: strerror(code)))")
    }

    /// Reads timeline.csv (`TimelineCSV`). A malformed line is an error naming the file and line.
    public static func readTimeline(path: String) throws(ReportError) -> [TimelinePoint] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ReportError("cannot read \(path)")
        }
        return try TimelineCSV.parse(String(decoding: data, as: UTF8.self), path: path)
    }
}
