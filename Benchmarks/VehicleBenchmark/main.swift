// Vehicle model benchmark: ns and allocations per sample, and bytes per vehicle, for a fleet of 100,000 vehicles
// sampled as the engine will sample them (one sample per rendered message, in time order).
//
//   swift build -c release --product VehicleBenchmark
//   .build/release/VehicleBenchmark [vehicles] [--route PATH]
import CAllocCounter
import FleetVehicle
import Glibc

nonisolated(unsafe) var sink = 0.0

func now() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text : text + String(repeating: " ", count: width - text.count) }

func fixed(_ value: Double, _ decimals: Int) -> String {
    var buffer: [UInt8] = []
    VehicleField.appendFixed(value, decimals: decimals, to: &buffer)
    return String(decoding: buffer, as: UTF8.self)
}

var vehicleCount = 100_000
var routePath = "scenarios/routes/munich.geojson"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument == "--route", let path = arguments.popFirst() { routePath = path } else if let count = Int(argument) { vehicleCount = count }
}

/// Samples every vehicle once per `step` seconds for `rounds` rounds; returns (ns per sample, allocations per sample).
func measure(_ vehicles: inout ContiguousArray<Vehicle>, model: VehicleModel, from start: Double, step: Double, rounds: Int,
             render: Bool) -> (nanoseconds: Double, allocations: Double, end: Double) {
    var buffer: [UInt8] = []
    buffer.reserveCapacity(256)
    let fields: [VehicleField] = [.latitude, .longitude, .heading, .speedKmh, .odometerKm, .soc, .ignition, .charging]
    var time = start
    let allocationsBefore = fb_alloc_count()
    let began = now()
    for _ in 0..<rounds {
        time += step
        let nanoseconds = UInt64(time * 1e9)
        for index in vehicles.indices {
            let sample = vehicles[index].sample(at: nanoseconds, model: model)
            if render {
                buffer.removeAll(keepingCapacity: true)
                for field in fields { field.append(sample, to: &buffer) }
                sink += Double(buffer.count)
            } else {
                sink += sample.latitude + sample.odometerKm + sample.soc
            }
        }
    }
    let elapsed = Double(now() - began)
    let samples = Double(rounds * vehicles.count)
    return (elapsed / samples, Double(fb_alloc_count() - allocationsBefore) / samples, time)
}

func run(_ name: String, network: RoadNetwork, vehicleCount: Int) throws {
    let model = try VehicleModel(network: network, configuration: VehicleConfiguration(), seed: 42)
    let started = now()
    var vehicles = ContiguousArray<Vehicle>()
    vehicles.reserveCapacity(vehicleCount)
    for index in 0..<vehicleCount { vehicles.append(Vehicle(model: model, index: index)) }
    let setup = Double(now() - started) / Double(vehicleCount)
    print("\(name): \(network.segments.count) segments, \(Int(network.totalLength / 1000)) km, network \(network.memoryFootprint) bytes shared")
    print("  \(vehicleCount) vehicles: \(MemoryLayout<Vehicle>.stride) bytes each, \(MemoryLayout<Vehicle>.stride * vehicleCount / 1024) KiB in all; creating one: \(fixed(setup, 0)) ns")
    // Warm up: the first samples finish the legs under way at the start.
    var time = measure(&vehicles, model: model, from: 0, step: 1, rounds: 5, render: false).end
    for (label, step, rounds, render) in [
        ("sample every 1 s", 1.0, 60, false), ("sample every 10 s", 10.0, 30, false),
        ("sample every 60 s", 60.0, 10, false), ("sample + print 8 fields, every 1 s", 1.0, 30, true),
    ] {
        let result = measure(&vehicles, model: model, from: time, step: step, rounds: rounds, render: render)
        time = result.end
        print("  \(pad(label, 36)) \(pad(fixed(result.nanoseconds, 1), 6)) ns/sample  \(fixed(result.allocations, 4)) allocations/sample")
    }
}

do {
    try run("route \(routePath)", network: RoadNetwork.loadGeoJSON(path: routePath), vehicleCount: vehicleCount)
    try run("generated town, 5 km radius", network: RoadNetwork.generated(GeneratedRoads(
        centerLatitude: 48.137, centerLongitude: 11.575, radius: 5000, tunnelFraction: 0.05, seed: 1)), vehicleCount: vehicleCount)
} catch {
    print("error: \(error)")
    exit(1)
}
if sink == 42 { print("") }
