#if canImport(Glibc)
import Glibc  // libm only (sin, cos, asin, atan2): this module does no I/O.
#elseif canImport(Darwin)
import Darwin
#endif

/// Distances and bearings on a spherical Earth. A sphere of the mean radius is within 0.5 % of the ellipsoid,
/// and what matters here is that the model measures its roads with the same function a consumer of the
/// telemetry would use (haversine), so "never farther apart than the speed allows" holds for that consumer.
public enum Geodesy {
    /// IUGG mean Earth radius in metres.
    public static let earthRadius = 6_371_008.8
    /// Metres per degree of latitude on that sphere (also per degree of longitude at the equator).
    public static let metresPerDegree = earthRadius * Double.pi / 180

    /// Great-circle distance in metres between two points given in degrees (haversine formula).
    public static func distance(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        let phi1 = latitude1 * .pi / 180
        let phi2 = latitude2 * .pi / 180
        let dPhi = phi2 - phi1
        let dLambda = (longitude2 - longitude1) * .pi / 180
        let a = sin(dPhi / 2) * sin(dPhi / 2) + cos(phi1) * cos(phi2) * sin(dLambda / 2) * sin(dLambda / 2)
        return 2 * earthRadius * asin(min(1, a.squareRoot()))
    }

    /// Initial great-circle bearing from point 1 to point 2, degrees clockwise from north in [0, 360).
    public static func bearing(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        let phi1 = latitude1 * .pi / 180
        let phi2 = latitude2 * .pi / 180
        let dLambda = (longitude2 - longitude1) * .pi / 180
        let y = sin(dLambda) * cos(phi2)
        let x = cos(phi1) * sin(phi2) - sin(phi1) * cos(phi2) * cos(dLambda)
        let degrees = atan2(y, x) * 180 / .pi
        return degrees < 0 ? degrees + 360 : (degrees >= 360 ? degrees - 360 : degrees)
    }

    /// Metres per degree of longitude at a latitude.
    public static func metresPerDegreeLongitude(atLatitude latitude: Double) -> Double {
        metresPerDegree * cos(latitude * .pi / 180)
    }

    /// The point `east` and `north` metres away from a centre on the local tangent plane (equirectangular;
    /// for the few kilometres of a generated town the error is far below a road's width).
    static func offset(latitude: Double, longitude: Double, east: Double, north: Double) -> (latitude: Double, longitude: Double) {
        (latitude + north / metresPerDegree, longitude + east / metresPerDegreeLongitude(atLatitude: latitude))
    }

    static func cosine(degrees: Double) -> Double { cos(degrees * .pi / 180) }
    static func sine(degrees: Double) -> Double { sin(degrees * .pi / 180) }
}
