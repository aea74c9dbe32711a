import FleetJSON

/// A problem in a route file: `file:line:column: json.path: message`, like scenario diagnostics.
public struct RouteFileDiagnostic: Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var position: JSONPosition
    /// nil for problems of the text itself (JSON syntax, unreadable file).
    public var path: JSONPath?
    public var message: String

    public var description: String {
        let location = "\(file):\(position.line):\(position.column)"
        return path.map { "\(location): \($0): \(message)" } ?? "\(location): \(message)"
    }
}

/// Every problem found in a route file, in file order.
public struct RouteFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public var diagnostics: [RouteFileDiagnostic]
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// Reading roads from GeoJSON (RFC 7946).
///
/// Accepted: a FeatureCollection, a Feature or a bare geometry; LineString and MultiLineString geometries (also
/// inside a GeometryCollection) become roads; Point, MultiPoint, Polygon and MultiPolygon are skipped (markers and
/// areas are common in exported files). Positions are `[longitude, latitude]` or `[longitude, latitude, altitude]`
/// (the altitude is ignored). A Feature's properties apply to all of its lines:
///
/// - `tunnel`: `true`/`false` or OpenStreetMap's `"yes"`/`"no"`/`"building_passage"`: the vehicle is in a tunnel
///   on these segments.
/// - `maxspeed`: the speed limit as OpenStreetMap writes it: a number or `"50"` (km/h), `"30 mph"`, `"none"`
///   (no limit: the vehicle's own top speed).
/// - `highway`: OpenStreetMap's road class gives the limit when `maxspeed` is absent (urban defaults, see
///   `defaultSpeedLimits`); otherwise the caller's default applies.
///
/// Other properties (`name`, ...) are ignored. Give a stretch of a street its own Feature to mark it as a
/// tunnel or give it another limit. A Point feature with `"highway": "traffic_signals"` (OpenStreetMap's tag)
/// marks a traffic light: it must lie on a line's position, and vehicles may wait there as at a junction.
extension RoadNetwork {
    /// Speed limits in km/h by OpenStreetMap `highway` class, used when a feature has no `maxspeed`. Urban values
    /// as in Germany (built-up areas 50, residential zones 30); motorways and trunks as their advisory speeds.
    public static let defaultSpeedLimits: [String: Double] = [
        "motorway": 120, "motorway_link": 80, "trunk": 100, "trunk_link": 60,
        "primary": 50, "primary_link": 50, "secondary": 50, "secondary_link": 50,
        "tertiary": 50, "tertiary_link": 50, "unclassified": 50, "residential": 30,
        "living_street": 7, "service": 20, "track": 20,
    ]

    /// "No limit" (`maxspeed: "none"`): far above any vehicle's top speed, which then decides.
    static let unlimitedSpeedKmh = 1000.0

    /// Reads and parses a GeoJSON route file.
    public static func loadGeoJSON(path: String, defaultSpeedLimitKmh: Double = 50) throws(RouteFileError) -> RoadNetwork {
        let document: JSONDocument
        do {
            document = try JSONDocument.load(path: path)
        } catch {
            throw RouteFileError(diagnostics: [
                RouteFileDiagnostic(file: error.file, position: error.position, path: nil, message: error.message),
            ])
        }
        return try parseGeoJSON(document, defaultSpeedLimitKmh: defaultSpeedLimitKmh)
    }

    /// Builds a network from a parsed GeoJSON document; every problem is reported at its position.
    public static func parseGeoJSON(_ document: JSONDocument, defaultSpeedLimitKmh: Double = 50) throws(RouteFileError) -> RoadNetwork {
        var reader = GeoJSONReader(document: document, defaultSpeedLimitKmh: defaultSpeedLimitKmh)
        reader.readRoot()
        reader.placeSignals()
        if reader.diagnostics.isEmpty && reader.builder.segmentCount == 0 {
            reader.report(.root, "no roads: expected at least one LineString or MultiLineString with two distinct positions")
        }
        guard reader.diagnostics.isEmpty else {
            throw RouteFileError(diagnostics: reader.diagnostics.sorted {
                ($0.position.line, $0.position.column) < ($1.position.line, $1.position.column)
            })
        }
        do {
            return try reader.builder.build(source: document.file)
        } catch {
            throw RouteFileError(diagnostics: [
                RouteFileDiagnostic(file: document.file, position: JSONPosition(line: 1, column: 1), path: .root, message: error.message),
            ])
        }
    }
}

/// Walks the GeoJSON tree, feeding lines to the builder and collecting problems.
private struct GeoJSONReader {
    let document: JSONDocument
    let defaultSpeedLimitKmh: Double
    var builder = RoadNetworkBuilder()
    var diagnostics: [RouteFileDiagnostic] = []
    /// Traffic signal points, placed once every line is known (a file may list them first).
    var signals: [(latitude: Double, longitude: Double, path: JSONPath)] = []

    init(document: JSONDocument, defaultSpeedLimitKmh: Double) {
        self.document = document
        self.defaultSpeedLimitKmh = defaultSpeedLimitKmh
    }

    mutating func report(_ path: JSONPath, _ message: String) {
        diagnostics.append(RouteFileDiagnostic(
            file: document.file, position: document.position(of: path), path: path, message: message))
    }

    mutating func expected(_ what: String, _ path: JSONPath, got value: JSONValue) {
        report(path, "expected \(what), got \(value.kindDescription)")
    }

    /// The object's "type" member, reported when missing or not a string.
    mutating func type(of value: JSONValue, _ path: JSONPath) -> String? {
        guard case .object = value else {
            expected("a GeoJSON object (FeatureCollection, Feature or geometry)", path, got: value)
            return nil
        }
        guard let type = value["type"] else {
            report(path, "missing required key 'type'")
            return nil
        }
        guard case .string(let name) = type else {
            expected("a string", path.appending("type"), got: type)
            return nil
        }
        return name
    }

    mutating func readRoot() {
        let root = document.root
        guard let type = type(of: root, .root) else { return }
        switch type {
        case "FeatureCollection":
            guard let features = root["features"] else {
                report(.root, "missing required key 'features'")
                return
            }
            guard case .array(let elements) = features else {
                expected("an array of Features", JSONPath.root.appending("features"), got: features)
                return
            }
            for (index, feature) in elements.enumerated() {
                readFeature(feature, JSONPath.root.appending("features").appending(index: index))
            }
        case "Feature":
            readFeature(root, .root)
        default:
            readGeometry(root, .root, type: type, road: RoadProperties(speedLimitKmh: defaultSpeedLimitKmh, tunnel: false))
        }
    }

    mutating func readFeature(_ feature: JSONValue, _ path: JSONPath) {
        guard let type = type(of: feature, path) else { return }
        guard type == "Feature" else {
            report(path.appending("type"), "expected \"Feature\", got \"\(type)\"")
            return
        }
        let road = readProperties(feature["properties"], path.appending("properties"))
        guard let geometry = feature["geometry"] else {
            report(path, "missing required key 'geometry' (null for a feature without one)")
            return
        }
        if geometry == .null { return }
        let geometryPath = path.appending("geometry")
        guard let geometryType = self.type(of: geometry, geometryPath) else { return }
        guard let road else { return }
        if geometryType == "Point", case .object = feature["properties"] ?? .null,
            feature["properties"]?["highway"] == .string("traffic_signals")
        {
            guard let coordinates = geometry["coordinates"] else {
                report(geometryPath, "missing required key 'coordinates'")
                return
            }
            let path = geometryPath.appending("coordinates")
            if let point = readPosition(coordinates, path) { signals.append((point.latitude, point.longitude, path)) }
            return
        }
        readGeometry(geometry, geometryPath, type: geometryType, road: road)
    }

    mutating func placeSignals() {
        for signal in signals where !builder.addTrafficSignal(latitude: signal.latitude, longitude: signal.longitude) {
            report(signal.path, "this traffic signal is not on any line: it must repeat one of a line's positions")
        }
    }

    struct RoadProperties {
        var speedLimitKmh: Double
        var tunnel: Bool
    }

    /// nil after reporting a bad property.
    mutating func readProperties(_ value: JSONValue?, _ path: JSONPath) -> RoadProperties? {
        var road = RoadProperties(speedLimitKmh: defaultSpeedLimitKmh, tunnel: false)
        guard let value, value != .null else { return road }
        guard case .object = value else {
            expected("an object or null", path, got: value)
            return nil
        }
        var valid = true
        if let tunnel = value["tunnel"] {
            switch tunnel {
            case .bool(let flag): road.tunnel = flag
            case .string("yes"), .string("building_passage"): road.tunnel = true
            case .string("no"): road.tunnel = false
            default:
                expected("true, false, \"yes\", \"no\" or \"building_passage\"", path.appending("tunnel"), got: tunnel)
                valid = false
            }
        }
        if let maxspeed = value["maxspeed"] {
            if let limit = Self.speedLimit(maxspeed) {
                road.speedLimitKmh = limit
            } else {
                expected("a speed limit in km/h greater than 0 (a number, \"50\", \"30 mph\" or \"none\")",
                         path.appending("maxspeed"), got: maxspeed)
                valid = false
            }
        } else if case .string(let highway)? = value["highway"], let limit = RoadNetwork.defaultSpeedLimits[highway] {
            road.speedLimitKmh = limit
        }
        return valid ? road : nil
    }

    /// OpenStreetMap's maxspeed forms: 50, "50", "50 km/h", "30 mph", "none".
    static func speedLimit(_ value: JSONValue) -> Double? {
        switch value {
        case .integer, .real:
            guard let number = value.numberValue, number.isFinite, number > 0 else { return nil }
            return number
        case .string("none"):
            return RoadNetwork.unlimitedSpeedKmh
        case .string(let text):
            var digits = Substring(text)
            var factor = 1.0
            if digits.hasSuffix(" mph") {
                digits = digits.dropLast(4)
                factor = 1.609344
            } else if digits.hasSuffix(" km/h") {
                digits = digits.dropLast(5)
            }
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                let number = Double(digits), number.isFinite, number > 0
            else { return nil }
            return number * factor
        default:
            return nil
        }
    }

    mutating func readGeometry(_ geometry: JSONValue, _ path: JSONPath, type: String, road: RoadProperties) {
        switch type {
        case "LineString":
            guard let coordinates = coordinates(of: geometry, path) else { return }
            readLine(coordinates, path.appending("coordinates"), road: road)
        case "MultiLineString":
            guard let coordinates = coordinates(of: geometry, path) else { return }
            for (index, line) in coordinates.enumerated() {
                let linePath = path.appending("coordinates").appending(index: index)
                guard case .array(let positions) = line else {
                    expected("an array of positions", linePath, got: line)
                    continue
                }
                readLine(positions, linePath, road: road)
            }
        case "GeometryCollection":
            guard let geometries = geometry["geometries"] else {
                report(path, "missing required key 'geometries'")
                return
            }
            guard case .array(let members) = geometries else {
                expected("an array of geometries", path.appending("geometries"), got: geometries)
                return
            }
            for (index, member) in members.enumerated() {
                let memberPath = path.appending("geometries").appending(index: index)
                guard let memberType = self.type(of: member, memberPath) else { continue }
                readGeometry(member, memberPath, type: memberType, road: road)
            }
        case "Point", "MultiPoint", "Polygon", "MultiPolygon":
            return  // markers and areas: not roads
        case "FeatureCollection", "Feature":
            report(path.appending("type"), "expected a geometry here, got \"\(type)\"")
        default:
            report(path.appending("type"), "unknown GeoJSON type \"\(type)\"; expected FeatureCollection, Feature, LineString, MultiLineString or GeometryCollection")
        }
    }

    mutating func coordinates(of geometry: JSONValue, _ path: JSONPath) -> [JSONValue]? {
        guard let coordinates = geometry["coordinates"] else {
            report(path, "missing required key 'coordinates'")
            return nil
        }
        guard case .array(let elements) = coordinates else {
            expected("an array", path.appending("coordinates"), got: coordinates)
            return nil
        }
        return elements
    }

    mutating func readLine(_ positions: [JSONValue], _ path: JSONPath, road: RoadProperties) {
        guard positions.count >= 2 else {
            report(path, "a line needs at least 2 positions, got \(positions.count)")
            return
        }
        var points: [(latitude: Double, longitude: Double)] = []
        points.reserveCapacity(positions.count)
        var valid = true
        for (index, position) in positions.enumerated() {
            if let point = readPosition(position, path.appending(index: index)) {
                points.append(point)
            } else {
                valid = false
            }
        }
        guard valid else { return }
        if builder.addPolyline(points, speedLimitKmh: road.speedLimitKmh, tunnel: road.tunnel) == 0 {
            report(path, "all positions of this line are the same point")
        }
    }

    mutating func readPosition(_ value: JSONValue, _ path: JSONPath) -> (latitude: Double, longitude: Double)? {
        let what = "a position [longitude, latitude] (RFC 7946 §3.1.1: longitude first)"
        guard case .array(let numbers) = value, (2...3).contains(numbers.count),
            let longitude = numbers[0].numberValue, let latitude = numbers[1].numberValue,
            numbers.count == 2 || numbers[2].numberValue != nil
        else {
            expected(what, path, got: value)
            return nil
        }
        guard (-180...180).contains(longitude) else {
            report(path.appending(index: 0), "longitude \(JSONWriter.formatReal(longitude)) is outside -180...180")
            return nil
        }
        guard (-90...90).contains(latitude) else {
            report(path.appending(index: 1), "latitude \(JSONWriter.formatReal(latitude)) is outside -90...90 (positions are [longitude, latitude])")
            return nil
        }
        return (latitude, longitude)
    }
}
