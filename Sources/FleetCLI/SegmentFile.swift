import FleetEngine
import FleetJSON
import FleetMetrics
import FleetReports
import Foundation

/// segment.json: what a segment of a segmented run (`run --segment K/N`) writes beside its report for
/// `fleetbench merge`: the run's identity and the delivery data that settles accounting across segments
/// (`SegmentDelivery`). Documented in docs/report-format.md.
struct SegmentFile {
    static let name = "segment.json"
    static let schema = "fleetbench.segment/1"

    struct Requests: Equatable {
        var sent: UInt64 = 0
        var answered: UInt64 = 0
        var timedOut: UInt64 = 0
    }

    var runID: UInt64
    var seed: UInt64
    var scenarioSHA256: String
    var index: Int
    var count: Int
    var delivery: SegmentDelivery
    var requests: Requests

    func write(to directory: String) throws {
        let text = JSONWriter.string(from: jsonValue, style: .compact) + "\n"
        let path = ReportWriter.path(in: directory, Self.name)
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw ReportError("cannot write \(path)")
        }
    }

    static func integer(_ value: UInt64) -> JSONValue { .integer(Int64(clamping: value)) }
    static func integer(_ value: Int) -> JSONValue { .integer(Int64(value)) }

    /// received, unique, duplicated, reordered, untracked: what arrived.
    static func arrivals(_ counts: DeliveryCounts) -> [JSONValue] {
        [integer(counts.received), integer(counts.unique), integer(counts.duplicated), integer(counts.reordered),
         integer(counts.untracked)]
    }

    /// Every field of final counts, in `countFields` order.
    static let countFields = ["expected", "received", "unique", "duplicated", "reordered", "lost", "unexpected",
                              "untracked", "rejected", "missed_while_offline"]

    static func countsJSON(_ counts: DeliveryCounts) -> JSONValue {
        .array([counts.expected, counts.received, counts.unique, counts.duplicated, counts.reordered, counts.lost,
                counts.unexpected, counts.untracked, counts.rejected, counts.missedWhileOffline].map { integer($0) })
    }

    var jsonValue: JSONValue {
        .object([
            JSONMember("schema", .string(Self.schema)),
            JSONMember("run_id", .string(String(format: "%016llx", runID))),
            JSONMember("seed", .string(String(seed))),
            JSONMember("scenario_sha256", .string(scenarioSHA256)),
            JSONMember("index", Self.integer(index)),
            JSONMember("count", Self.integer(count)),
            JSONMember("published", .array(delivery.published.map { .array([Self.integer($0.stream), Self.integer($0.count)]) })),
            JSONMember("local", .array(delivery.local.map { perQoS in .array(perQoS.levels.map(Self.countsJSON)) })),
            JSONMember("remote_pairs", .array(delivery.remotePairs.map { pair in
                .array([Self.integer(pair.fleet), Self.integer(pair.subscriber), Self.integer(pair.stream),
                        Self.integer(pair.qos), .bool(pair.whole)] + Self.arrivals(pair.counts))
            })),
            JSONMember("group_streams", .array(delivery.groupStreams.map { group in
                .array([Self.integer(group.group), Self.integer(group.stream), Self.integer(group.fleet),
                        Self.integer(group.qos)] + Self.arrivals(group.counts)
                       + [.array(group.ranges.flatMap { [Self.integer($0.lowerBound), Self.integer($0.upperBound)] })])
            })),
            JSONMember("requests", .object([
                JSONMember("sent", Self.integer(requests.sent)),
                JSONMember("answered", Self.integer(requests.answered)),
                JSONMember("timed_out", Self.integer(requests.timedOut)),
            ])),
        ])
    }

    /// Reads DIR/segment.json; errors name the file and what is wrong.
    static func load(directory: String) throws(ReportError) -> SegmentFile {
        let path = ReportWriter.path(in: directory, name)
        guard FileManager.default.fileExists(atPath: path) else {
            throw ReportError("\(directory): no \(name): not the result of `fleetbench run --segment K/N`")
        }
        let root: JSONValue
        do {
            root = try JSONDocument.load(path: path).root
        } catch {
            throw ReportError(error.description)
        }
        func fail(_ what: String) -> ReportError { ReportError("\(path): \(what)") }
        func number(_ value: JSONValue?, _ what: String) throws(ReportError) -> UInt64 {
            guard case .integer(let integer)? = value, integer >= 0 else { throw fail("\(what): expected a count") }
            return UInt64(integer)
        }
        func array(_ value: JSONValue?, _ what: String) throws(ReportError) -> [JSONValue] {
            guard let elements = value?.arrayElements else { throw fail("\(what): expected an array") }
            return elements
        }
        guard root["schema"]?.stringValue == schema else { throw fail("schema: expected \"\(schema)\"") }
        guard let runText = root["run_id"]?.stringValue, let runID = UInt64(runText, radix: 16) else {
            throw fail("run_id: expected hex digits")
        }
        guard let seedText = root["seed"]?.stringValue, let seed = UInt64(seedText) else { throw fail("seed: expected a number") }
        let index = Int(try number(root["index"], "index"))
        let count = Int(try number(root["count"], "count"))
        let fleetRows = try array(root["local"], "local")
        var delivery = SegmentDelivery(fleetCount: fleetRows.count)
        delivery.index = index
        delivery.count = count
        for entry in try array(root["published"], "published") {
            let pair = try array(entry, "published[]")
            guard pair.count == 2 else { throw fail("published[]: expected [stream, count]") }
            delivery.published.append((Int(try number(pair[0], "published[]")), try number(pair[1], "published[]")))
        }
        for (fleet, row) in fleetRows.enumerated() {
            let perQoS = try array(row, "local[]")
            guard perQoS.count == 3 else { throw fail("local[\(fleet)]: expected 3 QoS entries") }
            for qos in 0..<3 {
                let fields = try array(perQoS[qos], "local[\(fleet)][\(qos)]").map { value throws(ReportError) in
                    try number(value, "local[\(fleet)][\(qos)]")
                }
                guard fields.count == countFields.count else { throw fail("local[\(fleet)][\(qos)]: expected \(countFields.count) counts") }
                var counts = DeliveryCounts()
                counts.expected = fields[0]
                counts.received = fields[1]
                counts.unique = fields[2]
                counts.duplicated = fields[3]
                counts.reordered = fields[4]
                counts.lost = fields[5]
                counts.unexpected = fields[6]
                counts.untracked = fields[7]
                counts.rejected = fields[8]
                counts.missedWhileOffline = fields[9]
                delivery.local[fleet][qos] = counts
            }
        }
        func arrivals(_ fields: [JSONValue], from start: Int, _ what: String) throws(ReportError) -> DeliveryCounts {
            DeliveryCounts(expected: 0, received: try number(fields[start], what), unique: try number(fields[start + 1], what),
                           duplicated: try number(fields[start + 2], what), reordered: try number(fields[start + 3], what),
                           untracked: try number(fields[start + 4], what))
        }
        for entry in try array(root["remote_pairs"], "remote_pairs") {
            let fields = try array(entry, "remote_pairs[]")
            guard fields.count == 10, case .bool(let whole) = fields[4] else { throw fail("remote_pairs[]: expected 10 fields") }
            delivery.remotePairs.append(SegmentRemotePair(
                fleet: Int(try number(fields[0], "remote_pairs[]")), subscriber: Int(try number(fields[1], "remote_pairs[]")),
                stream: Int(try number(fields[2], "remote_pairs[]")), qos: Int(try number(fields[3], "remote_pairs[]")),
                whole: whole, counts: try arrivals(fields, from: 5, "remote_pairs[]")))
        }
        for entry in try array(root["group_streams"], "group_streams") {
            let fields = try array(entry, "group_streams[]")
            guard fields.count == 10 else { throw fail("group_streams[]: expected 10 fields") }
            let bounds = try array(fields[9], "group_streams[].ranges").map { value throws(ReportError) in
                try number(value, "group_streams[].ranges")
            }
            guard bounds.count % 2 == 0 else { throw fail("group_streams[].ranges: expected pairs") }
            var ranges: [Range<UInt64>] = []
            for start in stride(from: 0, to: bounds.count, by: 2) where bounds[start] <= bounds[start + 1] {
                ranges.append(bounds[start]..<bounds[start + 1])
            }
            delivery.groupStreams.append(SegmentGroupStream(
                group: Int(try number(fields[0], "group_streams[]")), stream: Int(try number(fields[1], "group_streams[]")),
                fleet: Int(try number(fields[2], "group_streams[]")), qos: Int(try number(fields[3], "group_streams[]")),
                ranges: ranges, counts: try arrivals(fields, from: 4, "group_streams[]")))
        }
        let requestsObject = root["requests"]
        let requests = Requests(sent: try number(requestsObject?["sent"], "requests.sent"),
                                answered: try number(requestsObject?["answered"], "requests.answered"),
                                timedOut: try number(requestsObject?["timed_out"], "requests.timed_out"))
        return SegmentFile(runID: runID, seed: seed, scenarioSHA256: root["scenario_sha256"]?.stringValue ?? "",
                           index: index, count: count, delivery: delivery, requests: requests)
    }
}
