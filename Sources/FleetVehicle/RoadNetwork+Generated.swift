/// A made-up town around a centre: what `"route": {"generated": {...}}` drives on when no route file is given.
///
/// Streets form a grid of blocks (each junction moved by up to a fifth of a block so the streets are not ruled
/// lines) inside the radius; every fourth street in each direction is a main road. A fifth of the side streets
/// that are not needed to keep the town connected are left out, so vehicles meet T-junctions and dead ends.
/// A ring road at 90 % of the radius, joined to the nearest junctions, carries faster traffic when the town is
/// at least four blocks across. The same parameters and seed give the same town on every machine.
public struct GeneratedRoads: Sendable, Equatable {
    public var centerLatitude: Double
    public var centerLongitude: Double
    public var radius: Double
    /// Street spacing in metres.
    public var block: Double
    /// Share of main-road and ring-road segments that are tunnels, 0 to 1.
    public var tunnelFraction: Double
    /// Limits in km/h of side streets, main roads and the ring road.
    public var sideStreetSpeedKmh: Double
    public var mainRoadSpeedKmh: Double
    public var ringRoadSpeedKmh: Double
    public var seed: UInt64

    /// - Parameters: radius and block in metres.
    public init(
        centerLatitude: Double, centerLongitude: Double, radius: Double, block: Double = 250,
        tunnelFraction: Double = 0, sideStreetSpeedKmh: Double = 30, mainRoadSpeedKmh: Double = 50,
        ringRoadSpeedKmh: Double = 70, seed: UInt64 = 1
    ) {
        self.centerLatitude = centerLatitude
        self.centerLongitude = centerLongitude
        self.radius = radius
        self.block = block
        self.tunnelFraction = tunnelFraction
        self.sideStreetSpeedKmh = sideStreetSpeedKmh
        self.mainRoadSpeedKmh = mainRoadSpeedKmh
        self.ringRoadSpeedKmh = ringRoadSpeedKmh
        self.seed = seed
    }

    /// At most this many junctions (a 110 km radius at the default block).
    public static let maximumJunctions = 1_000_000

    /// Problems with the parameters, as (parameter, message) pairs; empty when the town can be built.
    public var problems: [(parameter: String, message: String)] {
        var found: [(String, String)] = []
        if !(centerLatitude.isFinite && (-85...85).contains(centerLatitude)) {
            found.append(("center", "latitude must be within -85...85, got \(centerLatitude)"))
        }
        if !(centerLongitude.isFinite && (-180...180).contains(centerLongitude)) {
            found.append(("center", "longitude must be within -180...180, got \(centerLongitude)"))
        }
        if !(block.isFinite && block >= 20) { found.append(("block", "must be at least 20 m, got \(block) m")) }
        if !(radius.isFinite && radius >= block && radius > 0) {
            found.append(("radius", "must be at least one block (\(block) m), got \(radius) m"))
        } else if block >= 20, Double.pi * (radius / block) * (radius / block) > Double(Self.maximumJunctions) {
            found.append(("radius", "gives more than \(Self.maximumJunctions) junctions at a \(block) m block; use a larger block"))
        }
        if !(0...1).contains(tunnelFraction) { found.append(("tunnels", "must be a fraction from 0 to 1, got \(tunnelFraction)")) }
        for (name, value) in [("side_street_kmh", sideStreetSpeedKmh), ("main_road_kmh", mainRoadSpeedKmh), ("ring_road_kmh", ringRoadSpeedKmh)]
        where !(value.isFinite && value > 0) {
            found.append((name, "must be a speed greater than 0 km/h, got \(value)"))
        }
        return found
    }
}

extension RoadNetwork {
    /// Builds the town; throws with the first problem of `roads.problems`.
    public static func generated(_ roads: GeneratedRoads) throws(RoadNetworkError) -> RoadNetwork {
        if let problem = roads.problems.first { throw RoadNetworkError("\(problem.parameter): \(problem.message)") }
        var town = TownBuilder(roads: roads)
        town.addGrid()
        town.addRingRoad()
        let source = "generated: \(roads.radius / 1000) km around \(roads.centerLatitude), \(roads.centerLongitude), block \(roads.block) m, seed \(roads.seed)"
        return try town.builder.build(source: source)
    }
}

private struct TownBuilder {
    let roads: GeneratedRoads
    var builder = RoadNetworkBuilder()
    /// Grid junctions by (column, row): their position in metres east and north of the centre.
    var junctions: [GridKey: (east: Double, north: Double)] = [:]
    let extent: Int

    struct GridKey: Hashable {
        let column: Int
        let row: Int
    }

    init(roads: GeneratedRoads) {
        self.roads = roads
        extent = Int(roads.radius / roads.block)
    }

    /// A uniform number in [0, 1) that depends only on the seed and the inputs.
    func unit(_ purpose: UInt64, _ a: Int, _ b: Int) -> Double {
        let key = UInt64(bitPattern: Int64(a)) &* 0x1_0000_0001 ^ UInt64(bitPattern: Int64(b))
        return Double(VehicleRandom.hash(roads.seed, purpose, key) >> 11) * 0x1p-53
    }

    func coordinates(east: Double, north: Double) -> (latitude: Double, longitude: Double) {
        Geodesy.offset(latitude: roads.centerLatitude, longitude: roads.centerLongitude, east: east, north: north)
    }

    mutating func road(from a: (east: Double, north: Double), to b: (east: Double, north: Double), speedKmh: Double, tunnel: Bool) {
        builder.addPolyline(
            [coordinates(east: a.east, north: a.north), coordinates(east: b.east, north: b.north)],
            speedLimitKmh: speedKmh, tunnel: tunnel)
    }

    mutating func addGrid() {
        let block = roads.block
        for column in -extent...extent {
            for row in -extent...extent {
                let east = Double(column) * block
                let north = Double(row) * block
                guard east * east + north * north <= roads.radius * roads.radius else { continue }
                junctions[GridKey(column: column, row: row)] = (
                    east + (unit(1, column, row) - 0.5) * 0.4 * block,
                    north + (unit(2, column, row) - 0.5) * 0.4 * block)
            }
        }
        // Candidate streets: each junction to its east and north neighbour. A random spanning tree (Kruskal on
        // random weights) keeps the town connected; 80 % of the remaining side streets are kept.
        struct Street {
            let a: GridKey
            let b: GridKey
            let main: Bool
            let weight: Double
        }
        var streets: [Street] = []
        for key in junctions.keys.sorted(by: { ($0.column, $0.row) < ($1.column, $1.row) }) {
            let east = GridKey(column: key.column + 1, row: key.row)
            let north = GridKey(column: key.column, row: key.row + 1)
            if junctions[east] != nil {
                streets.append(Street(a: key, b: east, main: key.row % 4 == 0, weight: unit(3, key.column, key.row)))
            }
            if junctions[north] != nil {
                streets.append(Street(a: key, b: north, main: key.column % 4 == 0, weight: unit(4, key.column, key.row)))
            }
        }
        streets.sort { $0.weight < $1.weight }
        // Union-find over junction numbers, with path halving.
        var number: [GridKey: Int] = [:]
        for street in streets {
            if number[street.a] == nil { number[street.a] = number.count }
            if number[street.b] == nil { number[street.b] = number.count }
        }
        var parent = Array(0..<number.count)
        func root(_ start: Int) -> Int {
            var current = start
            while parent[current] != current {
                parent[current] = parent[parent[current]]
                current = parent[current]
            }
            return current
        }
        for street in streets {
            let rootA = root(number[street.a]!)
            let rootB = root(number[street.b]!)
            let joinsParts = rootA != rootB
            if joinsParts { parent[rootA] = rootB }
            // East streets get odd keys, north streets even ones, so each street draws its own numbers.
            let streetKey = street.a.column * 2 + (street.b.column - street.a.column)
            guard joinsParts || street.main || unit(5, streetKey, street.a.row) < 0.8 else { continue }
            let tunnel = street.main && unit(6, streetKey, street.a.row) < roads.tunnelFraction
            road(from: junctions[street.a]!, to: junctions[street.b]!,
                 speedKmh: street.main ? roads.mainRoadSpeedKmh : roads.sideStreetSpeedKmh, tunnel: tunnel)
        }
    }

    mutating func addRingRoad() {
        guard extent >= 2 else { return }
        let ringRadius = 0.9 * roads.radius
        let count = max(12, Int(2 * Double.pi * ringRadius / 300))
        var ring: [(east: Double, north: Double)] = []
        for index in 0..<count {
            let angle = 360 * Double(index) / Double(count)
            ring.append((ringRadius * Geodesy.sine(degrees: angle), ringRadius * Geodesy.cosine(degrees: angle)))
        }
        for index in 0..<count {
            let here = ring[index]
            let next = ring[(index + 1) % count]
            road(from: here, to: next, speedKmh: roads.ringRoadSpeedKmh, tunnel: unit(7, index, 0) < roads.tunnelFraction)
            // Join to the nearest junction so the ring is part of the town.
            let column = Int((here.east / roads.block).rounded())
            let row = Int((here.north / roads.block).rounded())
            var nearest: (east: Double, north: Double)?
            var nearestDistance = Double.infinity
            for dc in -2...2 {
                for dr in -2...2 {
                    guard let junction = junctions[GridKey(column: column + dc, row: row + dr)] else { continue }
                    let distance = (junction.east - here.east) * (junction.east - here.east)
                        + (junction.north - here.north) * (junction.north - here.north)
                    if distance < nearestDistance {
                        nearestDistance = distance
                        nearest = junction
                    }
                }
            }
            if let nearest { road(from: here, to: nearest, speedKmh: roads.mainRoadSpeedKmh, tunnel: false) }
        }
    }
}
