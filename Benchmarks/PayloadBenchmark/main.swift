// Cost of rendering one payload from a template on the engine's per-message path: ns and allocations per
// message, one JSON line per template. Only the engine's public template API, so the same file measures older
// commits too.
// swift run -c release PayloadBenchmark
import CAllocCounter
import FleetEngine
import FleetVehicle

/// Renders `template` `operations` times into one reused buffer (after a warm-up) and prints ns/op and allocs/op.
/// `vehicle`: each message also samples a vehicle one second after the previous message, as the lane does for a
/// `{vehicle.*}` template at one message a second (the vehicle advanced lazily, its legs planned as it goes).
func measure(_ name: String, _ template: PayloadTemplate, clientID: String, operations: Int,
             vehicle: (model: VehicleModel, index: Int)? = nil) {
    var car = vehicle.map { Vehicle(model: $0.model, index: $0.index) }
    var buffer: [UInt8] = []
    buffer.reserveCapacity(512)
    var random = SeededRandom(seed: 42)
    var context = PayloadContext(clientID: Array(clientID.utf8), clientIndex: 7, sequence: 0,
                                 timestampMilliseconds: 1_764_000_000_000)
    var header = EndToEndHeader(streamID: 3, sequence: 0, intendedTime: 1_000_000)
    var checksum = 0
    func renderOne(_ operation: Int) {
        buffer.removeAll(keepingCapacity: true)
        context.sequence = UInt64(operation)
        context.timestampMilliseconds &+= 1
        header.sequence = UInt64(operation)
        if let vehicle, car != nil {
            context.vehicle = car!.sample(at: UInt64(operation) &* 1_000_000_000, model: vehicle.model)
        }
        template.render(into: &buffer, context: context, random: &random, header: header)
        checksum &+= buffer.count
    }
    for operation in 0..<10_000 { renderOne(operation) }
    let clock = ContinuousClock()
    let allocationsBefore = fb_alloc_count()
    let start = clock.now
    for operation in 0..<operations { renderOne(operation) }
    let elapsed = clock.now - start
    let allocations = fb_alloc_count() - allocationsBefore
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    print("{\"benchmark\":\"\(name)\",\"operations\":\(operations),\"ns_per_op\":\(rounded(nanoseconds / Double(operations))),"
        + "\"allocs_per_op\":\(rounded(Double(allocations) / Double(operations))),\"bytes\":\(checksum / max(operations + 10_000, 1))}")
}

func rounded(_ value: Double) -> Double { Double(Int(value * 1000)) / 1000 }

let operations = 2_000_000
measure("render_telemetry_json", try! PayloadTemplate(
    #"{"vin":"{client_id}","speed":{rand:0..180},"lvl":{rand:0.0..1.0},"dir":"{choice:N|E|S|W}","seq":{seq},"ts":{ts_ms}}"#),
    clientID: "veh-000042", operations: operations)
measure("render_json_escaped_values", try! PayloadTemplate(
    #"{"note":"say {choice:"hi"|back\slash|tab\#there}","who":"{client_id}"}"#),
    clientID: #"veh"42"#, operations: operations)
measure("render_text_binary_header", try! PayloadTemplate("car {client_id} position {rand:0..99} {uuid}"),
    clientID: "veh-000042", operations: operations)
// The city-commute telemetry: eight vehicle fields, sampled at one message a second of a vehicle in a generated town.
let town = try! RoadNetwork.generated(GeneratedRoads(centerLatitude: 48.137, centerLongitude: 11.575, radius: 5_000))
let model = try! VehicleModel(network: town, configuration: VehicleConfiguration(), seed: 42)
measure("render_vehicle_telemetry_json", try! PayloadTemplate(
    #"{"vehicle":"{client_id}","seq":{seq},"ts":{ts_ms},"lat":{vehicle.lat},"lon":{vehicle.lon},"heading":{vehicle.heading},"#
        + #""speed_kmh":{vehicle.speed_kmh},"odometer_km":{vehicle.odometer_km},"soc":{vehicle.soc},"#
        + #""ignition":{vehicle.ignition},"charging":{vehicle.charging}}"#),
    clientID: "commuter-042", operations: operations, vehicle: (model, 42))
