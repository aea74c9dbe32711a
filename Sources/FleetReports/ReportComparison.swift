import FleetJSON
import FleetMetrics
import Foundation
import MQTTCodec

/// `fleetbench compare BASELINE CANDIDATE`: what got better or worse between two runs, and first whether the two
/// runs can be compared at all (`differences`, `isLikeForLike`).
///
/// Metrics compared: latency statistics of every kind (mean, p50, p90, p99, p999, max, from the headline origin;
/// lower is better), publish and receive rates (higher is better), losses and duplicates per QoS, ack timeouts,
/// connect failures, reconnects and dropped schedule slots (lower is better). A change against the metric's
/// direction is `worse` while within the tolerance and a `regression` beyond it; a rise from zero in a count is a
/// regression whatever the tolerance (there is no percentage of zero).
///
/// A latency row must pass three more tests before it is called a regression, because a latency statistic is an
/// estimate from samples, not a count:
/// - enough samples: percentile p needs 1/(1-p) samples in each run (p50 2, p90 10, p99 100, p999 1,000), else
///   there is no sample beyond it and the "percentile" is the largest value; the row says `too few samples`.
/// - the latency floor (default 1 ms): a worsening by at most the floor is never more than `worse`. The engine
///   times to about 1 ms (its timing wheel ticks every 1 ms, and receive coalescing may read up to 1 ms late).
/// - significance: how many candidate samples lie above the baseline's value, against how many baseline samples
///   do (Fisher's exact test, one-sided; for the mean, Welch's test). Two runs of the same scenario against the
///   same broker differ by chance, most of all in a max or a high percentile: a worsening that chance explains
///   (p at or above 0.05 shared among the latency rows judged, Bonferroni) is `worse`, not a regression.
public struct ReportComparison: Sendable {
    public enum Direction: String, Sendable {
        case lowerIsBetter = "lower_is_better"
        case higherIsBetter = "higher_is_better"
    }

    public enum Verdict: String, Sendable {
        case better, same, worse, regression
        /// One report has the metric and the other does not (for example a latency kind without samples).
        case incomparable = "not_comparable"
        /// A statistic that a run has too few samples to estimate (p99 of 40 samples).
        case tooFewSamples = "too_few_samples"
    }

    public struct Row: Equatable, Sendable {
        public var metric: String
        public var unit: String
        public var direction: Direction
        public var baseline: Double?
        public var candidate: Double?
        /// (candidate - baseline) / baseline × 100; +∞ for a rise from zero; nil when either side is missing.
        public var changePercent: Double?
        public var verdict: Verdict
        /// Latency rows: the samples behind the statistic in each run.
        public var baselineSamples: UInt64? = nil
        public var candidateSamples: UInt64? = nil
        /// Percentile rows: the samples each run needs for the statistic to exist.
        public var minimumSamples: UInt64? = nil
        /// Latency rows worse beyond the tolerance and the floor: the chance of a worsening at least this large
        /// between two runs of one distribution (one-sided).
        public var pValue: Double? = nil
        /// Shown by default (`false`: only with `--all`): latency p50, p99 and max, every count and rate.
        public var isKey: Bool = true
    }

    /// What differs between the two runs themselves: scenario, settings, brokers, version, duration, seed.
    public struct Difference: Equatable, Sendable {
        public var what: String
        public var baseline: String
        public var candidate: String
    }

    /// In percent (10 means 10 %).
    public let tolerancePercent: Double
    /// A latency worsening by at most this many milliseconds is not a regression; 0 disables the floor.
    public let latencyFloorMilliseconds: Double
    /// The engine's timing resolution: its timing wheel ticks every 1 ms.
    public static let defaultLatencyFloorMilliseconds = 1.0
    /// The chance of calling noise a regression in any latency row of a comparison of two like runs.
    public static let familySignificance = 0.05
    public let rows: [Row]
    public let baselineName: String
    public let candidateName: String
    /// Empty when the runs are like for like.
    public let differences: [Difference]
    /// The properties checked and found equal, for the like-for-like line (`scenario 1a2b3c4d5e6f`, ...).
    public let agreements: [String]
    /// Whether the baseline run's generator was saturated.
    let baselineSaturated: Bool

    public var isLikeForLike: Bool { differences.isEmpty }
    public var hasRegression: Bool { rows.contains { $0.verdict == .regression } }
    public var regressions: [Row] { rows.filter { $0.verdict == .regression } }

    /// The statistics of a latency kind, in report order; `isKey` ones are shown by default.
    static let latencyStatistics: [(name: String, percentile: Double?, isKey: Bool)] = [
        ("mean", nil, false), ("p50", 50, true), ("p90", 90, false), ("p99", 99, true), ("p999", 99.9, false),
        ("max", nil, true),
    ]

    /// Samples a statistic needs in each run: a percentile 1 / (1 - p), so that a sample lies beyond it; a mean
    /// two, for a spread to judge it by; a max one.
    public static func minimumSamples(statistic: String, percentile: Double?) -> UInt64 {
        if let percentile { return minimumSamples(percentile: percentile) }
        return statistic == "mean" ? 2 : 1
    }

    /// `tolerance` in percent; `latencyFloorMilliseconds` applies to the `latency.*` rows only.
    public init(
        baseline: RunReport, candidate: RunReport, tolerance: Double = 10,
        latencyFloorMilliseconds: Double = defaultLatencyFloorMilliseconds
    ) {
        tolerancePercent = tolerance
        self.latencyFloorMilliseconds = latencyFloorMilliseconds
        baselineName = baseline.scenario.name + " @ " + RunReport.rfc3339(baseline.run.startedAt)
        candidateName = candidate.scenario.name + " @ " + RunReport.rfc3339(candidate.run.startedAt)
        (differences, agreements) = Self.runDifferences(baseline, candidate)
        baselineSaturated = baseline.generator.saturated
        var rows: [Row] = []
        func add(_ metric: String, _ unit: String, _ direction: Direction, _ base: Double?, _ cand: Double?) {
            assert(MetricCatalog.metric(metric) != nil, "compare row \(metric) is not in MetricCatalog")
            rows.append(Self.row(metric, unit, direction, base, cand, tolerance: tolerance))
        }

        // Latency, from the headline origin of each kind.
        let kinds = LatencyKind.allCases.filter {
            baseline.latency.kindsWithSamples.contains($0) || candidate.latency.kindsWithSamples.contains($0)
        }
        let histograms = kinds.map { (Self.headline(baseline.latency, $0), Self.headline(candidate.latency, $0)) }
        // Bonferroni: the rows that could be judged share the family's chance of a false regression.
        let judged = histograms.filter { $0.0 != nil && $0.1 != nil }.count * Self.latencyStatistics.count
        let significance = Self.familySignificance / Double(max(judged, 1))
        for (kind, pair) in zip(kinds, histograms) {
            // Named as thresholds name it (`latency.connack`, not report.json's `connect`).
            let origin: LatencyOrigin = baseline.latency.histogram(kind, from: .intended).totalCount > 0
                || candidate.latency.histogram(kind, from: .intended).totalCount > 0 ? .intended : .sent
            for statistic in Self.latencyStatistics {
                let metric = MetricCatalog.latencyPath(kind: kind, origin: origin, statistic: statistic.name)
                assert(MetricCatalog.metric(metric) != nil, "compare row \(metric) is not in MetricCatalog")
                rows.append(Self.latencyRow(
                    metric, statistic: statistic.name,
                    percentile: statistic.percentile, baseline: pair.0, candidate: pair.1, tolerance: tolerance,
                    floor: latencyFloorMilliseconds, significance: significance, isKey: statistic.isKey))
            }
        }

        // Rates.
        add("rates.published", "msg/s", .higherIsBetter,
            Self.rate(baseline.messages.published.total, baseline.run.rateSeconds),
            Self.rate(candidate.messages.published.total, candidate.run.rateSeconds))
        add("rates.received", "msg/s", .higherIsBetter,
            Self.rate(baseline.messages.received.total, baseline.run.rateSeconds),
            Self.rate(candidate.messages.received.total, candidate.run.rateSeconds))

        // Losses and duplicates, for QoS levels either run used.
        for qos in MQTTQoS.allCases where baseline.delivery[qos].expected > 0 || candidate.delivery[qos].expected > 0 {
            let base = baseline.delivery[qos]
            let cand = candidate.delivery[qos]
            add("delivery.qos\(qos.rawValue).lost", "messages", .lowerIsBetter, Double(base.lost), Double(cand.lost))
            add("delivery.qos\(qos.rawValue).loss_ratio", "%", .lowerIsBetter, Self.lossPercent(base), Self.lossPercent(cand))
            add("delivery.qos\(qos.rawValue).duplicated", "messages", .lowerIsBetter,
                Double(base.duplicated), Double(cand.duplicated))
        }

        // Ack timeouts: every kind either run had, and the total.
        for kind in AckKind.allCases where baseline.ackTimeouts[kind] > 0 || candidate.ackTimeouts[kind] > 0 {
            add("ack_timeouts.\(kind.reportName)", "timeouts", .lowerIsBetter,
                Double(baseline.ackTimeouts[kind]), Double(candidate.ackTimeouts[kind]))
        }
        add("ack_timeouts.total", "timeouts", .lowerIsBetter,
            Double(baseline.ackTimeouts.total), Double(candidate.ackTimeouts.total))

        // Failures.
        add("connections.failed", "connections", .lowerIsBetter,
            Double(baseline.connections.failed), Double(candidate.connections.failed))
        add("connections.reconnects", "connections", .lowerIsBetter,
            Double(baseline.connections.reconnects), Double(candidate.connections.reconnects))
        add("generator.dropped", "slots", .lowerIsBetter,
            Double(baseline.generator.droppedSlots), Double(candidate.generator.droppedSlots))

        // Request/response, when either run sent requests.
        if baseline.requests.sent > 0 || candidate.requests.sent > 0 {
            add("requests.answered", "responses", .higherIsBetter,
                Double(baseline.requests.answered), Double(candidate.requests.answered))
            add("requests.timed_out", "requests", .lowerIsBetter,
                Double(baseline.requests.timedOut), Double(candidate.requests.timedOut))
        }
        self.rows = rows
    }

    /// The verdict of one metric. A worsening whose absolute difference is at most `absoluteFloor` (in the
    /// metric's unit; 0 for none) is `worse` at most, whatever its percentage, even a rise from zero.
    public static func row(
        _ metric: String, _ unit: String, _ direction: Direction, _ baseline: Double?, _ candidate: Double?,
        tolerance: Double, absoluteFloor: Double = 0
    ) -> Row {
        guard let baseline, let candidate else {
            return Row(metric: metric, unit: unit, direction: direction, baseline: baseline, candidate: candidate,
                       changePercent: nil, verdict: .incomparable)
        }
        let change: Double
        if baseline == candidate {
            change = 0
        } else if baseline == 0 {
            change = candidate > 0 ? .infinity : -.infinity
        } else {
            change = (candidate - baseline) / abs(baseline) * 100
        }
        let worseChange = direction == .lowerIsBetter ? change : -change
        // Report values are whole microseconds written in ms; their difference carries binary rounding
        // (8.999 - 7.999 = 1.0000000000000009), so a difference exactly at the floor is compared with a margin far
        // below a microsecond. With no floor there is no margin: today's verdicts exactly.
        let withinFloor = absoluteFloor > 0 && abs(candidate - baseline) <= absoluteFloor + 1e-9
        let verdict: Verdict
        if change == 0 {
            verdict = .same
        } else if worseChange < 0 {
            verdict = .better
        } else if worseChange > tolerance && !withinFloor {
            verdict = .regression
        } else {
            verdict = .worse
        }
        return Row(metric: metric, unit: unit, direction: direction, baseline: baseline, candidate: candidate,
                   changePercent: change, verdict: verdict)
    }

    /// One latency statistic (in ms) of two headline histograms: enough samples, then tolerance and floor, then
    /// significance at `significance` (one-sided).
    static func latencyRow(
        _ metric: String, statistic: String, percentile: Double?, baseline: HDRHistogram?, candidate: HDRHistogram?,
        tolerance: Double, floor: Double, significance: Double, isKey: Bool
    ) -> Row {
        let base = baseline.map(LatencySummary.init)
        let cand = candidate.map(LatencySummary.init)
        var row = Self.row(metric, "ms", .lowerIsBetter, base?.value(statistic), cand?.value(statistic),
                           tolerance: tolerance, absoluteFloor: floor)
        row.isKey = isKey
        row.baselineSamples = baseline?.totalCount
        row.candidateSamples = candidate?.totalCount
        guard let baseline, let candidate else { return row }
        let needed = minimumSamples(statistic: statistic, percentile: percentile)
        if needed > 1 { row.minimumSamples = needed }
        if baseline.totalCount < needed || candidate.totalCount < needed {
            row.verdict = .tooFewSamples
            row.changePercent = nil
            return row
        }
        guard row.verdict == .regression else { return row }
        let p: Double
        if statistic == "mean" {
            p = welchWorse(baseline: baseline, candidate: candidate)
        } else {
            // Above the baseline's value: for max nothing of the baseline, for p99 its top 1 %.
            let threshold = percentile.map { baseline.valueAtPercentile($0) } ?? baseline.max
            p = fisherWorse(
                baselineAbove: count(of: baseline, above: threshold), baselineTotal: baseline.totalCount,
                candidateAbove: count(of: candidate, above: threshold), candidateTotal: candidate.totalCount)
        }
        row.pValue = p
        if p >= significance { row.verdict = .worse }
        return row
    }

    /// Samples a percentile needs for at least one sample to lie beyond it: 1 / (1 - p).
    public static func minimumSamples(percentile: Double) -> UInt64 {
        // Rounded to the nearest: 100 / (100 - 99.9) is 1000.0000000000009 in binary.
        max(1, UInt64((100 / (100 - percentile)).rounded()))
    }

    /// Samples whose whole bucket lies above `value` (µs).
    static func count(of histogram: HDRHistogram, above value: UInt64) -> UInt64 {
        histogram.recordedValues().reduce(0) { $1.lowestEquivalentValue > value ? $0 + $1.count : $0 }
    }

    /// Fisher's exact test, one-sided: the chance that, of all samples above the threshold, the candidate holds
    /// `candidateAbove` or more when both runs draw from one distribution (hypergeometric upper tail).
    public static func fisherWorse(
        baselineAbove: UInt64, baselineTotal: UInt64, candidateAbove: UInt64, candidateTotal: UInt64
    ) -> Double {
        let total = Double(baselineTotal + candidateTotal)
        let above = Double(baselineAbove + candidateAbove)
        let drawn = Double(candidateTotal)
        func logChoose(_ n: Double, _ k: Double) -> Double { lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) }
        let logDenominator = logChoose(total, drawn)
        let highest = min(above, drawn)
        var x = Double(candidateAbove)
        var sum = 0.0
        while x <= highest {
            let term = exp(logChoose(above, x) + logChoose(total - above, drawn - x) - logDenominator)
            sum += term
            // Past the mode the terms fall geometrically: stop once they no longer count.
            if term < sum * 1e-12 && x > above * drawn / total { break }
            x += 1
        }
        return min(1, sum)
    }

    /// Welch's test on the means, one-sided (normal approximation): the chance of a candidate mean this much
    /// above the baseline's by chance.
    static func welchWorse(baseline: HDRHistogram, candidate: HDRHistogram) -> Double {
        let nb = Double(baseline.totalCount)
        let nc = Double(candidate.totalCount)
        guard nb > 1, nc > 1 else { return 1 }
        let error = (pow(baseline.standardDeviation, 2) / nb + pow(candidate.standardDeviation, 2) / nc).squareRoot()
        guard error > 0 else { return candidate.mean > baseline.mean ? 0 : 1 }
        let z = (candidate.mean - baseline.mean) / error
        return 0.5 * erfc(z / 2.0.squareRoot())
    }

    /// Parses a tolerance as given on the command line: `10%`, `10` (percent) or `2.5%`. Nil when not a
    /// non-negative finite number.
    public static func parseTolerance(_ text: String) -> Double? {
        let trimmed = text.hasSuffix("%") ? String(text.dropLast()) : text
        guard let value = Double(trimmed.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0 else {
            return nil
        }
        return value
    }

    static func headline(_ latency: LatencyRecorder, _ kind: LatencyKind) -> HDRHistogram? {
        let intended = latency.histogram(kind, from: .intended)
        if intended.totalCount > 0 { return intended }
        let sent = latency.histogram(kind, from: .sent)
        return sent.totalCount > 0 ? sent : nil
    }

    static func rate(_ count: UInt64, _ seconds: Double) -> Double? {
        seconds > 0 ? (Double(count) / seconds * 1000).rounded() / 1000 : nil
    }

    static func lossPercent(_ counts: DeliveryCounts) -> Double? {
        counts.expected > 0 ? Double(counts.lost) / Double(counts.expected) * 100 : nil
    }
}
