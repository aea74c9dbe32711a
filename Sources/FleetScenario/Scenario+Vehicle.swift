import FleetJSON
import FleetPayload
@_exported import FleetVehicle

/// A fleet's `vehicle` key: where its vehicles drive and how. Decoding loads the route (a GeoJSON file's problems
/// are reported at their own `file:line:column`) and builds the model, so `validate` catches everything a run
/// would; the model is built once and shared by every client of the fleet.
public struct VehicleSetting: Equatable, Sendable {
    public enum Route: Equatable, Sendable {
        /// A GeoJSON file, as resolved (relative paths are relative to the scenario file's directory).
        case geoJSON(path: String)
        case generated(GeneratedRoads)
    }

    public var route: Route
    public var configuration: VehicleConfiguration
    /// The roads, built at decoding (nil only in a scenario that failed to decode).
    public var network: RoadNetwork?

    /// The model for a run with `seed`: every vehicle of the fleet drives on the same roads, vehicle `k` from
    /// the seed and its client's global index.
    public func model(seed: UInt64) throws -> VehicleModel {
        guard let network else { throw RoadNetworkError("the fleet's roads were not loaded") }
        return try VehicleModel(network: network, configuration: configuration, seed: seed)
    }

    public static func == (left: VehicleSetting, right: VehicleSetting) -> Bool {
        left.route == right.route && left.configuration == right.configuration
    }
}

extension ScenarioDecoder {
    /// The directory of the scenario file, for paths inside it (empty for a scenario read from standard input).
    var scenarioDirectory: String {
        let file = context.document.file
        guard !file.hasPrefix("<"), let slash = file.lastIndex(of: "/") else { return "" }
        return String(file[...slash])
    }

    /// `path` as written when absolute, else relative to the scenario file's directory.
    func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : scenarioDirectory + path
    }

    static let vehicleKeys = ["route", "top_speed_kmh", "acceleration", "deceleration", "speed_factor", "trips",
                              "battery", "gnss", "odometer_km"]

    func decodeVehicle(_ value: JSONValue, _ path: JSONPath) -> VehicleSetting? {
        guard let object = context.object(value, path, allowed: Self.vehicleKeys, what: "a vehicle object") else { return nil }
        var configuration = VehicleConfiguration()
        func number(_ key: String, _ reader: ObjectReader, into target: inout Double) {
            if let found = reader.optional(key, { value, path -> Double? in
                guard let number = value.numberValue, number.isFinite else {
                    context.expected("a number", path, got: value)
                    return nil
                }
                return number
            }) { target = found }
        }
        func fraction(_ key: String, _ reader: ObjectReader, into target: inout Double) {
            if let found = reader.optional(key, context.fraction) { target = found }
        }
        /// `[low, high]` of numbers.
        func numberRange(_ key: String, _ reader: ObjectReader, into target: inout ClosedRange<Double>) {
            if let found = reader.optional(key, { value, path -> ClosedRange<Double>? in
                guard case .array(let items) = value, items.count == 2, let low = items[0].numberValue,
                      let high = items[1].numberValue, low.isFinite, high.isFinite, low <= high else {
                    context.expected("a range [low, high] of two numbers, low first", path, got: value)
                    return nil
                }
                return low...high
            }) { target = found }
        }
        /// `[low, high]` of durations, or one duration.
        func durationRange(_ key: String, _ reader: ObjectReader, into target: inout ClosedRange<Double>) {
            if let found = reader.optional(key, { value, path -> ClosedRange<Double>? in
                if case .array(let items) = value {
                    guard items.count == 2 else {
                        context.expected("a duration or a range [\"low\", \"high\"] of two durations", path, got: value)
                        return nil
                    }
                    guard let low = context.duration(items[0], path.appending(index: 0)),
                          let high = context.duration(items[1], path.appending(index: 1)) else { return nil }
                    guard low.nanoseconds <= high.nanoseconds else {
                        context.error(path, "the range's low end (\(low)) must not exceed its high end (\(high))")
                        return nil
                    }
                    return low.seconds...high.seconds
                }
                return context.duration(value, path).map { $0.seconds...$0.seconds }
            }) { target = found }
        }
        number("top_speed_kmh", object, into: &configuration.topSpeedKmh)
        number("acceleration", object, into: &configuration.acceleration)
        number("deceleration", object, into: &configuration.deceleration)
        numberRange("speed_factor", object, into: &configuration.speedFactor)
        numberRange("odometer_km", object, into: &configuration.initialOdometerKm)
        if let tripsValue = object.value("trips"),
           let trips = context.object(tripsValue, path.appending("trips"), allowed: ["drive", "park", "junction_stops", "junction_stop"]) {
            durationRange("drive", trips, into: &configuration.driveDuration)
            durationRange("park", trips, into: &configuration.parkDuration)
            fraction("junction_stops", trips, into: &configuration.junctionStopProbability)
            durationRange("junction_stop", trips, into: &configuration.junctionStopDuration)
        }
        if let batteryValue = object.value("battery"),
           let battery = context.object(batteryValue, path.appending("battery"), allowed: [
               "capacity_kwh", "consumption_kwh_per_km", "initial_soc", "reserve_soc", "charge_below_soc",
               "charge_limit_soc", "charge_power_kw"]) {
            number("capacity_kwh", battery, into: &configuration.batteryCapacityKWh)
            number("consumption_kwh_per_km", battery, into: &configuration.consumptionKWhPerKm)
            numberRange("initial_soc", battery, into: &configuration.initialSoc)
            fraction("reserve_soc", battery, into: &configuration.reserveSoc)
            fraction("charge_below_soc", battery, into: &configuration.chargeBelowSoc)
            fraction("charge_limit_soc", battery, into: &configuration.chargeLimitSoc)
            number("charge_power_kw", battery, into: &configuration.chargePowerKW)
        }
        if let gnssValue = object.value("gnss"), let gnss = context.object(gnssValue, path.appending("gnss"), allowed: ["noise_m", "period"]) {
            number("noise_m", gnss, into: &configuration.gnssNoise)
            if let period = gnss.optional("period", { context.duration($0, $1, allowZero: false) }) {
                configuration.gnssNoisePeriod = period.seconds
            }
        }
        guard let route = object.required("route", "where the vehicles drive: {\"geojson\": FILE} or {\"generated\": {...}}", { value, routePath in
            decodeRoute(value, routePath)
        }) else {
            // Without roads the settings' own problems are still reported, all at once.
            report(configuration.problems, object: object, path)
            return nil
        }
        var setting = VehicleSetting(route: route.0, configuration: configuration, network: route.1)
        // The settings' own problems, and the reserve the roads need, at the key they belong to.
        do {
            _ = try VehicleModel(network: route.1, configuration: configuration, seed: 0)
        } catch {
            report(error.problems, object: object, path)
            setting.network = nil
            return nil
        }
        return setting
    }

    /// Each problem at its key when the scenario gives it (`battery.reserve_soc`), else at the `vehicle` object.
    func report(_ problems: [VehicleConfiguration.Problem], object: ObjectReader, _ path: JSONPath) {
        for problem in problems {
            let parts = problem.key.split(separator: ".").map(String.init)
            var keyPath = path
            for part in parts { keyPath = keyPath.appending(part) }
            var given = object.value(parts[0])
            for part in parts.dropFirst() {
                if case .object(let members)? = given { given = members.first { $0.key == part }?.value } else { given = nil }
            }
            context.error(given != nil ? keyPath : path, problem.message)
        }
    }

    func decodeRoute(_ value: JSONValue, _ path: JSONPath) -> (VehicleSetting.Route, RoadNetwork)? {
        guard let object = context.object(value, path, allowed: ["geojson", "generated"], what: "a route: {\"geojson\": FILE} or {\"generated\": {...}}") else { return nil }
        if object.has("geojson") == object.has("generated") {
            context.error(path, "a route takes exactly one of \"geojson\" (a route file) or \"generated\" (a made-up town)")
            return nil
        }
        if let file = object.optional("geojson", context.nonEmptyString) {
            let resolved = resolve(file)
            do {
                let network = try RoadNetwork.loadGeoJSON(path: resolved)
                return (.geoJSON(path: resolved), network)
            } catch {
                // The route file's own locations, after the scenario's.
                context.error(path.appending("geojson"), "the route file has problems:\n" + error.description)
                return nil
            }
        }
        guard let generatedValue = object.value("generated"),
              let generated = context.object(generatedValue, path.appending("generated"), allowed: [
                  "center", "radius_km", "block_m", "tunnels", "side_street_kmh", "main_road_kmh", "ring_road_kmh", "seed"]) else { return nil }
        let center = generated.required("center", "the town's centre [latitude, longitude]") { value, centerPath -> (Double, Double)? in
            guard case .array(let items) = value, items.count == 2, let latitude = items[0].numberValue,
                  let longitude = items[1].numberValue else {
                context.expected("[latitude, longitude] in degrees", centerPath, got: value)
                return nil
            }
            return (latitude, longitude)
        }
        let radius = generated.required("radius_km", "the town's radius in km") { context.positiveNumber($0, $1, what: "a radius in km greater than 0") }
        guard let center, let radius else { return nil }
        // The town has a seed of its own (default 1): the same town under every run seed, as a real map is.
        let townSeed = generated.optional("seed") { context.integer($0, $1, in: 0...Int64.max, what: "a non-negative integer") } ?? 1
        var roads = GeneratedRoads(centerLatitude: center.0, centerLongitude: center.1, radius: radius * 1000, seed: UInt64(townSeed))
        if let block = generated.optional("block_m", { context.positiveNumber($0, $1, what: "a block size in metres") }) { roads.block = block }
        if let share = generated.optional("tunnels", context.fraction) { roads.tunnelFraction = share }
        if let speed = generated.optional("side_street_kmh", { context.positiveNumber($0, $1) }) { roads.sideStreetSpeedKmh = speed }
        if let speed = generated.optional("main_road_kmh", { context.positiveNumber($0, $1) }) { roads.mainRoadSpeedKmh = speed }
        if let speed = generated.optional("ring_road_kmh", { context.positiveNumber($0, $1) }) { roads.ringRoadSpeedKmh = speed }
        let problems = roads.problems
        guard problems.isEmpty else {
            let keys = ["center": "center", "radius": "radius_km", "block": "block_m", "tunnels": "tunnels"]
            for problem in problems {
                context.error(path.appending("generated").appending(keys[problem.parameter] ?? problem.parameter), problem.message)
            }
            return nil
        }
        do {
            return (.generated(roads), try RoadNetwork.generated(roads))
        } catch {
            context.error(path.appending("generated"), error.message)
            return nil
        }
    }

    /// A publish stream's `offline` key: `{"buffer": 1000, "overflow": "drop_oldest"}`.
    func decodeOffline(_ value: JSONValue, _ path: JSONPath) -> OfflineBuffering? {
        guard let object = context.object(value, path, allowed: ["buffer", "overflow"]) else { return nil }
        let buffer = object.required("buffer", "how many messages the buffer holds") {
            context.integer($0, $1, in: 1...10_000_000, what: "a number of messages from 1 to 10000000")
        }
        let overflow = object.optional("overflow") {
            context.choice($0, $1, [("drop_oldest", OfflineBuffering.Overflow.dropOldest), ("drop_newest", .dropNewest)])
        } ?? .dropOldest
        guard let buffer else { return nil }
        return OfflineBuffering(buffer: buffer, overflow: overflow)
    }

    /// A fleet's `identities` key: a CSV file of client ids and credentials, one row per client by index.
    func decodeIdentities(_ value: JSONValue, _ path: JSONPath, count: Int) -> IdentityTable? {
        guard let file = context.nonEmptyString(value, path) else { return nil }
        let resolved = resolve(file)
        do {
            let table = try IdentityTable.load(path: resolved)
            if table.records.count < count {
                context.error(path, "\(resolved) has \(table.records.count) identities for a fleet of \(count) clients; give one row per client")
                return nil
            }
            return table
        } catch {
            context.error(path, "the identities file has problems:\n" + error.description)
            return nil
        }
    }

    /// Every `{vehicle.*}` generator of the fleet needs a `vehicle` key, and belongs in publish payloads only
    /// (a will, a reply or a heartbeat is not rendered at a moment of the drive).
    func checkVehicleGenerators(_ fleet: Fleet, _ path: JSONPath, object: ObjectReader) {
        // A `vehicle` key that failed to decode was reported already.
        let hasVehicle = fleet.vehicle != nil || object.has("vehicle")
        func usesVehicle(_ payload: Payload) -> Bool {
            guard case .template(let template) = payload else { return false }
            return template.segments.contains { if case .generator(.vehicle, _) = $0 { return true } else { return false } }
        }
        if !hasVehicle {
            for (index, stream) in fleet.publishes.enumerated() where usesVehicle(stream.payload) {
                context.error(path.appending("publish").appending(index: index).appending("payload"),
                              "{vehicle.*} needs a \"vehicle\" key on the fleet (where its vehicles drive)")
            }
        }
        for (index, stream) in fleet.requests.enumerated() where usesVehicle(stream.payload) {
            context.error(path.appending("requests").appending(index: index).appending("payload"), "{vehicle.*} is for publish payloads only")
        }
        if let will = fleet.will, usesVehicle(.template(will.payload)) {
            context.error(path.appending("will").appending("payload"), "{vehicle.*} is for publish payloads only")
        }
        if let responder = fleet.responder, usesVehicle(responder.payload) {
            context.error(path.appending("respond").appending("payload"), "{vehicle.*} is for publish payloads only")
        }
        if let heartbeat = fleet.heartbeat, usesVehicle(heartbeat.payload) {
            context.error(path.appending("heartbeat").appending("payload"), "{vehicle.*} is for publish payloads only")
        }
    }
}

/// A publish stream's store-and-forward while its client is offline (`offline`).
public struct OfflineBuffering: Equatable, Sendable {
    public enum Overflow: String, Equatable, Sendable {
        case dropOldest = "drop_oldest"
        case dropNewest = "drop_newest"
    }

    /// Messages the buffer holds.
    public var buffer: Int
    public var overflow: Overflow
}

extension ScenarioDecoder {
    /// `tls.mint`: `{"ca_cert": FILE, "ca_key": FILE}` (relative to the scenario file's directory).
    func decodeMinting(_ value: JSONValue, _ path: JSONPath) -> CertificateMinting? {
        guard let object = context.object(value, path, allowed: ["ca_cert", "ca_key"]) else { return nil }
        let certificate = object.required("ca_cert", "the test CA's certificate (PEM)", context.nonEmptyString)
        let key = object.required("ca_key", "the test CA's private key (PEM)", context.nonEmptyString)
        guard let certificate, let key else { return nil }
        return CertificateMinting(caCertificate: resolve(certificate), caKey: resolve(key))
    }
}
