/// Everything the vehicles of one fleet share: the roads, the settings and the run's seed, with the settings
/// turned into the constants the per-sample arithmetic uses. Immutable: build it once, hand it to every lane.
public final class VehicleModel: Sendable {
    public let network: RoadNetwork
    public let configuration: VehicleConfiguration
    public let seed: UInt64

    // Derived constants, SI units.
    let topSpeed: Double
    let acceleration: Double
    let deceleration: Double
    let speedFactorLow: Double
    let speedFactorSpan: Double
    /// State of charge used per metre driven and gained per second of charging.
    let socPerMetre: Double
    let socPerSecondCharging: Double
    /// GNSS error bound per axis (the noise vector stays within `gnssNoise` metres).
    let noisePerAxis: Double
    let noisePeriod: Double

    /// Why a model could not be built: the settings' problems, named by scenario key.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public let problems: [VehicleConfiguration.Problem]
        public var description: String { problems.map(\.description).joined(separator: "\n") }
    }

    public init(network: RoadNetwork, configuration: VehicleConfiguration, seed: UInt64) throws(Failure) {
        var problems = configuration.problems
        if problems.isEmpty {
            // A trip ends at the next junction once the battery reaches the reserve; what is driven after that
            // (the rest of the segment on which the reserve was crossed, the next one, and the braking) must fit
            // in the reserve so the state of charge falls with distance without ever being cut off at 0.
            let brakingDistance = pow2(configuration.topSpeedKmh / 3.6) / (2 * configuration.deceleration)
            let lastStretch = 2 * network.longestSegment + brakingDistance
            let needed = lastStretch / 1000 * configuration.consumptionKWhPerKm / configuration.batteryCapacityKWh
            if configuration.reserveSoc < needed {
                problems.append(VehicleConfiguration.Problem(
                    key: "battery.reserve_soc",
                    message: "must be at least \((needed * 1000).rounded(.up) / 1000) so the last \(Int(lastStretch.rounded())) m of a trip fit in the reserve (\(configuration.batteryCapacityKWh) kWh at \(configuration.consumptionKWhPerKm) kWh/km), got \(configuration.reserveSoc)"))
            }
        }
        guard problems.isEmpty else { throw Failure(problems: problems) }
        self.network = network
        self.configuration = configuration
        self.seed = seed
        topSpeed = configuration.topSpeedKmh / 3.6
        acceleration = configuration.acceleration
        deceleration = configuration.deceleration
        speedFactorLow = configuration.speedFactor.lowerBound
        speedFactorSpan = configuration.speedFactor.upperBound - configuration.speedFactor.lowerBound
        socPerMetre = configuration.consumptionKWhPerKm / 1000 / configuration.batteryCapacityKWh
        socPerSecondCharging = configuration.chargePowerKW / 3600 / configuration.batteryCapacityKWh
        noisePerAxis = configuration.gnssNoise / 2.0.squareRoot()
        noisePeriod = configuration.gnssNoisePeriod
    }

    /// What each random stream of a vehicle is for (so streams of one vehicle never overlap).
    enum Purpose: UInt64 {
        case motion = 1
        case speedFactor = 2
        case gnss = 3
    }

    /// The share of the limit vehicle `index` drives at: fixed per vehicle, derived, not stored.
    @inline(__always)
    func speedFactor(of index: UInt32) -> Double {
        let bits = VehicleRandom.hash(seed, UInt64(index), Purpose.speedFactor.rawValue)
        return speedFactorLow + Double(bits >> 11) * 0x1p-53 * speedFactorSpan
    }

    /// Cruising speed on a directed segment: the lower of the limit and the top speed, times the driver's share.
    @inline(__always)
    func cruiseSpeed(_ directed: UInt32, factor: Double) -> Double {
        min(Double(network.segments[RoadNetwork.segmentIndex(directed)].speedLimit), topSpeed) * factor
    }

    /// Bytes of one vehicle's state (the per-vehicle cost; the model itself is shared).
    public static var bytesPerVehicle: Int { MemoryLayout<Vehicle>.stride }
}

@inline(__always)
private func pow2(_ value: Double) -> Double { value * value }
