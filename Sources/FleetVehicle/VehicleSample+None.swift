extension VehicleSample {
    /// A sample of no vehicle (all zero, ignition off): what a message of a client without a vehicle carries in
    /// its render context, never printed (only templates with `{vehicle.*}` read it, and those run on vehicles).
    public static let none = VehicleSample(latitude: 0, longitude: 0, heading: 0, speedKmh: 0, odometerKm: 0, soc: 0,
                                           ignition: false, charging: false, inTunnel: false, segment: 0)
}
