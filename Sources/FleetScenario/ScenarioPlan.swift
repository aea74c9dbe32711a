import MQTTCodec
/// What a scenario will do, for `fleetbench validate`: fleets, clients, expected publish rates, timeline.
public struct ScenarioPlan: Equatable, Sendable {
    public struct StreamPlan: Equatable, Sendable {
        /// `publish`, `request` or `heartbeat`.
        public var kind: String
        public var name: String
        public var topic: String
        public var qos: MQTTQoS
        /// Mean messages per second per client (0 for on-connect and closed-model streams).
        public var perClientRate: Double
        /// perClientRate x clients of the fleet.
        public var totalRate: Double
        /// Closed model (`{"type": "max"}`): as fast as the window or socket allows; no planned rate.
        public var closedModel = false
        /// Store and forward while offline (`offline`).
        public var offline: OfflineBuffering? = nil
        /// Subscribers that receive each message, judged from the fleet's first client (nil when the scenario is
        /// too large to count cheaply: over 200,000 clients).
        public var fanOut: Int?
    }

    public struct FleetPlan: Equatable, Sendable {
        public var name: String
        public var clients: Int
        public var protocolVersion: MQTTProtocolVersion
        public var streams: [StreamPlan]
        /// Lines about the fleet's vehicles, identities and minted certificates (empty when it has none).
        public var details: [String] = []
        /// "lte on 40 clients (latency ...)": the fleet's emulated link, nil without `network`.
        public var network: String? = nil
    }

    public var scenario: String
    public var description: String
    public var brokers: [String]
    public var fleets: [FleetPlan]
    public var stages: [(start: TimeSpan, stage: Stage)] { stageStarts }
    var stageStarts: [(start: TimeSpan, stage: Stage)]
    public var duration: TimeSpan
    public var totalClients: Int
    /// Sum of every stream's total rate: messages per second published once all clients are connected.
    public var totalPublishRate: Double
    /// Sum of rate x fan-out over the publish and heartbeat streams: deliveries per second to subscribers
    /// (nil when fan-out was not counted).
    public var totalDeliveryRate: Double?

    public static func == (left: ScenarioPlan, right: ScenarioPlan) -> Bool {
        left.scenario == right.scenario && left.fleets == right.fleets && left.duration == right.duration
            && left.brokers == right.brokers && left.stageStarts.map(\.start) == right.stageStarts.map(\.start)
            && left.stageStarts.map(\.stage) == right.stageStarts.map(\.stage)
    }

    public init(_ scenario: Scenario) {
        self.scenario = scenario.name
        description = scenario.description
        brokers = scenario.brokers.isEmpty ? ["embedded mosquitto on 127.0.0.1"] : scenario.brokers.map(\.url)
        let countFanOut = scenario.fleets.reduce(0) { $0 + $1.count } <= 200_000
        func fanOut(_ topic: NamePattern, from fleet: Fleet) -> Int? {
            guard countFanOut else { return nil }
            let rendered = topic.render(clientID: fleet.clientID.render(index: 0, fleet: fleet.name), index: 0, fleet: fleet.name)
            var receivers = 0
            for subscriber in scenario.fleets where !subscriber.subscriptions.isEmpty {
                for index in 0..<subscriber.count {
                    let clientID = subscriber.clientID.render(index: index, fleet: subscriber.name)
                    // Overlapping subscriptions may bring a client more than one copy (MQTT 5.0 §3.3.4 leaves it
                    // to the broker); the plan counts the client once.
                    if subscriber.subscriptions.contains(where: {
                        MQTTTopic.matches(filter: $0.filter.render(clientID: clientID, index: index, fleet: subscriber.name), topic: rendered)
                    }) {
                        receivers += 1
                    }
                }
            }
            return receivers
        }
        fleets = scenario.fleets.map { fleet in
            var streams: [StreamPlan] = []
            let clients = Double(fleet.count)
            for stream in fleet.publishes {
                let rate = stream.schedule.messagesPerSecond
                streams.append(StreamPlan(kind: "publish", name: stream.name, topic: stream.topic.source, qos: stream.qos,
                                          perClientRate: rate, totalRate: rate * clients,
                                          closedModel: stream.schedule.isClosedModel, offline: stream.offline,
                                          fanOut: fanOut(stream.topic, from: fleet)))
            }
            for request in fleet.requests {
                let rate = request.schedule.messagesPerSecond
                streams.append(StreamPlan(kind: "request", name: request.name, topic: request.topic.source, qos: request.qos,
                                          perClientRate: rate, totalRate: rate * clients,
                                          closedModel: request.schedule.isClosedModel, fanOut: nil))
            }
            if let heartbeat = fleet.heartbeat {
                let rate = 1 / heartbeat.interval.seconds
                streams.append(StreamPlan(kind: "heartbeat", name: "\(fleet.name).heartbeat", topic: heartbeat.topic.source,
                                          qos: heartbeat.qos, perClientRate: rate, totalRate: rate * clients,
                                          fanOut: fanOut(heartbeat.topic, from: fleet)))
            }
            var plan = FleetPlan(name: fleet.name, clients: fleet.count, protocolVersion: fleet.protocolVersion, streams: streams,
                                 details: Self.details(fleet))
            if !fleet.networks.isEmpty {
                let counts = NetworkConditions.clientCounts(count: fleet.count, profiles: fleet.networks)
                plan.network = zip(fleet.networks, counts).map { network, linked in
                    "\(network.name) on \(linked) client\(linked == 1 ? "" : "s") (\(network.summary))"
                }.joined(separator: "; ")
            }
            return plan
        }
        var start = TimeSpan.zero
        var starts: [(start: TimeSpan, stage: Stage)] = []
        for stage in scenario.stages {
            starts.append((start, stage))
            start = start + stage.duration
        }
        stageStarts = starts
        duration = scenario.duration
        totalClients = scenario.fleets.reduce(0) { $0 + $1.count }
        totalPublishRate = fleets.reduce(0) { $0 + $1.streams.reduce(0) { $0 + $1.totalRate } }
        totalDeliveryRate = countFanOut
            ? fleets.reduce(0) { $0 + $1.streams.reduce(0) { $0 + $1.totalRate * Double($1.fanOut ?? 0) } } : nil
    }

    /// The text `fleetbench validate` prints.
    public func render() -> String {
        var lines: [String] = []
        lines.append("scenario \(scenario): \(description)")
        lines.append("  brokers: \(brokers.joined(separator: ", "))")
        var rates = "\(Self.rate(totalPublishRate)) msg/s published"
        if fleets.contains(where: { $0.streams.contains(where: \.closedModel) }) { rates += " plus closed-model streams" }
        if let totalDeliveryRate { rates += ", \(Self.rate(totalDeliveryRate)) msg/s delivered" }
        lines.append("  duration: \(duration), \(totalClients) clients, \(rates) when all are connected")
        for fleet in fleets {
            lines.append("  fleet \(fleet.name): \(fleet.clients) client\(fleet.clients == 1 ? "" : "s"), MQTT \(fleet.protocolVersion.scenarioName)")
            for stream in fleet.streams {
                var line = "    \(stream.kind) \(stream.name) -> \(stream.topic) qos \(stream.qos.rawValue): "
                    + (stream.closedModel
                        ? "max (closed model: as fast as the window or socket allows)"
                        : "\(Self.rate(stream.perClientRate))/s per client, \(Self.rate(stream.totalRate)) msg/s total")
                if let fanOut = stream.fanOut { line += ", \(fanOut) subscriber\(fanOut == 1 ? "" : "s") each" }
                if let offline = stream.offline { line += "; offline buffer \(offline.buffer), \(offline.overflow.rawValue)" }
                lines.append(line)
            }
            if let network = fleet.network { lines.append("    network \(network)") }
            for detail in fleet.details { lines.append("    " + detail) }
        }
        for entry in stageStarts {
            lines.append("  at \(entry.start): \(entry.stage.kind.name) for \(entry.stage.duration)")
        }
        return lines.joined(separator: "\n")
    }

    /// Up to 3 significant decimals, no trailing zeros: 1, 0.25, 16.667.
    static func rate(_ value: Double) -> String {
        let scaled = (value * 1000).rounded() / 1000
        if scaled == scaled.rounded(), abs(scaled) < 1e15 { return String(Int64(scaled)) }
        var text = String(scaled)
        if text.contains("e") { return text }
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }
}

extension ScenarioPlan {
    /// What `validate` says about a fleet's vehicles, identities and minted certificates.
    static func details(_ fleet: Fleet) -> [String] {
        var lines: [String] = []
        if let vehicle = fleet.vehicle {
            let route: String
            switch vehicle.route {
            case .geoJSON(let path): route = path
            case .generated(let roads): route = "generated town, radius \(kilometres(roads.radius)) km"
            }
            var line = "vehicle: \(route)"
            if let network = vehicle.network {
                line += " (\(kilometres(network.totalLength)) km of road, \(kilometres(network.tunnelLength)) km in tunnels)"
            }
            lines.append(line)
        }
        if let identities = fleet.identities {
            lines.append("identities: \(identities.file) (\(identities.records.count) rows, \(fleet.count) used)")
        }
        if let mint = fleet.mint { lines.append("tls: a certificate minted per client from \(mint.caCertificate)") }
        return lines
    }

    static func kilometres(_ metres: Double) -> String {
        let tenths = (metres / 100).rounded()
        return "\(Int(tenths) / 10).\(Int(tenths) % 10)"
    }
}

