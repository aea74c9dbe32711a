import FleetBroker
import FleetEngine
import FleetTestSupport
import FleetTransport
import FleetVehicle
import Glibc
import MQTTCodec
import MQTTSession
import Synchronization
import Testing

/// `{vehicle.*}` rendered by the engine, as a subscriber on a real mosquitto receives it.
@Suite("Vehicle telemetry through the engine against mosquitto", .serialized)
struct VehicleTelemetryEngineTests {
    static let packageRoot: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Tests/BrokerTests/<file>
        return parts.joined(separator: "/")
    }()

    static func munichModel(seed: UInt64) throws -> VehicleModel {
        let network = try RoadNetwork.loadGeoJSON(path: packageRoot + "/scenarios/routes/munich.geojson")
        return try VehicleModel(network: network, configuration: VehicleConfiguration(), seed: seed)
    }

    /// A town without tunnels: no vehicle loses its link, so every message is sent.
    static func townModel(seed: UInt64) throws -> VehicleModel {
        let network = try RoadNetwork.generated(GeneratedRoads(centerLatitude: 48.137, centerLongitude: 11.575, radius: 2_000))
        return try VehicleModel(network: network, configuration: VehicleConfiguration(), seed: seed)
    }

    /// One received message's fields, in the template's order.
    struct Message: Equatable, CustomStringConvertible {
        var client: String
        var sequence: Int
        var timestampMilliseconds: UInt64
        var latitude: Double
        var longitude: Double
        var heading: Double
        var speedKmh: Double
        var odometerKm: Double
        var soc: Double
        var ignition: Bool
        var charging: Bool
        var inTunnel: Bool
        /// The vehicle part as printed (what must repeat exactly under the same seed).
        var vehicleText: String
        var description: String { "\(client)#\(sequence) \(vehicleText)" }
    }

    /// The marker `V|` starts the text after the binary end-to-end header.
    static let template = "V|{client_id}|{seq}|{ts_ms}|{vehicle.lat}|{vehicle.lon}|{vehicle.heading}|{vehicle.speed_kmh}|{vehicle.odometer_km}|{vehicle.soc}|{vehicle.ignition}|{vehicle.charging}|{vehicle.in_tunnel}"

    static func parse(_ payload: [UInt8]) -> Message? {
        guard payload.count > EndToEndHeader.binarySize else { return nil }
        let text = String(decoding: payload[EndToEndHeader.binarySize...], as: UTF8.self)
        guard text.hasPrefix("V|") else { return nil }
        let fields = text.dropFirst(2).split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 12, let sequence = Int(fields[1]), let ts = UInt64(fields[2]),
              let latitude = Double(fields[3]), let longitude = Double(fields[4]), let heading = Double(fields[5]),
              let speed = Double(fields[6]), let odometer = Double(fields[7]), let soc = Double(fields[8]) else { return nil }
        return Message(client: fields[0], sequence: sequence, timestampMilliseconds: ts, latitude: latitude,
                       longitude: longitude, heading: heading, speedKmh: speed, odometerKm: odometer, soc: soc,
                       ignition: fields[9] == "true", charging: fields[10] == "true", inTunnel: fields[11] == "true",
                       vehicleText: fields[3...].joined(separator: "|"))
    }

    /// Runs `vehicles` vehicles publishing `perVehicle` messages each at `rate` a second (QoS 0) and returns what
    /// a subscriber received, parsed, with the engine's result. `segment` runs only that segment of the fleet.
    static func run(broker: MosquittoBroker, model: VehicleModel, vehicles: Int, perVehicle: Int, rate: Double,
                    segment: (index: Int, count: Int)? = nil) throws -> ([Message], EngineResult) {
        let seed = model.seed
        let subscriber = try BrokerConnection(port: broker.port, version: .v3_1_1)
        defer { subscriber.close() }
        let connack = try subscriber.exchange(.connect(MQTTConnect(version: .v3_1_1, clientID: "collector-\(seed)-\(segment?.index ?? -1)")))
        guard case .connAck = connack else { throw BrokerConnectionError.closedByBroker }
        let suback = try subscriber.exchange(.subscribe(MQTTSubscribe(packetID: 1, subscriptions: [MQTTSubscription(filter: "veh/#", qos: .atMostOnce)])))
        guard case .subAck = suback else { throw BrokerConnectionError.closedByBroker }

        let expected = segment.map { segment in (0..<vehicles).filter { $0 % segment.count == segment.index }.count } ?? vehicles
        let collected = Mutex<[[UInt8]]>([])
        let done = Atomic<Bool>(false)
        let reader = SharedCount()
        // Handed to the reader thread; this thread touches it again only after the reader finished.
        let handed = HandedConnection(subscriber)
        TestThread.start {
            let subscriber = handed.connection
            defer { reader.add(1) }
            while !done.load(ordering: .acquiring) {
                guard let packet = try? subscriber.receive(timeout: 1) else { continue }
                if case .publish(let publish) = packet { collected.withLock { $0.append(publish.payload) } }
                if collected.withLock({ $0.count }) >= expected * perVehicle { return }
            }
        }
        let template = try PayloadTemplate(template)
        var fleet = EngineFleet(
            name: "cars", count: vehicles, clientID: { "car-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30),
            streams: [EngineStream(topic: { _, id in "veh/\(id)" }, qos: .atMostOnce, plan: .rate(perSecond: rate),
                                   payload: .template(template), messageLimit: UInt64(perVehicle))])
        fleet.vehicle = model
        var configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2, seed: seed,
            readyTimeout: 5_000_000_000, drainTimeout: 2_000_000_000)
        if let segment {
            configuration.segmentIndex = segment.index
            configuration.segmentCount = segment.count
        }
        let result = try Engine(configuration: configuration).run(duration: UInt64(Double(perVehicle) / rate * 1e9) + 500_000_000)
        // Bounded wait for the subscriber to have read everything that was sent.
        let deadline = MonotonicClock.now() + 10_000_000_000
        while reader.value == 0 && MonotonicClock.now() < deadline { usleep(20_000) }
        done.store(true, ordering: .releasing)
        while reader.value == 0 { usleep(10_000) }
        let messages = collected.withLock { $0 }.compactMap(parse)
        return (messages, result)
    }

    @Test("over 10,000 messages: the odometer never goes back, positions move no faster than the roads allow, the state of charge follows the distance")
    func telemetryIsConsistent() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let model = try Self.townModel(seed: 7)
        let (messages, result) = try Self.run(broker: broker, model: model, vehicles: 50, perVehicle: 200, rate: 50)
        #expect(result.fleets["cars"]?.counters.published.qos0 == 10_000)
        try #require(messages.count == 10_000, "received \(messages.count)")
        // Fastest allowed: the highest limit on the route (the driver's share is at most 1) and the top speed.
        let fastest = min(model.network.segments.map { Double($0.speedLimit) }.max() ?? 0, model.configuration.topSpeedKmh / 3.6)
        let socPerKm = model.configuration.consumptionKWhPerKm / model.configuration.batteryCapacityKWh
        var byClient: [String: [Message]] = [:]
        for message in messages { byClient[message.client, default: []].append(message) }
        #expect(byClient.count == 50)
        var moved = 0
        var pairs = 0
        for (client, list) in byClient {
            let ordered = list.sorted { $0.sequence < $1.sequence }
            #expect(ordered.map(\.sequence) == Array(0..<200), "\(client)")
            for (earlier, later) in zip(ordered, ordered.dropFirst()) {
                pairs += 1
                #expect(later.odometerKm >= earlier.odometerKm, "\(client): odometer \(earlier.odometerKm) then \(later.odometerKm)")
                let driven = (later.odometerKm - earlier.odometerKm) * 1000
                if driven > 0 { moved += 1 }
                // ts_ms is the intended time to the millisecond: allow one more millisecond of driving.
                let seconds = Double(later.timestampMilliseconds - earlier.timestampMilliseconds) / 1000 + 0.001
                let allowed = fastest * seconds
                // The odometer is printed to the metre.
                #expect(driven <= allowed + 1, "\(client): \(driven) m in \(seconds) s")
                // The straight line is at most the road driven, plus twice the GNSS bound and the printing.
                let straight = Self.metres(earlier.latitude, earlier.longitude, later.latitude, later.longitude)
                #expect(straight <= allowed + 2 * model.configuration.gnssNoise + 1.5, "\(client): \(straight) m in \(seconds) s")
                #expect(later.speedKmh <= fastest * 3.6 + 0.05)
                if !later.ignition { #expect(later.speedKmh == 0, "\(client): moving with the ignition off") }
                if !earlier.charging && !later.charging {
                    // Falls exactly by the distance's energy (4 decimals of soc, 3 of km).
                    let fall = earlier.soc - later.soc
                    let energy = (later.odometerKm - earlier.odometerKm) * socPerKm
                    #expect(abs(fall - energy) <= 0.0001 + 0.001 * socPerKm + 1e-9, "\(client): soc \(earlier.soc) -> \(later.soc) over \(driven) m")
                } else {
                    #expect(later.soc >= earlier.soc - 0.0001, "\(client): soc fell while charging")
                }
                #expect((0...1).contains(later.soc))
            }
        }
        #expect(pairs == 50 * 199)
        // The fleet is not standing still: a share of the vehicles is driving during the run.
        #expect(moved > 0)
    }

    @Test("the same seed gives the same vehicle fields in the same messages; two segments give what one run gives")
    func deterministicAndSegmented() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        func keyed(_ messages: [Message]) -> [String: String] {
            Dictionary(messages.map { ("\($0.client)#\($0.sequence)", $0.vehicleText) }, uniquingKeysWith: { first, _ in first })
        }
        let model = try Self.townModel(seed: 11)
        let first = keyed(try Self.run(broker: broker, model: model, vehicles: 6, perVehicle: 40, rate: 20).0)
        let second = keyed(try Self.run(broker: broker, model: model, vehicles: 6, perVehicle: 40, rate: 20).0)
        try #require(first.count == 240)
        #expect(first == second)
        var union: [String: String] = [:]
        for index in 0..<2 {
            let part = keyed(try Self.run(broker: broker, model: model, vehicles: 6, perVehicle: 40, rate: 20, segment: (index, 2)).0)
            #expect(part.count == 120)
            union.merge(part) { old, _ in old }
        }
        #expect(union == first)
        let other = keyed(try Self.run(broker: broker, model: try Self.townModel(seed: 12), vehicles: 6, perVehicle: 40, rate: 20).0)
        #expect(other != first)
    }

    @Test("on the Munich route, a vehicle in the Richard-Strauss tunnel loses its link: no message leaves from inside")
    func tunnelCutsTheLink() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        // No reconnect and no offline buffer: a vehicle that reaches the tunnel stays offline, so the vehicles
        // that stopped early are exactly those cut.
        let (messages, result) = try Self.run(broker: broker, model: try Self.munichModel(seed: 3), vehicles: 60,
                                             perVehicle: 40, rate: 20)
        let cars = try #require(result.fleets["cars"])
        let cut = cars.counters.disconnects[.tunnel] ?? 0
        // 1.1 km of 15.2 km is tunnel: some of 60 vehicles start in or reach it.
        #expect(cut > 0)
        #expect(messages.allSatisfy { !$0.inTunnel })
        var perClient: [String: Int] = [:]
        for message in messages { perClient[message.client, default: 0] += 1 }
        let complete = perClient.values.filter { $0 == 40 }.count
        #expect(UInt64(60 - complete) == cut, "\(perClient)")
        #expect(cars.counters.published.qos0 == UInt64(messages.count))
    }

    /// Great-circle distance in metres (haversine, the model's own sphere).
    static func metres(_ latitude1: Double, _ longitude1: Double, _ latitude2: Double, _ longitude2: Double) -> Double {
        let radius = 6_371_008.8
        let phi1 = latitude1 * .pi / 180
        let phi2 = latitude2 * .pi / 180
        let dPhi = phi2 - phi1
        let dLambda = (longitude2 - longitude1) * .pi / 180
        let a = sin(dPhi / 2) * sin(dPhi / 2) + cos(phi1) * cos(phi2) * sin(dLambda / 2) * sin(dLambda / 2)
        return 2 * radius * asin(min(1, a.squareRoot()))
    }
}

/// A connection given to one other thread for good (the test waits for that thread before closing it).
final class HandedConnection: @unchecked Sendable {
    let connection: BrokerConnection
    init(_ connection: BrokerConnection) { self.connection = connection }
}

/// A counter shared with a test thread.
final class SharedCount: Sendable {
    private let count = Mutex(0)
    func add(_ value: Int) { count.withLock { $0 += value } }
    var value: Int { count.withLock { $0 } }
}
