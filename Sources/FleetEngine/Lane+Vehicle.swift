import FleetVehicle

/// Simulated vehicles on a lane: each client of a fleet with a vehicle model drives vehicle `globalIndex` of the
/// run, seeded by the run's seed. The vehicle's clock starts when its client first starts publishing, and every
/// sample is taken at a message's intended time relative to that start: so the same seed gives the same positions
/// in the same messages whenever the run happens and however it is split into segments. Nothing runs between
/// messages; a sample advances the vehicle lazily (`Vehicle.sample`).
extension Lane {
    /// The vehicle of `client` at lane time `time` (clamped to its clock's start); made at its first sample.
    @inline(__always)
    func vehicleSample(_ client: Int, at time: UInt64) -> VehicleSample {
        guard let model = fleets[clients[client].fleet].vehicleModel else { return .none }
        let origin = clients[client].vehicleOrigin
        let runTime = time > origin ? time - origin : 0
        if clients[client].vehicle == nil {
            clients[client].vehicle = VehicleBox(Vehicle(model: model, index: clients[client].globalIndex))
        }
        return clients[client].vehicle!.state.sample(at: runTime, model: model)
    }

    /// Starts the vehicle's clock (once: reconnects keep it running). Only a fleet with a vehicle model has one
    /// (`vehicleSample` and `cutIfInTunnel` read it for those only): other clients make no extras for it.
    func startVehicleClock(_ client: Int) {
        guard fleets[clients[client].fleet].vehicleModel != nil else { return }
        if clients[client].vehicleOrigin == 0 { clients[client].vehicleOrigin = now }
    }

    /// Cuts the link of a vehicle that is inside a tunnel now, with the reconnect held back until it is out
    /// (the engine's tunnel fault with the drive's own outage). Checked when the client has messages due, so a
    /// vehicle that publishes once a second is cut within a second of entering; one that never publishes is never
    /// cut. True when the link was cut.
    func cutIfInTunnel(_ client: Int) -> Bool {
        guard let model = fleets[clients[client].fleet].vehicleModel, model.network.tunnelLength > 0,
              clients[client].vehicleOrigin != 0, now > clients[client].vehicleOrigin else { return false }
        let runTime = now - clients[client].vehicleOrigin
        if clients[client].vehicle == nil {
            clients[client].vehicle = VehicleBox(Vehicle(model: model, index: clients[client].globalIndex))
        }
        guard clients[client].vehicle!.state.isInTunnel(at: runTime, model: model) else { return false }
        // The way out, found on a copy one second at a time (a vehicle never stops in a tunnel, so this ends;
        // the bound covers a crawl through the longest tunnel).
        var ahead = clients[client].vehicle!.state
        var exit = runTime
        for _ in 0..<Self.longestTunnelSeconds {
            exit &+= 1_000_000_000
            if !ahead.isInTunnel(at: exit, model: model) { break }
        }
        return cutForTunnel(client, outage: exit - runTime)
    }

    /// Upper bound on the seconds searched for a tunnel's exit.
    static var longestTunnelSeconds: Int { 3_600 }
}

/// A client's vehicle, kept apart from the client: 8 bytes in every `SimulatedClient` instead of the vehicle's
/// state inline (most fleets have no vehicle model), allocated once, at the vehicle's first sample.
final class VehicleBox {
    var state: Vehicle
    init(_ state: Vehicle) { self.state = state }
}
