import FleetJSON

/// One network profile of a fleet and what its emulated links did (report.json `network`, one entry per
/// profile of each fleet with a `network` key, in the key's order; absent when no fleet has one).
public struct NetworkReport: Sendable, Equatable {
    public var fleet: String
    /// The preset ("lte"), the preset with changed keys ("lte+"), or "custom".
    public var profile: String
    /// Every figure the run used, in words ("latency p50 30ms, p99 120ms each way; ...").
    public var description: String
    /// Clients of the fleet with the profile (of `fraction`).
    public var clients: Int
    public var fraction: Double
    /// Sends that stalled one retransmission timeout; link drops and outages that ended connections.
    public var stalls: UInt64 = 0
    public var drops: UInt64 = 0
    public var outages: UInt64 = 0
    public var outageSeconds: Double = 0
    /// Mean emulated delay per chunk each way (ms): latency, bandwidth queueing and stalls together.
    public var meanDelayUpMilliseconds: Double = 0
    public var meanDelayDownMilliseconds: Double = 0
    /// Times publishing waited for the emulated send buffer (bandwidth below the offered rate).
    public var heldForBandwidth: UInt64 = 0
    /// Times a socket was not read because its emulated downlink's queue was full (backpressure).
    public var readPauses: UInt64 = 0

    public init(fleet: String, profile: String, description: String, clients: Int, fraction: Double) {
        self.fleet = fleet
        self.profile = profile
        self.description = description
        self.clients = clients
        self.fraction = fraction
    }

    var jsonValue: JSONValue {
        .object([
            JSONMember("fleet", .string(fleet)),
            JSONMember("profile", .string(profile)),
            JSONMember("description", .string(description)),
            JSONMember("clients", .integer(Int64(clients))),
            JSONMember("fraction", .real(fraction)),
            JSONMember("stalls", .integer(Int64(clamping: stalls))),
            JSONMember("drops", .integer(Int64(clamping: drops))),
            JSONMember("outages", .integer(Int64(clamping: outages))),
            JSONMember("outage_s", .real(outageSeconds)),
            JSONMember("mean_delay_up_ms", .real(meanDelayUpMilliseconds)),
            JSONMember("mean_delay_down_ms", .real(meanDelayDownMilliseconds)),
            JSONMember("held_for_bandwidth", .integer(Int64(clamping: heldForBandwidth))),
            JSONMember("read_pauses", .integer(Int64(clamping: readPauses))),
        ])
    }

    init(_ object: JSONField) throws(ReportError) {
        self.init(fleet: try object.string("fleet"), profile: try object.string("profile"),
                  description: try object.string("description"), clients: Int(try object.count("clients")),
                  fraction: try object.number("fraction"))
        stalls = try object.count("stalls")
        drops = try object.count("drops")
        outages = try object.count("outages")
        outageSeconds = try object.number("outage_s")
        meanDelayUpMilliseconds = try object.number("mean_delay_up_ms")
        meanDelayDownMilliseconds = try object.number("mean_delay_down_ms")
        heldForBandwidth = try object.count("held_for_bandwidth")
        readPauses = try object.optionalCount("read_pauses") ?? 0
    }

    /// Adds another segment's figures of the same fleet (`fleetbench merge`): counts add, mean delays weigh by
    /// clients.
    public mutating func add(_ other: NetworkReport) {
        let total = Double(clients + other.clients)
        if total > 0 {
            meanDelayUpMilliseconds = (meanDelayUpMilliseconds * Double(clients) + other.meanDelayUpMilliseconds * Double(other.clients)) / total
            meanDelayDownMilliseconds = (meanDelayDownMilliseconds * Double(clients) + other.meanDelayDownMilliseconds * Double(other.clients)) / total
        }
        clients += other.clients
        stalls &+= other.stalls
        drops &+= other.drops
        outages &+= other.outages
        outageSeconds += other.outageSeconds
        heldForBandwidth &+= other.heldForBandwidth
        readPauses &+= other.readPauses
    }
}

extension RunReport {
    /// `network` entries when some fleet emulates network conditions (reports without any keep their bytes).
    public var networkMembers: [JSONMember] {
        network.isEmpty ? [] : [JSONMember("network", .array(network.map(\.jsonValue)))]
    }

    static func readNetwork(_ top: JSONField) throws(ReportError) -> [NetworkReport] {
        var reports: [NetworkReport] = []
        for element in try top.optionalArray("network") ?? [] {
            reports.append(try NetworkReport(try element.asObject()))
        }
        return reports
    }
}
