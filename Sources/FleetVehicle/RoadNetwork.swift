/// The roads vehicles drive on: nodes (junctions and shape points) joined by straight segments, each with a
/// speed limit and a tunnel flag. Immutable once built and shared by every vehicle of a fleet and every lane.
///
/// A route file with one line is a network whose nodes all have two neighbours: vehicles drive it to the end,
/// turn and drive back. Lines that share an end point (after rounding to 1e-7 degrees, about 1 cm) share that
/// node, so a file of several streets, or a generated town, is a graph that vehicles wander through, choosing a
/// road at every junction.
///
/// Positions between two nodes are interpolated linearly in latitude and longitude; segment lengths are
/// great-circle (haversine) distances, so a straight line between two reported positions is never longer than
/// the road driven between them. Segments longer than `RoadNetworkBuilder.maximumSegmentLength` are split, which
/// bounds how far a vehicle drives between two decisions (trip end, low battery).
public final class RoadNetwork: Sendable {
    public struct Node: Sendable, Equatable {
        public let latitude: Double
        public let longitude: Double
    }

    /// A straight piece of road between two nodes, driven in either direction.
    public struct Segment: Sendable, Equatable {
        public let from: UInt32
        public let to: UInt32
        /// Great-circle length in metres (> 0).
        public let length: Double
        /// Degrees clockwise from north when driven from `from` to `to`, and the other way.
        public let bearing: Float
        public let reverseBearing: Float
        /// Metres per second.
        public let speedLimit: Float
        /// For turning metres of GNSS noise into degrees of longitude along this segment.
        let metresPerDegreeLongitude: Float
        public let isTunnel: Bool

        public var speedLimitKmh: Double { Double(speedLimit) * 3.6 }
    }

    /// Where the roads came from, for reports: a file path or "generated: ...".
    public let source: String
    public let nodes: [Node]
    public let segments: [Segment]
    /// Directed segments leaving each node: `outgoing[outgoingStart[n] ..< outgoingStart[n + 1]]`.
    let outgoingStart: [UInt32]
    /// A directed segment is `segment << 1`, driven from `from` to `to`, or `segment << 1 | 1`, the other way.
    let outgoing: [UInt32]
    /// Running sum of segment lengths, for placing vehicles uniformly along the roads.
    let cumulativeLength: [Double]
    /// Total road length in metres.
    public let totalLength: Double
    public let longestSegment: Double
    /// Total length of the tunnel segments in metres.
    public let tunnelLength: Double
    /// Nodes where traffic may have to stop: junctions of three or more roads and traffic signals.
    let stopsTraffic: [Bool]

    init(source: String, nodes: [Node], segments: [Segment], signals: Set<UInt32> = []) {
        self.source = source
        self.nodes = nodes
        self.segments = segments
        var degree = [UInt32](repeating: 0, count: nodes.count + 1)
        for segment in segments {
            degree[Int(segment.from)] += 1
            degree[Int(segment.to)] += 1
        }
        var start = [UInt32](repeating: 0, count: nodes.count + 1)
        for node in 0..<nodes.count { start[node + 1] = start[node] + degree[node] }
        var fill = start
        var outgoing = [UInt32](repeating: 0, count: segments.count * 2)
        for (index, segment) in segments.enumerated() {
            outgoing[Int(fill[Int(segment.from)])] = UInt32(index) << 1
            fill[Int(segment.from)] += 1
            outgoing[Int(fill[Int(segment.to)])] = UInt32(index) << 1 | 1
            fill[Int(segment.to)] += 1
        }
        outgoingStart = start
        self.outgoing = outgoing
        stopsTraffic = (0..<nodes.count).map { degree[$0] >= 3 || signals.contains(UInt32($0)) }
        var running = 0.0
        var cumulative: [Double] = []
        cumulative.reserveCapacity(segments.count)
        var longest = 0.0
        var tunnels = 0.0
        for segment in segments {
            running += segment.length
            cumulative.append(running)
            longest = max(longest, segment.length)
            if segment.isTunnel { tunnels += segment.length }
        }
        cumulativeLength = cumulative
        totalLength = running
        longestSegment = longest
        tunnelLength = tunnels
    }

    /// Bytes held by the network (shared by all vehicles of a fleet).
    public var memoryFootprint: Int {
        nodes.count * MemoryLayout<Node>.stride + segments.count * MemoryLayout<Segment>.stride
            + outgoingStart.count * 4 + outgoing.count * 4 + cumulativeLength.count * 8 + stopsTraffic.count
    }

    /// Whether vehicles may have to wait at this node: a junction of three or more roads, or a traffic signal.
    public func stopsTraffic(at node: Int) -> Bool { stopsTraffic[node] }

    /// Number of segments meeting at a node.
    public func degree(of node: Int) -> Int { Int(outgoingStart[node + 1] - outgoingStart[node]) }

    // MARK: Directed segments

    @inline(__always)
    static func segmentIndex(_ directed: UInt32) -> Int { Int(directed >> 1) }

    @inline(__always)
    static func isReversed(_ directed: UInt32) -> Bool { directed & 1 != 0 }

    @inline(__always)
    static func reversed(_ directed: UInt32) -> UInt32 { directed ^ 1 }

    /// The node a directed segment leads to.
    @inline(__always)
    func endNode(of directed: UInt32) -> Int {
        let segment = segments[Self.segmentIndex(directed)]
        return Int(Self.isReversed(directed) ? segment.from : segment.to)
    }

    /// The segment whose length range holds `distance` along the concatenated roads, and the offset inside it.
    func segment(atDistance distance: Double) -> (index: Int, offset: Double) {
        var low = 0
        var high = cumulativeLength.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulativeLength[middle] <= distance { low = middle + 1 } else { high = middle }
        }
        let before = low == 0 ? 0 : cumulativeLength[low - 1]
        return (low, min(max(0, distance - before), segments[low].length))
    }
}

/// Why a network could not be built.
public struct RoadNetworkError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Collects polylines into a `RoadNetwork`, joining lines at shared points.
public struct RoadNetworkBuilder: Sendable {
    /// Longer segments are split into equal pieces no longer than this (metres).
    public static let maximumSegmentLength = 500.0
    /// Positions closer than this (degrees, about 1 cm) are one node.
    static let nodeResolution = 1e-7

    private struct NodeKey: Hashable {
        let latitude: Int64
        let longitude: Int64
    }

    private var nodes: [RoadNetwork.Node] = []
    private var nodeIndex: [NodeKey: UInt32] = [:]
    private var segments: [RoadNetwork.Segment] = []
    private var signals: Set<UInt32> = []

    public init() {}

    /// Marks the node at this position as a traffic signal (vehicles may wait there as at a junction).
    /// Returns false when no line passes through the position.
    @discardableResult
    public mutating func addTrafficSignal(latitude: Double, longitude: Double) -> Bool {
        guard let node = nodeIndex[key(latitude: latitude, longitude: longitude)] else { return false }
        signals.insert(node)
        return true
    }

    public var segmentCount: Int { segments.count }

    /// Adds a line through `points` (latitude, longitude in degrees). Repeated consecutive points are skipped.
    /// Returns the number of segments added (0 when the line has fewer than two distinct points).
    @discardableResult
    public mutating func addPolyline(
        _ points: [(latitude: Double, longitude: Double)], speedLimitKmh: Double, tunnel: Bool
    ) -> Int {
        var added = 0
        var previous: UInt32?
        for point in points {
            let node = nodeID(latitude: point.latitude, longitude: point.longitude)
            if let previous, previous != node {
                added += addStraight(from: previous, to: node, speedLimitKmh: speedLimitKmh, tunnel: tunnel)
            }
            previous = node
        }
        return added
    }

    public func build(source: String) throws(RoadNetworkError) -> RoadNetwork {
        guard !segments.isEmpty else { throw RoadNetworkError("no road segments (a line needs two distinct points)") }
        guard segments.count < 1 << 30 else { throw RoadNetworkError("too many road segments (\(segments.count); at most 2^30)") }
        return RoadNetwork(source: source, nodes: nodes, segments: segments, signals: signals)
    }

    private func key(latitude: Double, longitude: Double) -> NodeKey {
        NodeKey(
            latitude: Int64((latitude / Self.nodeResolution).rounded()),
            longitude: Int64((longitude / Self.nodeResolution).rounded()))
    }

    private mutating func nodeID(latitude: Double, longitude: Double) -> UInt32 {
        let key = key(latitude: latitude, longitude: longitude)
        if let known = nodeIndex[key] { return known }
        let id = UInt32(nodes.count)
        nodes.append(RoadNetwork.Node(latitude: latitude, longitude: longitude))
        nodeIndex[key] = id
        return id
    }

    /// One straight piece, split into equal parts when longer than the maximum.
    private mutating func addStraight(from: UInt32, to: UInt32, speedLimitKmh: Double, tunnel: Bool) -> Int {
        let a = nodes[Int(from)]
        let b = nodes[Int(to)]
        let length = Geodesy.distance(
            latitude1: a.latitude, longitude1: a.longitude, latitude2: b.latitude, longitude2: b.longitude)
        let pieces = max(1, Int((length / Self.maximumSegmentLength).rounded(.up)))
        var previous = from
        var added = 0
        for piece in 1...pieces {
            let next: UInt32
            if piece == pieces {
                next = to
            } else {
                let fraction = Double(piece) / Double(pieces)
                next = nodeID(
                    latitude: a.latitude + fraction * (b.latitude - a.latitude),
                    longitude: a.longitude + fraction * (b.longitude - a.longitude))
            }
            if next != previous, appendSegment(from: previous, to: next, speedLimitKmh: speedLimitKmh, tunnel: tunnel) {
                added += 1
            }
            previous = next
        }
        return added
    }

    private mutating func appendSegment(from: UInt32, to: UInt32, speedLimitKmh: Double, tunnel: Bool) -> Bool {
        let a = nodes[Int(from)]
        let b = nodes[Int(to)]
        let length = Geodesy.distance(
            latitude1: a.latitude, longitude1: a.longitude, latitude2: b.latitude, longitude2: b.longitude)
        guard length > 0 else { return false }
        segments.append(RoadNetwork.Segment(
            from: from, to: to, length: length,
            bearing: Self.degrees(Geodesy.bearing(
                latitude1: a.latitude, longitude1: a.longitude, latitude2: b.latitude, longitude2: b.longitude)),
            reverseBearing: Self.degrees(Geodesy.bearing(
                latitude1: b.latitude, longitude1: b.longitude, latitude2: a.latitude, longitude2: a.longitude)),
            speedLimit: Float(speedLimitKmh / 3.6),
            metresPerDegreeLongitude: Float(Geodesy.metresPerDegreeLongitude(atLatitude: (a.latitude + b.latitude) / 2)),
            isTunnel: tunnel))
        return true
    }

    /// A bearing as Float, kept in [0, 360): 359.99999999 would round up to 360 in single precision.
    private static func degrees(_ value: Double) -> Float {
        let single = Float(value)
        return single >= 360 ? 0 : single
    }
}
