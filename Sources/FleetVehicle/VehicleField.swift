/// The values a payload template can take from a vehicle, by their generator names (`{vehicle.lat}` is
/// `VehicleField(name: "lat")`), and how each is printed: a fixed number of decimals chosen for what a
/// consumer needs (6 for degrees: 0.1 m; 3 for the odometer in km: 1 m) or `true`/`false`.
public enum VehicleField: String, CaseIterable, Sendable {
    case latitude = "lat"
    case longitude = "lon"
    case heading
    case speedKmh = "speed_kmh"
    case odometerKm = "odometer_km"
    case soc
    case ignition
    case charging
    case inTunnel = "in_tunnel"

    /// The field for a generator name after `vehicle.`; nil for an unknown name.
    public init?(name: String) { self.init(rawValue: name) }

    /// Printed as `true` or `false` (a JSON template should write it as a JSON boolean, unquoted).
    public var isBoolean: Bool {
        switch self {
        case .ignition, .charging, .inTunnel: return true
        default: return false
        }
    }

    /// Digits after the decimal point of a numeric field.
    public var decimals: Int {
        switch self {
        case .latitude, .longitude: return 6
        case .heading, .speedKmh: return 1
        case .odometerKm: return 3
        case .soc: return 4
        case .ignition, .charging, .inTunnel: return 0
        }
    }

    /// The field's value as a number (booleans as 1 or 0).
    public func value(of sample: VehicleSample) -> Double {
        switch self {
        case .latitude: return sample.latitude
        case .longitude: return sample.longitude
        case .heading: return sample.heading
        case .speedKmh: return sample.speedKmh
        case .odometerKm: return sample.odometerKm
        case .soc: return sample.soc
        case .ignition: return sample.ignition ? 1 : 0
        case .charging: return sample.charging ? 1 : 0
        case .inTunnel: return sample.inTunnel ? 1 : 0
        }
    }

    /// Appends the field's text (`48.137154`, `52.3`, `true`) to `buffer`; no allocation once `buffer` has room.
    @inline(__always)
    public func append(_ sample: VehicleSample, to buffer: inout [UInt8]) {
        switch self {
        case .ignition: Self.appendBoolean(sample.ignition, to: &buffer)
        case .charging: Self.appendBoolean(sample.charging, to: &buffer)
        case .inTunnel: Self.appendBoolean(sample.inTunnel, to: &buffer)
        case .heading:
            // 359.96° rounds to 360.0, which is north again: print 0.0 so headings stay in [0, 360).
            Self.appendFixed(sample.heading >= 359.95 ? 0 : sample.heading, decimals: 1, to: &buffer)
        default: Self.appendFixed(value(of: sample), decimals: decimals, to: &buffer)
        }
    }

    static func appendBoolean(_ value: Bool, to buffer: inout [UInt8]) {
        // Byte by byte: an array literal here could allocate on every call.
        if value {
            buffer.append(UInt8(ascii: "t"))
            buffer.append(UInt8(ascii: "r"))
            buffer.append(UInt8(ascii: "u"))
        } else {
            buffer.append(UInt8(ascii: "f"))
            buffer.append(UInt8(ascii: "a"))
            buffer.append(UInt8(ascii: "l"))
            buffer.append(UInt8(ascii: "s"))
        }
        buffer.append(UInt8(ascii: "e"))
    }

    /// `value` rounded half away from zero to `decimals` digits (0...9), without exponent, never `-0`.
    /// Values beyond ±9.2e18 / 10^decimals (far outside any vehicle figure) are clamped.
    public static func appendFixed(_ value: Double, decimals: Int, to buffer: inout [UInt8]) {
        var divisor: UInt64 = 1
        for _ in 0..<decimals { divisor &*= 10 }
        var scaled = (value * Double(divisor)).rounded(.toNearestOrAwayFromZero)
        if !scaled.isFinite { scaled = 0 }
        scaled = min(max(scaled, -9.2e18), 9.2e18)
        let units = Int64(scaled)
        var magnitude = units.magnitude
        // Written backwards into 32 bytes of stack (at most 19 digits, a point and a sign), appended at once.
        var text: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &text) { raw in
            var position = raw.count
            var written = 0
            repeat {
                position -= 1
                raw[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
                written += 1
                if written == decimals {
                    position -= 1
                    raw[position] = UInt8(ascii: ".")
                }
            } while magnitude > 0 || written <= decimals
            if units < 0 {
                position -= 1
                raw[position] = UInt8(ascii: "-")
            }
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[position...]))
        }
    }
}
