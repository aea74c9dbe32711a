/// One simulated vehicle: where it is, how fast, how far it has driven, its battery, at any moment of the run.
///
/// The vehicle lives as a chain of legs: driving one road segment (a `SpeedProfile`), waiting at a junction, or
/// parked (possibly charging). Nothing runs between samples: `sample(at:model:)` finishes the legs that ended
/// before the asked time, planning each next one as it goes, then evaluates the current leg in closed form. So a
/// vehicle costs nothing while nobody asks, no timer exists per vehicle, and a sample costs O(1) plus the legs
/// passed since the last one (a leg lasts seconds to minutes: at one sample a second that is at most a few).
///
/// Each leg is planned from the vehicle's own random stream, seeded by the run seed and the vehicle's index, and
/// never from the sample times: the trajectory is the same however often and whenever it is sampled, and the
/// GNSS error is a function of (seed, index, time). Samples are exact for any time at or after the start of the
/// current leg; an earlier time (two streams of one client rendered out of order) is answered as of that start.
///
/// 80 bytes; copy it into a lane's flat array and sample it there (not thread-safe, like any value).
public struct Vehicle: Sendable {
    /// Seconds since the start of the run at which the current leg began.
    var legStart: Double
    /// Metres on the odometer and state of charge (0 to 1) when the current leg began.
    var odometerAtLegStart: Double
    var socAtLegStart: Double
    var random: VehicleRandom
    /// Driving: the leg's speed over time. Standing: zero speeds; the ramp phase is the charging time when parked.
    var profile: SpeedProfile
    /// Seconds since the start of the run after which the current trip ends at the next junction.
    var tripEnd: Float
    /// Metres along `directed` where the current leg starts (driving) or where the vehicle stands.
    var offset: Float
    /// The directed segment driven or stood on (`segment << 1 | reversed`), and the one chosen to follow it.
    var directed: UInt32
    var next: UInt32
    let index: UInt32
    var kind: LegKind
    var flags: Flags

    enum LegKind: UInt8 {
        case driving
        /// Stopped at a junction, ignition on.
        case waiting
        /// Ignition off; plugged in during the ramp phase of the profile.
        case parked
    }

    struct Flags: OptionSet {
        let rawValue: UInt8
        /// The trip is over: stop at the next junction (outside tunnels) and park.
        static let endingTrip = Flags(rawValue: 1)
        /// The trip ended on the reserve: charge to the limit before driving again.
        static let needsCharge = Flags(rawValue: 2)
        /// This leg ends in a stop at its junction.
        static let waitAtJunction = Flags(rawValue: 4)
    }

    /// Vehicle `index` of a fleet, as it is at the start of the run: somewhere on the roads, driving or parked in
    /// proportion to the mean trip and stop lengths (always driving when placed inside a tunnel).
    public init(model: VehicleModel, index: Int) {
        precondition(index >= 0 && index <= Int(UInt32.max), "vehicle index out of range: \(index)")
        self.index = UInt32(index)
        random = VehicleRandom(seed: model.seed, index: UInt64(index), purpose: VehicleModel.Purpose.motion.rawValue)
        let network = model.network
        let configuration = model.configuration
        let place = network.segment(atDistance: random.nextUnit() * network.totalLength)
        let reversed = random.next() & 1 == 1
        directed = UInt32(place.index) << 1 | (reversed ? 1 : 0)
        let length = network.segments[place.index].length
        offset = Float(reversed ? length - place.offset : place.offset)
        odometerAtLegStart = random.next(in: configuration.initialOdometerKm) * 1000
        socAtLegStart = random.next(in: configuration.initialSoc)
        legStart = 0
        tripEnd = 0
        profile = .standing(first: 0, second: 0)
        kind = .parked
        flags = []
        next = directed  // every property must be set before a method runs; replaced at once
        next = chooseNext(after: directed, model: model)
        let meanDrive = (configuration.driveDuration.lowerBound + configuration.driveDuration.upperBound) / 2
        let meanPark = (configuration.parkDuration.lowerBound + configuration.parkDuration.upperBound) / 2
        // Never stopped inside a tunnel, the first stop included: a vehicle placed in one is mid-trip there. The
        // draw is made either way, so every other vehicle keeps the same start.
        let driving = random.nextUnit() < meanDrive / (meanDrive + meanPark) || network.segments[place.index].isTunnel
        // Somewhere in the middle of a trip or a stop: only the rest of it remains.
        let remaining = random.nextUnit()
        if driving {
            tripEnd = Float(remaining * random.next(in: configuration.driveDuration))
            startDriving(entrySpeed: model.cruiseSpeed(directed, factor: model.speedFactor(of: self.index)), model: model)
        } else {
            park(model: model, remainingShare: remaining)
        }
    }

    /// The vehicle at `time` nanoseconds after the start of the run. Allocation-free.
    @inline(__always)
    public mutating func sample(at time: UInt64, model: VehicleModel) -> VehicleSample {
        sample(atSeconds: Double(time) * 1e-9, model: model)
    }

    /// The vehicle at `seconds` after the start of the run (a negative or NaN time counts as the start).
    public mutating func sample(atSeconds time: Double, model: VehicleModel) -> VehicleSample {
        let seconds = time > 0 ? time : 0
        while seconds >= legStart + profile.duration {
            finishLeg(model: model)
        }
        let elapsed = max(0, seconds - legStart)
        let network = model.network
        let segmentIndex = RoadNetwork.segmentIndex(directed)
        let segment = network.segments[segmentIndex]
        let reversed = RoadNetwork.isReversed(directed)

        var driven = 0.0
        var speed = 0.0
        var soc = socAtLegStart
        var charging = false
        switch kind {
        case .driving:
            driven = profile.distance(at: elapsed)
            speed = profile.speed(at: elapsed)
            soc = max(0, socAtLegStart - driven * model.socPerMetre)
        case .waiting:
            break
        case .parked:
            let chargingTime = Double(profile.rampDuration)
            charging = elapsed < chargingTime
            soc = min(1, socAtLegStart + model.socPerSecondCharging * min(elapsed, chargingTime))
        }

        let along = min(1, max(0, (Double(offset) + driven) / segment.length))
        let start = network.nodes[Int(reversed ? segment.to : segment.from)]
        let end = network.nodes[Int(reversed ? segment.from : segment.to)]
        var latitude = start.latitude + along * (end.latitude - start.latitude)
        var longitude = start.longitude + along * (end.longitude - start.longitude)
        if model.noisePerAxis > 0 {
            let noise = gnssError(atSeconds: seconds, model: model)
            latitude += noise.north / Geodesy.metresPerDegree
            longitude += noise.east / Double(segment.metresPerDegreeLongitude)
        }
        return VehicleSample(
            latitude: latitude, longitude: longitude,
            heading: Double(reversed ? segment.reverseBearing : segment.bearing),
            speedKmh: speed * 3.6,
            odometerKm: (odometerAtLegStart + driven) / 1000,
            soc: soc,
            ignition: kind != .parked,
            charging: charging,
            inTunnel: segment.isTunnel,
            segment: segmentIndex)
    }

    /// Whether the vehicle is on a tunnel segment at `time` nanoseconds after the start of the run: what a link
    /// that tunnels cut needs to know, without computing a whole sample (same rules as `sample(at:model:)`).
    public mutating func isInTunnel(at time: UInt64, model: VehicleModel) -> Bool {
        let seconds = Double(time) * 1e-9
        while seconds >= legStart + profile.duration {
            finishLeg(model: model)
        }
        return model.network.segments[RoadNetwork.segmentIndex(directed)].isTunnel
    }

    /// A smoothly drifting horizontal error: fresh random offsets (each axis within ±noisePerAxis, triangular)
    /// every noise period, linearly interpolated between, so the vector never leaves the `gnssNoise` disc.
    @inline(__always)
    func gnssError(atSeconds seconds: Double, model: VehicleModel) -> (east: Double, north: Double) {
        let position = seconds / model.noisePeriod
        let knot = position.rounded(.down)
        let share = position - knot
        let key = VehicleRandom.hash(model.seed, UInt64(index), VehicleModel.Purpose.gnss.rawValue)
        let step = UInt64(knot)
        let before = Self.knotOffset(VehicleRandom.mix(key &+ step &* VehicleRandom.golden))
        let after = Self.knotOffset(VehicleRandom.mix(key &+ (step &+ 1) &* VehicleRandom.golden))
        let scale = model.noisePerAxis
        return ((before.0 + share * (after.0 - before.0)) * scale, (before.1 + share * (after.1 - before.1)) * scale)
    }

    /// Two values in [-1, 1], each the sum of two 16-bit uniforms (a triangular distribution: small errors are
    /// likelier than large ones, as for a receiver).
    @inline(__always)
    static func knotOffset(_ bits: UInt64) -> (Double, Double) {
        let unit = 1.0 / 65535
        let east = Double(bits & 0xFFFF) * unit + Double((bits >> 16) & 0xFFFF) * unit - 1
        let north = Double((bits >> 32) & 0xFFFF) * unit + Double(bits >> 48) * unit - 1
        return (east, north)
    }
}

/// A vehicle at one moment: what the template generators `{vehicle.*}` print.
public struct VehicleSample: Sendable, Equatable {
    /// Degrees, with GNSS error.
    public var latitude: Double
    public var longitude: Double
    /// Direction of travel, degrees clockwise from north in [0, 360) (kept while standing).
    public var heading: Double
    public var speedKmh: Double
    public var odometerKm: Double
    /// State of charge, 0 to 1.
    public var soc: Double
    public var ignition: Bool
    public var charging: Bool
    /// On a segment marked as a tunnel (the link is cut while this holds).
    public var inTunnel: Bool
    /// The road segment (index into `RoadNetwork.segments`) the vehicle is on.
    public var segment: Int
}
