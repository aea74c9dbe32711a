import FleetEngine
import FleetMetrics
import FleetReports
import FleetScenario
import Foundation

/// `fleetbench merge DIR... --out DIR`: one result from the results folders of a segmented run's segments.
struct MergeCommand: FleetCommand {
    static let help = """
        Usage: fleetbench merge DIR... --out DIR

        Merges the results folders of the segments of one run (fleetbench run --segment K/N, each folder with its
        segment.json) into one results folder, as if one process had run it: counters summed, latency histograms
        and latency.hlog intervals added count by count on the run's common time base (--start-at), delivery
        settled across segments (a subscriber's expected count from its publisher's segment), the timeline summed,
        thresholds evaluated on the merged result. It writes report.json, report.html, junit.xml and
        latency.hlog. It refuses folders of different runs, and segment sets with a segment missing or twice.

        Options:
          --out DIR     the merged results folder (required)
          --quiet       print only the summary
          -h, --help    show this help

        Exit codes: 0 merged and thresholds passed, 1 a segment was interrupted or the results cannot be
        written, 2 usage error or folders that cannot be merged, 99 thresholds failed.
        """

    var directories: [String] = []
    var outputDirectory = ""
    var quiet = false

    static func parse(_ arguments: [String]) throws(UsageError) -> MergeCommand? {
        var command = MergeCommand()
        var out: String?
        var scanner = ArgumentScanner(arguments, command: "merge", help: help)
        while let option = try scanner.next() {
            switch option {
            case "-h", "--help": return nil
            case "--out": out = try scanner.value()
            case "--quiet": command.quiet = true
            default: try scanner.positional(into: &command.directories)
            }
        }
        guard let out else { throw UsageError("merge needs --out DIR for the merged results") }
        guard !command.directories.isEmpty else { throw UsageError("merge needs the results folders of the segments") }
        command.outputDirectory = out
        return command
    }

    /// One segment's results folder, read.
    struct Part {
        var directory: String
        var report: RunReport
        var segment: SegmentFile
        /// latency.hlog's interval lines, each histogram compacted as it is read (a full-range histogram per
        /// interval line would take hundreds of KB: gigabytes for two 10-minute runs).
        var intervals: [LogInterval]
    }

    struct LogInterval {
        var tag: String
        var startSeconds: Double
        var histogram: HDRHistogram
    }

    /// The tagged interval lines of a latency.hlog as fleetbench writes it (`Tag=<tag>,start,length,max,base64`,
    /// start relative to the log's base time, which is the run's start).
    static func intervals(inLog text: String, path: String) throws(ReportError) -> [LogInterval] {
        var intervals: [LogInterval] = []
        var lineNumber = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            guard line.hasPrefix("Tag=") else { continue }
            let fields = line.dropFirst(4).split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count == 5, let start = Double(fields[1]) else {
                throw ReportError("\(path):\(lineNumber): expected Tag=<tag>,start,length,max,histogram")
            }
            do {
                let histogram = try HDRHistogram(decodingBase64: fields[4]).compacted()
                intervals.append(LogInterval(tag: String(fields[0]), startSeconds: start, histogram: histogram))
            } catch {
                throw ReportError("\(path):\(lineNumber): \(error.description)")
            }
        }
        return intervals
    }

    /// A segment's results folder: report.json, segment.json and latency.hlog, read.
    static func part(_ directory: String) throws -> Part {
        let report = try RunReport.load(path: ReportWriter.path(in: directory, ReportWriter.jsonName))
        let segment = try SegmentFile.load(directory: directory)
        let logPath = ReportWriter.path(in: directory, ReportWriter.hlogName)
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else {
            throw ReportError("\(logPath): cannot read the file")
        }
        return Part(directory: directory, report: report, segment: segment,
                    intervals: try Self.intervals(inLog: text, path: logPath))
    }

    func run(console: Console) -> ExitCode {
        var parts: [Part] = []
        for directory in directories {
            do {
                parts.append(try Self.part(directory))
            } catch {
                console.error("fleetbench merge: \(error)")
                return .usage
            }
        }
        if let refusal = Self.refusal(parts) {
            console.error("fleetbench merge: \(refusal)")
            return .usage
        }
        let merged: RunReport
        do {
            merged = try Self.merge(parts)
        } catch {
            console.error("fleetbench merge: \(error.description)")
            return .usage
        }
        let directory = ResultsFolder.absolute(outputDirectory)
        var written = true
        do {
            try ResultsFolder.write(merged, to: directory)
        } catch {
            console.error("fleetbench merge: cannot write results to \(directory): \(error)")
            written = false
        }
        console.print(RunSummary.render(merged, directory: written ? directory : nil))
        if !written || merged.run.interrupted { return .runtimeFailure }
        // The same verdict as `run`: thresholds, and clients that never connected or a broker that granted less than
        // asked unless a threshold on connections.* or downgrades.* says what the scenario accepts.
        return merged.passed ? .success : .thresholdsFailed
    }

    /// Why these folders cannot be merged (nil: they can): different runs, seeds, scenarios or segment counts,
    /// a segment twice, a segment missing.
    static func refusal(_ parts: [Part]) -> String? {
        guard let first = parts.first else { return "no folders to merge" }
        func identity(_ part: Part) -> String { "\(part.directory) (segment \(part.segment.index)/\(part.segment.count))" }
        for part in parts.dropFirst() {
            if part.segment.runID != first.segment.runID {
                return "\(first.directory) is run \(Self.hex(first.segment.runID)) but \(part.directory) is run "
                    + "\(Self.hex(part.segment.runID)): only segments of one run can be merged"
            }
            if part.segment.scenarioSHA256 != first.segment.scenarioSHA256 || part.segment.seed != first.segment.seed {
                return "\(first.directory) and \(part.directory) ran different scenarios or seeds: only segments of one run can be merged"
            }
            if part.segment.count != first.segment.count {
                return "\(identity(first)) and \(identity(part)) split the run differently: only segments of one split can be merged"
            }
        }
        var byIndex: [Int: String] = [:]
        for part in parts {
            if let other = byIndex[part.segment.index] {
                return "\(other) and \(part.directory) are both segment \(part.segment.index)/\(part.segment.count): each segment must be given once"
            }
            byIndex[part.segment.index] = part.directory
        }
        let missing = (0..<first.segment.count).filter { byIndex[$0] == nil }
        if !missing.isEmpty {
            let names = missing.map { "\($0)/\(first.segment.count)" }.joined(separator: ", ")
            return "segment\(missing.count == 1 ? "" : "s") \(names) missing: give the results folder of every segment of the run"
        }
        return nil
    }

    static func hex(_ value: UInt64) -> String { String(format: "%016llx", value) }

    /// The merged report. Parts are taken in segment order.
    static func merge(_ unordered: [Part]) throws(ReportError) -> RunReport {
        let parts = unordered.sorted { $0.segment.index < $1.segment.index }
        var report = parts[0].report
        report.passed = true
        let base = parts.map(\.report.run.startedAt).min() ?? report.run.startedAt
        report.run.startedAt = base
        report.run.durationSeconds = parts.map(\.report.run.durationSeconds).max() ?? 0
        report.run.publishSeconds = parts.map(\.report.run.publishSeconds).max() ?? 0
        report.run.interrupted = parts.contains { $0.report.run.interrupted }
        report.segments = SegmentInfo(index: nil, count: parts[0].segment.count, deliveryFinal: true)
        report.connections = ConnectionSummary()
        report.messages = MessageSummary()
        report.ackTimeouts = AckTimeoutCounts()
        report.downgrades = DowngradeSummary()
        report.latency = LatencyRecorder()
        report.requests = RequestSummary()
        report.offline = OfflineCounts()
        var generator = parts[0].report.generator
        generator.cpuSeconds = 0
        generator.peakRSSBytes = 0
        generator.lanes = 0
        generator.droppedSlots = 0
        generator.abandonedPublishes = 0
        generator.unsentAtEnd = 0
        generator.foreignMessages = 0
        generator.lowWatermarkFallbacks = 0
        generator.lowWatermarkRearms = 0
        generator.receiveCoalescingPauses = 0
        generator.receiveBatchingPauses = 0
        generator.saturationReasons = []
        generator.drainSeconds = 0
        generator.sourceAddresses = []
        for part in parts {
            let other = part.report
            report.connections.add(other.connections)
            report.messages.add(other.messages)
            report.ackTimeouts.add(other.ackTimeouts)
            report.downgrades.add(other.downgrades)
            report.latency.add(other.latency)
            report.requests.add(other.requests)
            report.offline.add(other.offline)
            generator.cpuSeconds += other.generator.cpuSeconds
            generator.peakRSSBytes &+= other.generator.peakRSSBytes
            generator.lanes += other.generator.lanes
            generator.droppedSlots &+= other.generator.droppedSlots
            generator.abandonedPublishes &+= other.generator.abandonedPublishes
            generator.unsentAtEnd &+= other.generator.unsentAtEnd
            generator.foreignMessages &+= other.generator.foreignMessages
            generator.lowWatermarkFallbacks &+= other.generator.lowWatermarkFallbacks
            generator.lowWatermarkRearms &+= other.generator.lowWatermarkRearms
            generator.receiveCoalescingPauses &+= other.generator.receiveCoalescingPauses
            generator.receiveBatchingPauses &+= other.generator.receiveBatchingPauses
            generator.drainSeconds = max(generator.drainSeconds, other.generator.drainSeconds)
            for reason in other.generator.saturationReasons {
                generator.saturationReasons.append("segment \(part.segment.index): \(reason)")
            }
            for address in other.generator.sourceAddresses where !generator.sourceAddresses.contains(address) {
                generator.sourceAddresses.append(address)
            }
            if other.generator.sendPath != generator.sendPath { generator.sendPath = "io_uring+send" }
            if other.generator.receivePath != generator.receivePath { generator.receivePath = "io_uring+epoll" }
        }
        generator.saturated = !generator.saturationReasons.isEmpty
        report.generator = generator

        // Delivery, settled across segments.
        let fleetCount = parts[0].segment.delivery.local.count
        var delivery = Array(repeating: PerQoS(repeating: DeliveryCounts()), count: fleetCount)
        var published: [Int: UInt64] = [:]
        for part in parts {
            guard part.segment.delivery.local.count == fleetCount else {
                throw ReportError("\(part.directory): \(part.segment.delivery.local.count) fleets, \(parts[0].directory): \(fleetCount)")
            }
            for (fleet, perQoS) in part.segment.delivery.local.enumerated() { delivery[fleet].add(perQoS) }
            for (stream, count) in part.segment.delivery.published {
                if published[stream] != nil {
                    throw ReportError("stream \(stream) was published in two segments (\(part.directory) among them)")
                }
                published[stream] = count
            }
        }
        var unverified: UInt64 = 0
        for part in parts {
            for pair in part.segment.delivery.remotePairs where pair.fleet < fleetCount && pair.qos < 3 {
                let arrived = pair.counts
                let expected = pair.whole ? published[pair.stream] ?? 0 : arrived.unique &+ arrived.untracked
                if !pair.whole { unverified &+= 1 }
                delivery[pair.fleet][pair.qos].add(DeliveryCounts(
                    expected: expected, received: arrived.received, unique: arrived.unique,
                    duplicated: arrived.duplicated, reordered: arrived.reordered, untracked: arrived.untracked))
            }
        }
        // Share groups: one subscriber across every segment; every published message expected once.
        var groups: [Int: (fleet: Int, qos: Int, stream: Int, tracker: DeliveryTracker)] = [:]
        var groupOrder: [Int] = []
        for part in parts {
            for entry in part.segment.delivery.groupStreams {
                let key = entry.group << 32 | entry.stream
                if groups[key] == nil {
                    groups[key] = (entry.fleet, entry.qos, entry.stream, DeliveryTracker())
                    groupOrder.append(key)
                }
                groups[key]!.tracker.merge(stream: 0, ranges: entry.ranges, received: entry.counts.received,
                                           duplicated: entry.counts.duplicated, reordered: entry.counts.reordered,
                                           untracked: entry.counts.untracked)
            }
        }
        for key in groupOrder {
            let group = groups[key]!
            guard group.fleet < fleetCount, group.qos < 3 else { continue }
            delivery[group.fleet][group.qos].add(group.tracker.counts(stream: 0, expected: published[group.stream] ?? 0))
        }
        var total = PerQoS(repeating: DeliveryCounts())
        for fleet in delivery { total.add(fleet) }
        report.delivery = DeliveryByQoS(total, foreign: parts.reduce(0) { $0 &+ $1.report.delivery.foreign },
                                        retainedOnSubscribe: parts.reduce(0) { $0 &+ $1.report.delivery.retainedOnSubscribe })
        report.segments?.unverifiedPairs = unverified

        // Fleets (reports list them when the scenario has more than one).
        report.fleets = parts[0].report.fleets.enumerated().map { position, first in
            var fleet = first
            fleet.connections = ConnectionSummary()
            fleet.messages = MessageSummary()
            fleet.ackTimeouts = AckTimeoutCounts()
            fleet.latency = LatencyRecorder()
            fleet.requests = RequestSummary()
            fleet.offline = OfflineCounts()
            fleet.downgrades = DowngradeSummary()
            fleet.unsentAtEnd = 0
            fleet.droppedSlots = 0
            fleet.abandonedPublishes = 0
            var foreign: UInt64 = 0
            var retained: UInt64 = 0
            for part in parts {
                guard let other = part.report.fleets.first(where: { $0.name == first.name }) else { continue }
                fleet.connections.add(other.connections)
                fleet.messages.add(other.messages)
                fleet.ackTimeouts.add(other.ackTimeouts)
                fleet.latency.add(other.latency)
                fleet.requests.add(other.requests)
                fleet.offline.add(other.offline)
                fleet.downgrades.add(other.downgrades)
                fleet.unsentAtEnd &+= other.unsentAtEnd
                fleet.droppedSlots &+= other.droppedSlots
                fleet.abandonedPublishes &+= other.abandonedPublishes
                foreign &+= other.delivery.foreign
                retained &+= other.delivery.retainedOnSubscribe
            }
            if position < fleetCount {
                fleet.delivery = DeliveryByQoS(delivery[position], foreign: foreign, retainedOnSubscribe: retained)
            }
            return fleet
        }

        // Network conditions: each segment ran its share of every profile's vehicles. Entries are per profile of
        // each fleet in the scenario's order (a fleet may have two profiles of the same name), so they pair up by
        // position.
        report.network = parts[0].report.network.enumerated().map { position, first in
            var merged = first
            merged.clients = 0
            merged.stalls = 0
            merged.drops = 0
            merged.outages = 0
            merged.outageSeconds = 0
            merged.heldForBandwidth = 0
            merged.readPauses = 0
            for part in parts where position < part.report.network.count {
                let other = part.report.network[position]
                if other.fleet == first.fleet && other.profile == first.profile { merged.add(other) }
            }
            return merged
        }

        // Intervals on the common time base: each segment's seconds from its own start moved to the earliest
        // start, and intervals of the same second added.
        var bySecond: [Int: [(kind: LatencyKind, origin: LatencyOrigin, histogram: HDRHistogram)]] = [:]
        for part in parts {
            let offset = part.report.run.startedAt.timeIntervalSince(base)
            for interval in part.intervals {
                let tag = interval.tag
                let kind: LatencyKind
                let origin: LatencyOrigin
                if tag.hasSuffix("_from_sent"), let sentKind = LatencyKind(reportName: String(tag.dropLast("_from_sent".count))) {
                    kind = sentKind
                    origin = .sent
                } else if let intendedKind = LatencyKind(reportName: tag) {
                    kind = intendedKind
                    // A kind written without a `_from_sent` partner: the origin report.json used for it.
                    origin = part.report.latency.histogram(intendedKind, from: .intended).totalCount > 0 ? .intended : .sent
                } else {
                    continue
                }
                let second = Int((interval.startSeconds + offset).rounded())
                bySecond[second, default: []].append((kind, origin, interval.histogram))
            }
        }
        // One second at a time: added at full range, kept compacted.
        var seconds: [Int: LatencyRecorder] = [:]
        for (second, histograms) in bySecond {
            var recorder = LatencyRecorder()
            for entry in histograms { recorder.add(entry.histogram, kind: entry.kind, origin: entry.origin) }
            seconds[second] = recorder.compacted()
        }
        report.latencyIntervals = seconds.keys.sorted().map { second in
            ReportLatencyInterval(startSeconds: Double(second), lengthSeconds: 1, latencies: seconds[second]!)
        }

        // The timeline, summed second by second on the same base.
        var points: [Int: TimelinePoint] = [:]
        for part in parts {
            let offset = part.report.run.startedAt.timeIntervalSince(base)
            for point in part.report.timeline {
                let second = Int((point.t + offset).rounded())
                var sum = points[second] ?? TimelinePoint(t: Double(second), connected: 0, published: 0, received: 0)
                sum.connected &+= point.connected
                sum.published &+= point.published
                sum.received &+= point.received
                sum.ackTimeouts &+= point.ackTimeouts
                points[second] = sum
            }
        }
        report.timeline = points.keys.sorted().map { second in
            var point = points[second]!
            let endToEnd = seconds[second - 1]?.histogram(.endToEnd, from: .intended) ?? HDRHistogram()
            if endToEnd.totalCount > 0 {
                point.endToEndP50Ms = RunReport.milliseconds(endToEnd.valueAtPercentile(50))
                point.endToEndP99Ms = RunReport.milliseconds(endToEnd.valueAtPercentile(99))
            } else {
                point.endToEndP50Ms = nil
                point.endToEndP99Ms = nil
            }
            return point
        }

        // Thresholds on the merged result, read from it as `run` reads its own report.
        let metrics = ReportMetrics(report: report)
        report.thresholds = parts[0].report.thresholds.map { earlier in
            guard case .success(let threshold) = Threshold.parse(earlier.expression) else {
                return ThresholdResult(expression: earlier.expression, metric: earlier.metric, observed: nil,
                                       limit: earlier.limit, passed: false)
            }
            let outcome = threshold.evaluate(metrics.value)
            return ThresholdResult(expression: threshold.source, metric: threshold.metric, observed: outcome.observed,
                                   limit: threshold.value, passed: outcome.passed)
        }
        let connectionsAccepted = report.thresholds.contains { $0.metric.hasPrefix("connections.") }
        let downgradesAccepted = report.thresholds.contains { $0.metric.hasPrefix("downgrades.") }
        let unreachable = report.connections.succeeded == 0 && report.connections.attempted > 0
        report.passed = !report.run.interrupted && !unreachable
            && (report.connections.neverConnected == 0 || connectionsAccepted)
            && (report.downgrades.total == 0 || downgradesAccepted)
            && report.thresholds.allSatisfy(\.passed)
        return report
    }
}
