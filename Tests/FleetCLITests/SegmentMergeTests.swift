import FleetBroker
import FleetReports
import Foundation
import Synchronization
import Testing

/// `fleetbench run --segment K/N` and `fleetbench merge`: N segments of one run, as N processes against one
/// mosquitto, merge into exactly the counts of one unsegmented run of the same scenario and seed.
@Suite("segments and merge", .serialized)
struct SegmentMergeTests {
    /// Uneven fleets (7, 2 and 3 clients: no N here divides them all), every QoS, a schedule of each kind, a
    /// subscriber of two wildcards in another fleet, per-car command topics published by another fleet, and a
    /// shared-subscription group. Every stream is bounded by `limit`, so the counts do not depend on timing.
    static let scenario = """
        {
          "duration": "3s",
          "seed": 7,
          "fleets": [
            {
              "name": "cars", "count": 7, "client_id": "car-{i}", "protocol": "5",
              "subscriptions": [{"filter": "cmd/{client_id}", "qos": 1}],
              "publish": [
                {"name": "t", "topic": "tel/{client_id}", "qos": 1, "limit": 5,
                 "schedule": {"type": "interval", "every": "100ms", "jitter": "20ms"},
                 "payload": {"json": {"id": "{client_id}", "seq": "{seq}", "v": "{rand:1..9}"}}},
                {"name": "s", "topic": "st/{client_id}", "qos": 0, "limit": 3,
                 "schedule": {"type": "poisson", "per_second": 10}, "payload": {"size": 40}},
                {"name": "e", "topic": "ev/{client_id}", "qos": 2, "limit": 2,
                 "schedule": {"type": "interval", "every": "200ms"}, "payload": {"size": 60}}
              ]
            },
            {
              "name": "ops", "count": 2, "client_id": "ops-{i}", "protocol": "5",
              "subscriptions": [{"filter": "tel/+", "qos": 1}, {"filter": "ev/+", "qos": 2}],
              "publish": [{"name": "c", "topic": "cmd/car-{i}", "qos": 1, "limit": 4,
                           "schedule": {"type": "interval", "every": "150ms"}, "payload": {"size": 30}}]
            },
            {
              "name": "backend", "count": 3, "client_id": "be-{i}", "protocol": "5",
              "subscriptions": [{"filter": "$share/g/st/+", "qos": 0}]
            }
          ],
          "thresholds": ["delivery.qos1.lost == 0", "messages.qos1.published == 43"]
        }
        """

    static func write(_ text: String, name: String) throws -> String {
        let path = RunEndToEndTests.temporaryDirectory(name) + ".json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Runs the N segments of one run as N processes at once and returns their folders.
    static func runSegments(_ count: Int, scenario: String, broker: String, runID: String, under root: String,
                            lateSegment: Int? = nil) throws -> [String] {
        let start = Date().addingTimeInterval(2)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let startAt = formatter.string(from: start)
        let folders = (0..<count).map { "\(root)/segment-\($0)-of-\(count)" }
        let outcomes = Mutex<[Int: RunEndToEndTests.Outcome]>([:])
        // One thread per segment: all N processes run at once, as the segments of a run must.
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread.detachNewThread {
                // A late segment starts 1.5 s after the common start (about 2 s from now): after the common
                // publishing start (1 s after it), before the common end (3 s after it).
                if index == lateSegment { Thread.sleep(forTimeInterval: 3.5) }
                let outcome = try? RunEndToEndTests.run([
                    "run", scenario, "--broker", broker, "--segment", "\(index)/\(count)", "--run-id", runID,
                    "--start-at", startAt, "--segment-grace", "1s", "--out", folders[index], "--quiet",
                ])
                outcomes.withLock { $0[index] = outcome }
                group.leave()
            }
        }
        group.wait()
        for index in 0..<count {
            let outcome = try #require(outcomes.withLock { $0[index] })
            #expect(outcome.status == 0, "segment \(index)/\(count): \(outcome.output) \(outcome.error)")
            if index == lateSegment {
                #expect(outcome.error.contains("after --start-at, after the segments' common publishing start: its "
                    + "subscribers' messages from other segments cannot be verified (merge counts them as unverified pairs)"))
            }
            if count > 1 {
                #expect(outcome.output.contains("segment       \(index)/\(count): delivery across segments is final only after `fleetbench merge`"))
            }
        }
        return folders
    }

    /// The figures that must not change with segmenting: per QoS published, expected, received, unique, lost,
    /// duplicated (delivery) and published, received (messages); per latency kind the histogram counts; per
    /// fleet the delivery figures.
    static func figures(_ report: [String: Any]) -> [String: Int] {
        var figures: [String: Int] = [:]
        let messages = report["messages"] as? [String: Any] ?? [:]
        let delivery = report["delivery"] as? [String: Any] ?? [:]
        for qos in ["qos0", "qos1", "qos2"] {
            let sent = messages[qos] as? [String: Any] ?? [:]
            for key in ["published", "received", "acked"] { if let value = sent[key] as? Int { figures["messages.\(qos).\(key)"] = value } }
            let counts = delivery[qos] as? [String: Any] ?? [:]
            for key in ["expected", "received", "unique", "lost", "duplicated", "missed_while_offline", "unexpected"] {
                figures["delivery.\(qos).\(key)"] = counts[key] as? Int ?? -1
            }
        }
        for (kind, value) in report["latency_ms"] as? [String: Any] ?? [:] {
            let entry = value as? [String: Any] ?? [:]
            figures["latency.\(kind).count"] = entry["count"] as? Int ?? -1
            if let sent = entry["from_sent"] as? [String: Any] { figures["latency.\(kind).from_sent.count"] = sent["count"] as? Int ?? -1 }
        }
        for fleet in report["fleets"] as? [[String: Any]] ?? [] {
            let name = fleet["name"] as? String ?? "?"
            let fleetDelivery = fleet["delivery"] as? [String: Any] ?? [:]
            for qos in ["qos0", "qos1", "qos2"] {
                let counts = fleetDelivery[qos] as? [String: Any] ?? [:]
                for key in ["expected", "received", "lost", "duplicated"] {
                    figures["fleets.\(name).delivery.\(qos).\(key)"] = counts[key] as? Int ?? -1
                }
            }
        }
        return figures
    }

    @Test("N = 1, 2, 3 segments of uneven fleets merge to exactly the single run's counts per QoS and latency kind")
    func segmentsMergeToTheSingleRun() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let root = RunEndToEndTests.temporaryDirectory("segments")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scenario = try Self.write(Self.scenario, name: "segments-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }

        let single = try RunEndToEndTests.run(["run", scenario, "--broker", broker.url, "--out", root + "/single", "--quiet"])
        #expect(single.status == 0, "\(single.output) \(single.error)")
        let expected = Self.figures(try RunEndToEndTests.report(in: root + "/single"))
        // The scenario's own arithmetic, so equality below cannot hold by both sides being empty.
        #expect(expected["messages.qos1.published"] == 7 * 5 + 2 * 4)
        #expect(expected["delivery.qos1.expected"] == 7 * 5 * 2 + 2 * 4)
        #expect(expected["delivery.qos0.expected"] == 7 * 3)
        #expect(expected["delivery.qos2.expected"] == 7 * 2 * 2)
        #expect(expected["latency.end_to_end.count"] == 7 * 5 * 2 + 2 * 4 + 7 * 3 + 7 * 2 * 2)

        for (count, runID) in [(1, "5e61"), (2, "5e62"), (3, "5e63")] {
            let folders = try Self.runSegments(count, scenario: scenario, broker: broker.url, runID: runID, under: root)
            let out = root + "/merged-\(count)"
            let merge = try RunEndToEndTests.run(["merge"] + folders.reversed() + ["--out", out])
            #expect(merge.status == 0, "N = \(count): \(merge.output) \(merge.error)")
            #expect(merge.output.contains("segments      \(count) merged\n"), "\(merge.output)")
            let merged = try RunEndToEndTests.report(in: out)
            let figures = Self.figures(merged)
            for key in Set(expected.keys).union(figures.keys).sorted() {
                #expect(figures[key] == expected[key], "N = \(count): \(key) merged \(figures[key] ?? -1), single run \(expected[key] ?? -1)")
            }
            let segments = try #require(merged["segments"] as? [String: Any])
            #expect(segments["count"] as? Int == count)
            #expect(segments["delivery_final"] as? Bool == true)
            #expect(segments["unverified_pairs"] as? Int == 0)
            #expect((merged["thresholds"] as? [[String: Any]])?.allSatisfy { $0["passed"] as? Bool == true } == true)
            for name in ["report.html", "junit.xml", "latency.hlog", "report.json"] {
                #expect(FileManager.default.fileExists(atPath: out + "/" + name), "\(name) missing")
            }
            // latency.hlog of the merge holds every sample of every segment's log, per kind, and as many as the
            // single run's log.
            let mergedLog = try HistogramLog(parsing: try String(contentsOfFile: out + "/latency.hlog", encoding: .utf8))
            let singleLog = try HistogramLog(parsing: try String(contentsOfFile: root + "/single/latency.hlog", encoding: .utf8))
            #expect(Set(mergedLog.tags) == Set(singleLog.tags))
            for tag in singleLog.tags {
                var segmentsTotal: UInt64 = 0
                for folder in folders {
                    let log = try HistogramLog(parsing: try String(contentsOfFile: folder + "/latency.hlog", encoding: .utf8))
                    segmentsTotal += log.merged(tag: tag).totalCount
                }
                #expect(mergedLog.merged(tag: tag).totalCount == singleLog.merged(tag: tag).totalCount, "N = \(count): \(tag)")
                #expect(mergedLog.merged(tag: tag).totalCount == segmentsTotal, "N = \(count): \(tag)")
            }
            // Intervals are whole seconds on the common base: no two lines of one tag share a start.
            let starts = mergedLog.intervals.filter { $0.tag == "end_to_end" }.map(\.startSeconds)
            #expect(Set(starts).count == starts.count)
        }
    }

    @Test("a segment that starts after the common publishing start: its cross-segment pairs are unverified, never lost")
    func lateSegment() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let root = RunEndToEndTests.temporaryDirectory("segment-late")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scenario = try Self.write(Self.scenario, name: "segments-late-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        // Segment 1 of 2 (odd global indices) holds car-1, 3, 5 and ops-0 (global 7), which subscribes to every
        // car's telemetry and events.
        let folders = try Self.runSegments(2, scenario: scenario, broker: broker.url, runID: "1a7e", under: root, lateSegment: 1)
        let merge = try RunEndToEndTests.run(["merge"] + folders + ["--out", root + "/merged"])
        let merged = try RunEndToEndTests.report(in: root + "/merged")
        let segments = try #require(merged["segments"] as? [String: Any])
        // Unverified: ops-0's pairs with the cars of segment 0 (car-0, 2, 4, 6; telemetry and events: 8) and
        // car-1's commands from ops-1 (global 8, segment 0). ops-0's pairs with segment 1's own cars are local and
        // exact; segment 0's subscribers were on time, so their pairs with segment 1's streams are whole.
        #expect(segments["unverified_pairs"] as? Int == 9)
        #expect(merge.output.contains("segments      2 merged; 9 subscriber-stream pairs across segments unverified"), "\(merge.output)")
        let delivery = try #require(merged["delivery"] as? [String: Any])
        for qos in ["qos0", "qos1", "qos2"] {
            let counts = try #require(delivery[qos] as? [String: Any])
            #expect(counts["unexpected"] as? Int == 0, "\(qos)")
            #expect(counts["lost"] as? Int == 0, "\(qos)")
        }
        // Every message was published, in whichever segment, and the merge counts each once.
        let messages = try #require(merged["messages"] as? [String: Any])
        #expect((messages["qos1"] as? [String: Any])?["published"] as? Int == 43)
    }

    @Test("merge refuses folders of different runs, splits, a segment twice and a missing segment, naming them")
    func mergeRefusals() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let root = RunEndToEndTests.temporaryDirectory("segment-refusals")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scenario = try Self.write(Self.scenario, name: "segments-refusal-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        let three = try Self.runSegments(3, scenario: scenario, broker: broker.url, runID: "abc3", under: root)
        // A results folder of an ordinary run (no segment.json): the report of segment 0 without its segment file.
        try FileManager.default.copyItem(atPath: three[0], toPath: root + "/single-run")
        try FileManager.default.removeItem(atPath: root + "/single-run/segment.json")

        // Another run: segment 1/3's folder with another run id (and one of another split).
        let otherRun = root + "/other-run"
        let otherSplit = root + "/other-split"
        for (copy, from, to) in [(otherRun, "\"run_id\":\"000000000000abc3\"", "\"run_id\":\"0000000000000def\""),
                                 (otherSplit, "\"count\":3", "\"count\":4")] {
            try FileManager.default.copyItem(atPath: three[1], toPath: copy)
            let file = copy + "/segment.json"
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(text.contains(from), "\(text.prefix(200))")
            try text.replacingOccurrences(of: from, with: to).write(toFile: file, atomically: true, encoding: .utf8)
        }
        let cases: [([String], String)] = [
            ([three[0], otherRun, three[2]],
             "fleetbench merge: \(three[0]) is run 000000000000abc3 but \(otherRun) is run 0000000000000def: only segments of one run can be merged"),
            ([three[0], otherSplit],
             "fleetbench merge: \(three[0]) (segment 0/3) and \(otherSplit) (segment 1/4) split the run differently: only segments of one split can be merged"),
            ([three[0], three[1], three[1], three[2]],
             "fleetbench merge: \(three[1]) and \(three[1]) are both segment 1/3: each segment must be given once"),
            ([three[0], three[2]],
             "fleetbench merge: segment 1/3 missing: give the results folder of every segment of the run"),
            ([three[1]],
             "fleetbench merge: segments 0/3, 2/3 missing: give the results folder of every segment of the run"),
            ([three[0], root + "/nowhere"],
             "fleetbench merge: \(root)/nowhere/report.json:1:1: cannot read file: No such file or directory"),
            ([three[0], root + "/single-run"],
             "fleetbench merge: \(root)/single-run: no segment.json: not the result of `fleetbench run --segment K/N`"),
        ]
        for (folders, message) in cases {
            let outcome = try RunEndToEndTests.run(["merge"] + folders + ["--out", root + "/refused"])
            #expect(outcome.status == 2, "\(folders): \(outcome.error)")
            #expect(outcome.error.hasPrefix(message), "got: \(outcome.error)")
            #expect(!FileManager.default.fileExists(atPath: root + "/refused"))
        }
    }
}

@Suite("run --segment and --start-at usage")
struct SegmentUsageTests {
    @Test("segment options are checked before anything runs, with exact messages")
    func usageErrors() throws {
        let scenario = "scenarios/quickstart.json"
        let cases: [([String], String)] = [
            (["--segment", "2/2"], "fleetbench run: --segment needs K/N with N from 1 to 100000 and K from 0 to N-1, e.g. 0/4, got '2/2'"),
            (["--segment", "a/2"], "fleetbench run: --segment needs K/N with N from 1 to 100000 and K from 0 to N-1, e.g. 0/4, got 'a/2'"),
            (["--segment", "1/2", "--start-at", "2030-01-01T00:00:00Z"],
             "fleetbench run: --segment 1/2 needs --run-id: every segment of a run must carry the same run id"),
            (["--segment", "1/2", "--run-id", "ab"],
             "fleetbench run: --segment 1/2 needs --start-at: every segment of a run must start at the same time"),
            (["--start-at", "yesterday"],
             "fleetbench run: --start-at needs an RFC 3339 time such as 2026-12-02T05:00:00Z, got 'yesterday'"),
            (["--start-at", "2020-01-01T00:00:00Z"], "fleetbench: --start-at 2020-01-01T00:00:00.000Z is "),
            (["--segment", "0/2", "--run-id", "ab", "--start-at", "2030-01-01T00:00:00Z"],
             "fleetbench: --segment 0/2 needs a broker every segment shares (--broker or the scenario's brokers): an embedded mosquitto per segment would split the run's traffic"),
        ]
        for (options, message) in cases {
            let outcome = try RunEndToEndTests.run(["run", scenario] + options + ["--out", "/tmp/fleetbench-never-\(getpid())"])
            #expect(outcome.status == 2, "\(options): \(outcome.error)")
            #expect(outcome.error.hasPrefix(message), "\(options): got \(outcome.error)")
        }
        #expect(!FileManager.default.fileExists(atPath: "/tmp/fleetbench-never-\(getpid())"))
    }
}
