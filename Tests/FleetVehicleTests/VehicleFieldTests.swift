import Testing
@testable import FleetVehicle

@Suite("VehicleField: generator names and printed values")
struct VehicleFieldTests {
    static let sample = VehicleSample(
        latitude: 48.1371549, longitude: -11.5755, heading: 359.96, speedKmh: 52.25, odometerKm: 30_095.7824995,
        soc: 0.81235, ignition: true, charging: false, inTunnel: true, segment: 3)

    @Test("each field prints its value with its fixed decimals", arguments: [
        ("lat", "48.137155"), ("lon", "-11.575500"), ("heading", "0.0"), ("speed_kmh", "52.3"),
        ("odometer_km", "30095.782"), ("soc", "0.8124"), ("ignition", "true"), ("charging", "false"), ("in_tunnel", "true"),
    ])
    func printed(name: String, text: String) throws {
        let field = try #require(VehicleField(name: name))
        var buffer: [UInt8] = Array("x=".utf8)
        field.append(Self.sample, to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == "x=" + text)
        #expect(field.isBoolean == ["ignition", "charging", "in_tunnel"].contains(name))
    }

    @Test("a heading that rounds to 360.0 prints as 0.0", arguments: [(359.94, "359.9"), (359.95, "0.0"), (0.04, "0.0"), (180.05, "180.1")])
    func headingWraps(heading: Double, text: String) {
        var sample = Self.sample
        sample.heading = heading
        var buffer: [UInt8] = []
        VehicleField.heading.append(sample, to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == text)
    }

    @Test("unknown names are refused")
    func unknown() {
        #expect(VehicleField(name: "speed") == nil)
        #expect(VehicleField(name: "latitude") == nil)
        #expect(VehicleField.allCases.map(\.rawValue) == ["lat", "lon", "heading", "speed_kmh", "odometer_km", "soc", "ignition", "charging", "in_tunnel"])
    }

    @Test("fixed-point printing: rounding half away from zero, no negative zero, padding of small fractions", arguments: [
        (0.0, 3, "0.000"), (-0.0004, 3, "0.000"), (-0.0005, 3, "-0.001"), (0.0005, 3, "0.001"), (1.05, 0, "1"),
        (-12.5, 0, "-13"), (0.000001, 6, "0.000001"), (-179.9999995, 6, "-180.000000"), (123456789.125, 2, "123456789.13"),
        (Double.nan, 2, "0.00"), (1e300, 1, "920000000000000000.0"),
    ])
    func fixedPoint(value: Double, decimals: Int, text: String) {
        var buffer: [UInt8] = []
        VehicleField.appendFixed(value, decimals: decimals, to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == text)
    }
}
