import FleetJSON
import Foundation

/// Whether two runs can be compared line by line: what differs between the runs themselves, said before any
/// metric, because a change of duration, broker, version or settings explains a change of results as well as a
/// regression would.
extension ReportComparison {
    /// Durations further apart than this share of the longer one differ (two runs of one scenario end within
    /// milliseconds of each other; an interrupted or --duration run does not).
    static let durationTolerance = 0.02

    static func runDifferences(_ baseline: RunReport, _ candidate: RunReport) -> ([Difference], [String]) {
        var differences: [Difference] = []
        var agreements: [String] = []
        func check(_ what: String, _ base: String, _ cand: String, agreement: String? = nil) {
            if base == cand {
                agreements.append(agreement ?? "\(what) \(base)")
            } else {
                differences.append(Difference(what: what, baseline: base, candidate: cand))
            }
        }

        check("scenario", baseline.scenario.name, candidate.scenario.name)
        check("scenario file sha256", String(baseline.scenario.sha256.prefix(12)), String(candidate.scenario.sha256.prefix(12)),
              agreement: "file sha256 \(baseline.scenario.sha256.prefix(12))")
        // The scenario as each run used it (after --set, --duration, --scale): its differing values are the
        // overrides, and the edits of the file when its hash differs.
        if let base = baseline.scenario.redacted, let cand = candidate.scenario.redacted {
            var settings: [Difference] = []
            settingDifferences(base, cand, path: "", into: &settings)
            if settings.isEmpty { agreements.append("same settings and overrides") }
            differences += settings
        }
        check("brokers", brokers(baseline), brokers(candidate))
        check("fleetbench", baseline.toolVersion, candidate.toolVersion)
        let longer = max(baseline.run.durationSeconds, candidate.run.durationSeconds)
        if abs(baseline.run.durationSeconds - candidate.run.durationSeconds) > longer * durationTolerance {
            differences.append(Difference(what: "duration", baseline: seconds(baseline.run.durationSeconds),
                                          candidate: seconds(candidate.run.durationSeconds)))
        } else {
            agreements.append("duration \(seconds(baseline.run.durationSeconds))")
        }
        check("interrupted", baseline.run.interrupted ? "yes" : "no", candidate.run.interrupted ? "yes" : "no",
              agreement: baseline.run.interrupted ? "both interrupted" : "both finished")
        check("seed", String(baseline.run.seed), String(candidate.run.seed))
        // A generator that could not keep its own schedule (on a machine busy with something else, say) measured
        // its own lateness along with the broker's: its latencies do not compare with a run that kept time.
        if baseline.generator.saturated == candidate.generator.saturated {
            // Both saturated: alike, but neither a clean measurement (`caution` says so).
            agreements.append(baseline.generator.saturated ? "both generators saturated" : "generator not saturated")
        } else {
            differences.append(Difference(what: "generator saturated", baseline: saturation(baseline.generator),
                                          candidate: saturation(candidate.generator)))
        }
        check("machine", machine(baseline.environment), machine(candidate.environment))
        return (differences, agreements)
    }

    static func brokers(_ report: RunReport) -> String {
        // The embedded mosquitto listens on a fresh port each run: the same broker all the same.
        if report.brokerEmbedded { return "embedded mosquitto" }
        return report.brokers.isEmpty ? "(not recorded)" : report.brokers.joined(separator: ", ")
    }

    static func machine(_ environment: EnvironmentInfo) -> String {
        if environment.hostname.isEmpty && environment.cores == 0 { return "(not recorded)" }
        return "\(environment.hostname), \(environment.cores) core\(environment.cores == 1 ? "" : "s")"
    }

    static func saturation(_ generator: GeneratorHealth) -> String {
        generator.saturated ? "yes (" + generator.saturationReasons.joined(separator: "; ") + ")" : "no"
    }

    static func seconds(_ value: Double) -> String { MetricFormat.decimal(value, places: 1) + " s" }

    /// Every leaf that differs between two scenario trees, as a `--set` path (array elements by their name when
    /// they have one: `fleets.sensors.count`).
    static func settingDifferences(_ base: JSONValue?, _ cand: JSONValue?, path: String, into differences: inout [Difference]) {
        func child(_ key: String) -> String { path.isEmpty ? key : path + "." + key }
        switch (base, cand) {
        case (.object(let left)?, .object(let right)?):
            var keys = left.map(\.key)
            for member in right where !keys.contains(member.key) { keys.append(member.key) }
            for key in keys {
                settingDifferences(left.first { $0.key == key }?.value, right.first { $0.key == key }?.value,
                                   path: child(key), into: &differences)
            }
        case (.array(let left)?, .array(let right)?) where left.count == right.count:
            for (index, pair) in zip(left, right).enumerated() {
                let name = pair.0["name"]?.stringValue
                let key = name != nil && name == pair.1["name"]?.stringValue ? name! : String(index)
                settingDifferences(pair.0, pair.1, path: child(key), into: &differences)
            }
        default:
            guard base != cand else { return }
            differences.append(Difference(what: "setting " + (path.isEmpty ? "scenario" : path),
                                          baseline: text(base), candidate: text(cand)))
        }
    }

    static func text(_ value: JSONValue?) -> String {
        guard let value else { return "(unset)" }
        let text = JSONWriter.string(from: value, style: .compact)
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }

    /// A warning when both runs' generators were saturated: alike, but what they measured is partly this machine.
    public var caution: String? {
        guard differences.allSatisfy({ $0.what != "generator saturated" }), baselineSaturated else { return nil }
        return "Caution: both runs' generators were saturated (they could not keep their own schedule): their "
            + "latencies measure this machine's load as well as the broker."
    }

    /// The like-for-like verdict in one line (the differences follow it when there are any).
    public var likeForLikeLine: String {
        if isLikeForLike { return "Like for like: " + agreements.joined(separator: ", ") + "." }
        let count = differences.count
        return "NOT like for like: \(count) difference\(count == 1 ? "" : "s") between the runs, which may explain "
            + "changes below as well as the brokers or fleetbench would:"
    }
}
