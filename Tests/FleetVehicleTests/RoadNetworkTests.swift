import FleetJSON
import Foundation
import Testing
@testable import FleetVehicle

/// The repository root, found from this file's path (tests run from any directory).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

func parseRoute(_ text: String) throws(RouteFileError) -> RoadNetwork {
    let document: JSONDocument
    do {
        document = try JSONDocument.parse(text: text, file: "route.geojson")
    } catch {
        throw RouteFileError(diagnostics: [RouteFileDiagnostic(file: error.file, position: error.position, path: nil, message: error.message)])
    }
    return try RoadNetwork.parseGeoJSON(document)
}

func routeErrors(_ text: String) -> String? {
    do {
        _ = try parseRoute(text)
        return nil
    } catch {
        return error.description
    }
}

@Suite("RoadNetwork: roads from lines, GeoJSON files and generated towns")
struct RoadNetworkTests {
    @Test("lines sharing an end point share its node; repeated points add nothing; long pieces are split")
    func builderJoinsAndSplits() throws {
        var builder = RoadNetworkBuilder()
        // 0.01° of latitude is 1111.95 m on the model's sphere: split into 3 pieces of 370.65 m.
        #expect(builder.addPolyline([(48.0, 11.0), (48.0, 11.0), (48.01, 11.0)], speedLimitKmh: 50, tunnel: false) == 3)
        #expect(builder.addPolyline([(48.01, 11.0), (48.01, 11.001)], speedLimitKmh: 30, tunnel: true) == 1)
        #expect(builder.addPolyline([(48.01, 11.0), (48.011, 11.0)], speedLimitKmh: 30, tunnel: false) == 1)
        #expect(builder.addPolyline([(47.0, 10.0), (47.0, 10.0)], speedLimitKmh: 30, tunnel: false) == 0)
        let network = try builder.build(source: "test")
        #expect(network.segments.count == 5)
        // Nodes: 48.0, two split points, 48.01 (shared by all three lines), 11.001 end, 48.011 end, and the
        // degenerate line's single point.
        #expect(network.nodes.count == 7)
        let shared = try #require(network.nodes.firstIndex(of: RoadNetwork.Node(latitude: 48.01, longitude: 11.0)))
        #expect(network.degree(of: shared) == 3)
        #expect(network.stopsTraffic(at: shared))
        let pieces = network.segments.prefix(3).map(\.length)
        #expect(pieces.allSatisfy { abs($0 - 1111.95 / 3) < 0.01 })
        #expect(abs(network.totalLength - pieces.reduce(0, +) - network.segments[3].length - network.segments[4].length) < 1e-9)
        #expect(network.segments[0].bearing == 0 && network.segments[0].reverseBearing == 180)
        #expect(network.segments[3].isTunnel && !network.segments[4].isTunnel)
        #expect(abs(network.segments[3].speedLimitKmh - 30) < 1e-4)
        #expect(abs(network.tunnelLength - network.segments[3].length) < 1e-9)
        #expect(network.longestSegment == pieces.max())
    }

    @Test("GeoJSON: LineString and MultiLineString features with maxspeed, highway and tunnel properties")
    func geoJSONProperties() throws {
        let network = try parseRoute("""
            {"type": "FeatureCollection", "features": [
              {"type": "Feature", "properties": {"maxspeed": 60, "name": "Ring"},
               "geometry": {"type": "LineString", "coordinates": [[11.0, 48.0], [11.001, 48.0, 520.5]]}},
              {"type": "Feature", "properties": {"maxspeed": "30 mph", "tunnel": "yes"},
               "geometry": {"type": "MultiLineString", "coordinates": [[[11.001, 48.0], [11.002, 48.0]], [[11.002, 48.0], [11.003, 48.0]]]}},
              {"type": "Feature", "properties": {"highway": "residential", "tunnel": false},
               "geometry": {"type": "GeometryCollection", "geometries": [{"type": "LineString", "coordinates": [[11.003, 48.0], [11.004, 48.0]]}]}},
              {"type": "Feature", "properties": {"maxspeed": "none"}, "geometry": {"type": "LineString", "coordinates": [[11.004, 48.0], [11.005, 48.0]]}},
              {"type": "Feature", "properties": null, "geometry": {"type": "LineString", "coordinates": [[11.005, 48.0], [11.006, 48.0]]}},
              {"type": "Feature", "properties": {"name": "a marker"}, "geometry": {"type": "Point", "coordinates": [11.0, 48.0]}},
              {"type": "Feature", "properties": {"highway": "traffic_signals"}, "geometry": {"type": "Point", "coordinates": [11.002, 48.0]}},
              {"type": "Feature", "properties": {}, "geometry": null}
            ]}
            """)
        #expect(network.segments.count == 6)
        let limits = network.segments.map { ($0.speedLimitKmh * 1000).rounded() / 1000 }
        #expect(limits == [60, 48.28, 48.28, 30, 1000, 50])
        #expect(network.segments.map(\.isTunnel) == [false, true, true, false, false, false])
        #expect(network.nodes.count == 7)
        // Only the signal stops traffic: every node of this single line has at most two roads.
        #expect((0..<network.nodes.count).filter { network.stopsTraffic(at: $0) }.map { network.nodes[$0].longitude } == [11.002])
        #expect(network.source == "route.geojson")
    }

    @Test("GeoJSON: a bare LineString and a single Feature are routes too")
    func geoJSONBareGeometry() throws {
        #expect(try parseRoute(#"{"type": "LineString", "coordinates": [[0, 0], [0.001, 0]]}"#).segments.count == 1)
        #expect(try parseRoute(#"{"type": "Feature", "properties": {"tunnel": true}, "geometry": {"type": "LineString", "coordinates": [[0, 0], [0.001, 0]]}}"#).segments.map(\.isTunnel) == [true])
    }

    @Test("GeoJSON: every problem is reported with file:line:column and its JSON path")
    func geoJSONErrors() {
        let text = """
            {"type": "FeatureCollection", "features": [
              {"type": "Feature", "properties": {"maxspeed": "fast", "tunnel": 1},
               "geometry": {"type": "LineString", "coordinates": [[11.0, 48.0], [11.001, 48.0]]}},
              {"type": "Feature", "properties": null,
               "geometry": {"type": "LineString", "coordinates": [[48.0, 11.0], [11.0, 95.0], "x"]}},
              {"type": "Feature", "properties": null, "geometry": {"type": "LineString", "coordinates": [[11.0, 48.0]]}},
              {"type": "Feature", "properties": null, "geometry": {"type": "LineString", "coordinates": [[11.0, 48.0], [11.0, 48.0]]}},
              {"type": "Feature", "properties": null, "geometry": {"type": "Polyline", "coordinates": []}},
              {"type": "Feature", "properties": {"highway": "traffic_signals"}, "geometry": {"type": "Point", "coordinates": [12.0, 48.0]}},
              {"type": "Feature", "geometry": {"coordinates": []}},
              {"type": "Line"}
            ]}
            """
        #expect(routeErrors(text) == """
            route.geojson:2:50: features[0].properties.maxspeed: expected a speed limit in km/h greater than 0 (a number, "50", "30 mph" or "none"), got string "fast"
            route.geojson:2:68: features[0].properties.tunnel: expected true, false, "yes", "no" or "building_passage", got integer 1
            route.geojson:5:76: features[1].geometry.coordinates[1][1]: latitude 95 is outside -90...90 (positions are [longitude, latitude])
            route.geojson:5:83: features[1].geometry.coordinates[2]: expected a position [longitude, latitude] (RFC 7946 §3.1.1: longitude first), got string "x"
            route.geojson:6:93: features[2].geometry.coordinates: a line needs at least 2 positions, got 1
            route.geojson:7:93: features[3].geometry.coordinates: all positions of this line are the same point
            route.geojson:8:64: features[4].geometry.type: unknown GeoJSON type "Polyline"; expected FeatureCollection, Feature, LineString, MultiLineString or GeometryCollection
            route.geojson:9:114: features[5].geometry.coordinates: this traffic signal is not on any line: it must repeat one of a line's positions
            route.geojson:10:35: features[6].geometry: missing required key 'type'
            route.geojson:11:12: features[7].type: expected "Feature", got "Line"
            """)
    }

    @Test("GeoJSON: a file that is not a road network says why", arguments: [
        (#"[1, 2]"#, #"route.geojson:1:1: $: expected a GeoJSON object (FeatureCollection, Feature or geometry), got array"#),
        (#"{"type": "FeatureCollection", "features": []}"#, "route.geojson:1:1: $: no roads: expected at least one LineString or MultiLineString with two distinct positions"),
        (#"{"type": "FeatureCollection"}"#, "route.geojson:1:1: $: missing required key 'features'"),
        (#"{"type": "Point", "coordinates": [1, 2]}"#, "route.geojson:1:1: $: no roads: expected at least one LineString or MultiLineString with two distinct positions"),
        (#"{"type": "LineString", "coordinates": [[0, 0], [0.1, 0],]}"#, "route.geojson:1:57: expected a value after ',' (trailing commas are not allowed)"),
    ])
    func geoJSONNotARoute(text: String, message: String) {
        #expect(routeErrors(text) == message)
    }

    @Test("an unreadable route file is reported with the system's reason")
    func missingFile() {
        #expect(throws: RouteFileError.self) { try RoadNetwork.loadGeoJSON(path: "/nonexistent/route.geojson") }
        do {
            _ = try RoadNetwork.loadGeoJSON(path: "/nonexistent/route.geojson")
        } catch {
            #expect(error.description == "/nonexistent/route.geojson:1:1: cannot read file: No such file or directory")
        }
    }

    @Test("the shipped Munich commute: one connected 15 km line with a marked tunnel and traffic signals")
    func munichRoute() throws {
        let network = try RoadNetwork.loadGeoJSON(path: repositoryRoot + "/scenarios/routes/munich.geojson")
        #expect(abs(network.totalLength - 15_180) < 5)
        #expect(abs(network.tunnelLength - 1112) < 5)
        #expect(network.segments.count == 376)
        #expect(network.nodes.count == network.segments.count + 1)  // a single line, no loop
        #expect((0..<network.nodes.count).filter { network.degree(of: $0) == 1 }.count == 2)
        #expect((0..<network.nodes.count).filter { network.stopsTraffic(at: $0) }.count == 12)
        #expect(network.segments.allSatisfy { $0.length < 60 })
        #expect(Set(network.segments.map { Int($0.speedLimitKmh.rounded()) }) == [30, 50, 60])
        #expect(isConnected(network))
    }

    @Test("a generated town is the same for the same seed, differs for another, lies within its radius and is connected")
    func generatedTown() throws {
        let roads = GeneratedRoads(centerLatitude: 48.137, centerLongitude: 11.575, radius: 5000, tunnelFraction: 0.1, seed: 7)
        let town = try RoadNetwork.generated(roads)
        let again = try RoadNetwork.generated(roads)
        var other = roads
        other.seed = 8
        let otherTown = try RoadNetwork.generated(other)
        #expect(town.nodes == again.nodes && town.segments == again.segments)
        #expect(town.nodes != otherTown.nodes)
        #expect(isConnected(town))
        let farthest = town.nodes.map {
            Geodesy.distance(latitude1: 48.137, longitude1: 11.575, latitude2: $0.latitude, longitude2: $0.longitude)
        }.max() ?? 0
        // Junctions may move a fifth of a block (50 m) off the grid, and a diagonal a little more.
        #expect(farthest < 5000 + 0.2 * 250 * 2.0.squareRoot() + 1)
        #expect(farthest > 4500)
        let limits = Set(town.segments.map { Int($0.speedLimitKmh.rounded()) })
        #expect(limits == [30, 50, 70])
        // Main roads and the ring make about 40 % of the length; a tenth of those segments are tunnels.
        let tunnelShare = town.tunnelLength / town.totalLength
        #expect(tunnelShare > 0.02 && tunnelShare < 0.08)
        #expect(town.segments.allSatisfy { !$0.isTunnel || $0.speedLimitKmh > 40 })
        // About π·20² junctions of a 250 m grid in a 5 km radius, plus the ring's 94 nodes.
        #expect(town.nodes.count > 1250 && town.nodes.count < 1400)
        #expect(town.segments.allSatisfy { $0.length <= RoadNetworkBuilder.maximumSegmentLength + 1e-6 })
    }

    @Test("generated town parameters are checked", arguments: [
        (GeneratedRoads(centerLatitude: 91, centerLongitude: 0, radius: 1000), "center: latitude must be within -85...85, got 91.0"),
        (GeneratedRoads(centerLatitude: 0, centerLongitude: 0, radius: 100), "radius: must be at least one block (250.0 m), got 100.0 m"),
        (GeneratedRoads(centerLatitude: 0, centerLongitude: 0, radius: 200_000), "radius: gives more than 1000000 junctions at a 250.0 m block; use a larger block"),
        (GeneratedRoads(centerLatitude: 0, centerLongitude: 0, radius: 1000, tunnelFraction: 2), "tunnels: must be a fraction from 0 to 1, got 2.0"),
    ])
    func generatedTownProblems(roads: GeneratedRoads, message: String) {
        #expect(throws: RoadNetworkError(message)) { try RoadNetwork.generated(roads) }
    }
}

/// Breadth-first search from node 0 reaches every node.
func isConnected(_ network: RoadNetwork) -> Bool {
    var seen = [Bool](repeating: false, count: network.nodes.count)
    var queue = [0]
    seen[0] = true
    while let node = queue.popLast() {
        for slot in Int(network.outgoingStart[node])..<Int(network.outgoingStart[node + 1]) {
            let next = network.endNode(of: network.outgoing[slot])
            if !seen[next] {
                seen[next] = true
                queue.append(next)
            }
        }
    }
    return seen.allSatisfy { $0 }
}
