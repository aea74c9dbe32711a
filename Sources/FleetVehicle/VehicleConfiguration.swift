/// How the vehicles of a fleet drive, park and charge. Units are SI unless the name says otherwise (durations in
/// seconds, accelerations in m/s²). Ranges are drawn uniformly, per vehicle and per trip.
///
/// The defaults describe an electric car in town compressed to the length of a load test: trips of 10 to 40
/// minutes, stops of 2 to 30 minutes, a light at one junction in three.
public struct VehicleConfiguration: Sendable, Equatable {
    /// Fastest the vehicle drives on any road (km/h); the lower of this and the road's limit applies.
    public var topSpeedKmh: Double = 130
    /// Largest speed-up and slow-down (m/s²): about 0.2 g of a calm driver, a comfortable stop.
    public var acceleration: Double = 2.0
    public var deceleration: Double = 3.0
    /// Share of the speed limit a driver keeps to, drawn once per vehicle.
    public var speedFactor: ClosedRange<Double> = 0.85...1.0
    /// Length of a trip (driving, ignition on) and of the stop after it (parked, ignition off), seconds.
    public var driveDuration: ClosedRange<Double> = 600...2400
    public var parkDuration: ClosedRange<Double> = 120...1800
    /// Chance of waiting at a junction of three or more roads or at a traffic signal (a red light, a give-way),
    /// and how long.
    public var junctionStopProbability: Double = 0.3
    public var junctionStopDuration: ClosedRange<Double> = 5...45
    /// Usable battery energy and consumption: a mid-size electric car (60 kWh, 17 kWh per 100 km).
    public var batteryCapacityKWh: Double = 60
    public var consumptionKWhPerKm: Double = 0.17
    /// State of charge (0 to 1) at the start of the run, drawn per vehicle.
    public var initialSoc: ClosedRange<Double> = 0.4...0.95
    /// Below this the driver ends the trip at the next opportunity and charges to `chargeLimitSoc` before driving
    /// again, however long that takes.
    public var reserveSoc: Double = 0.1
    /// Parked below this, the vehicle is plugged in and charges at `chargePowerKW` up to `chargeLimitSoc`.
    public var chargeBelowSoc: Double = 0.6
    public var chargeLimitSoc: Double = 0.9
    /// An 11 kW wallbox.
    public var chargePowerKW: Double = 11
    /// Largest horizontal GNSS error in metres (0: exact positions); the error drifts smoothly between fresh
    /// random offsets every `gnssNoisePeriod` seconds, as a receiver's error does.
    public var gnssNoise: Double = 3
    public var gnssNoisePeriod: Double = 5
    /// Odometer at the start of the run (km), drawn per vehicle.
    public var initialOdometerKm: ClosedRange<Double> = 1_000...120_000

    public init() {}

    /// One problem: the key in the scenario's `vehicle` object it belongs to, and what is wrong.
    public struct Problem: Equatable, Sendable, CustomStringConvertible {
        public let key: String
        public let message: String
        public var description: String { "\(key): \(message)" }
    }

    /// Every problem with these settings, named by the scenario keys proposed for `vehicle`; empty when valid.
    public var problems: [Problem] {
        var found: [Problem] = []
        func check(_ valid: Bool, _ key: String, _ message: String) {
            if !valid { found.append(Problem(key: key, message: message)) }
        }
        func positiveRange(_ range: ClosedRange<Double>, _ key: String, _ unit: String) {
            check(range.lowerBound.isFinite && range.upperBound.isFinite && range.lowerBound > 0, key,
                  "must be greater than 0 \(unit), got \(range.lowerBound)...\(range.upperBound)")
        }
        check(topSpeedKmh.isFinite && topSpeedKmh > 0 && topSpeedKmh <= 500, "top_speed_kmh",
              "must be greater than 0 and at most 500 km/h, got \(topSpeedKmh)")
        check(acceleration.isFinite && acceleration > 0 && acceleration <= 15, "acceleration",
              "must be greater than 0 and at most 15 m/s², got \(acceleration)")
        check(deceleration.isFinite && deceleration > 0 && deceleration <= 15, "deceleration",
              "must be greater than 0 and at most 15 m/s², got \(deceleration)")
        check(speedFactor.lowerBound > 0 && speedFactor.upperBound <= 2, "speed_factor",
              "must lie within 0 (excluded) and 2, got \(speedFactor.lowerBound)...\(speedFactor.upperBound)")
        positiveRange(driveDuration, "trips.drive", "seconds")
        positiveRange(parkDuration, "trips.park", "seconds")
        positiveRange(junctionStopDuration, "trips.junction_stop", "seconds")
        check((0...1).contains(junctionStopProbability), "trips.junction_stops",
              "must be a fraction from 0 to 1, got \(junctionStopProbability)")
        check(batteryCapacityKWh.isFinite && batteryCapacityKWh > 0, "battery.capacity_kwh",
              "must be greater than 0 kWh, got \(batteryCapacityKWh)")
        check(consumptionKWhPerKm.isFinite && consumptionKWhPerKm >= 0 && consumptionKWhPerKm <= 10, "battery.consumption_kwh_per_km",
              "must be from 0 to 10 kWh/km, got \(consumptionKWhPerKm)")
        check(reserveSoc >= 0 && reserveSoc < 1, "battery.reserve_soc", "must be a fraction from 0 to below 1, got \(reserveSoc)")
        check(initialSoc.lowerBound >= reserveSoc && initialSoc.upperBound <= 1, "battery.initial_soc",
              "must lie within the reserve (\(reserveSoc)) and 1, got \(initialSoc.lowerBound)...\(initialSoc.upperBound)")
        check((0...1).contains(chargeBelowSoc), "battery.charge_below_soc", "must be a fraction from 0 to 1, got \(chargeBelowSoc)")
        check(chargeLimitSoc > reserveSoc && chargeLimitSoc <= 1, "battery.charge_limit_soc",
              "must be above the reserve (\(reserveSoc)) and at most 1, got \(chargeLimitSoc)")
        check(chargePowerKW.isFinite && chargePowerKW > 0, "battery.charge_power_kw", "must be greater than 0 kW, got \(chargePowerKW)")
        check(gnssNoise.isFinite && gnssNoise >= 0 && gnssNoise <= 1000, "gnss.noise_m", "must be from 0 to 1000 m, got \(gnssNoise)")
        check(gnssNoisePeriod.isFinite && gnssNoisePeriod > 0, "gnss.period", "must be greater than 0 seconds, got \(gnssNoisePeriod)")
        check(initialOdometerKm.lowerBound >= 0 && initialOdometerKm.upperBound <= 10_000_000, "odometer_km",
              "must lie within 0 and 10,000,000 km, got \(initialOdometerKm.lowerBound)...\(initialOdometerKm.upperBound)")
        return found
    }
}
