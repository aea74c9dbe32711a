/// Planning the next leg when one ends. Every drive leg runs to the end of its segment; a vehicle stops only at a
/// junction (to wait or to park), so it never parks in the middle of a road, nor inside a tunnel.
extension Vehicle {
    /// Ends the current leg at its planned end and plans the next one.
    mutating func finishLeg(model: VehicleModel) {
        let end = legStart + profile.duration
        switch kind {
        case .driving:
            let driven = profile.length
            odometerAtLegStart += driven
            socAtLegStart = max(0, socAtLegStart - driven * model.socPerMetre)
            legStart = end
            offset = Float(model.network.segments[RoadNetwork.segmentIndex(directed)].length)
            let exitSpeed = Double(profile.exitSpeed)
            if exitSpeed > 0 {
                startDriving(entrySpeed: exitSpeed, model: model)
            } else if flags.contains(.endingTrip) {
                park(model: model, remainingShare: 1)
            } else if flags.contains(.waitAtJunction) {
                kind = .waiting
                profile = .standing(first: 0, second: random.next(in: model.configuration.junctionStopDuration))
            } else {
                startDriving(entrySpeed: 0, model: model)  // stopped to turn at a dead end
            }
        case .waiting:
            legStart = end
            startDriving(entrySpeed: 0, model: model)
        case .parked:
            socAtLegStart = min(1, socAtLegStart + model.socPerSecondCharging * Double(profile.rampDuration))
            legStart = end
            flags = []
            tripEnd = Float(end + random.next(in: model.configuration.driveDuration))
            startDriving(entrySpeed: 0, model: model)
        }
    }

    /// Plans driving the rest of the current segment (or the next one, when at its end), entering at `entrySpeed`.
    mutating func startDriving(entrySpeed: Double, model: VehicleModel) {
        let network = model.network
        var remaining = Double(network.segments[RoadNetwork.segmentIndex(directed)].length) - Double(offset)
        if remaining < 0.01 {
            directed = next
            offset = 0
            next = chooseNext(after: directed, model: model)
            remaining = network.segments[RoadNetwork.segmentIndex(directed)].length
        }
        if !flags.contains(.endingTrip) {
            let onReserve = socAtLegStart <= model.configuration.reserveSoc
            if legStart >= Double(tripEnd) || onReserve {
                flags.insert(.endingTrip)
                if onReserve { flags.insert(.needsCharge) }
            }
        }
        flags.remove(.waitAtJunction)
        let factor = model.speedFactor(of: index)
        let cruise = model.cruiseSpeed(directed, factor: factor)
        let inTunnel = network.segments[RoadNetwork.segmentIndex(directed)].isTunnel
        var exitTarget: Double
        if next == RoadNetwork.reversed(directed) {
            exitTarget = 0  // a dead end: stop, then turn
        } else if flags.contains(.endingTrip) && !inTunnel {
            exitTarget = 0
        } else {
            exitTarget = min(cruise, model.cruiseSpeed(next, factor: factor))
            let configuration = model.configuration
            if !inTunnel, configuration.junctionStopProbability > 0,
                network.stopsTraffic(at: network.endNode(of: directed)),
                random.nextUnit() < configuration.junctionStopProbability
            {
                flags.insert(.waitAtJunction)
                exitTarget = 0
            }
        }
        profile = SpeedProfile.plan(
            entry: entrySpeed, cruise: cruise, exitTarget: exitTarget, distance: remaining,
            acceleration: model.acceleration, deceleration: model.deceleration)
        kind = .driving
    }

    /// Parks at the current position for a drawn stop (`remainingShare` of it: the rest of a stop under way at
    /// the start of the run), plugged in when the battery is below the threshold or the trip ended on the reserve.
    mutating func park(model: VehicleModel, remainingShare: Double) {
        let configuration = model.configuration
        var duration = random.next(in: configuration.parkDuration) * remainingShare
        var charging = 0.0
        if socAtLegStart < configuration.chargeBelowSoc || flags.contains(.needsCharge) {
            charging = max(0, (configuration.chargeLimitSoc - socAtLegStart) / model.socPerSecondCharging)
        }
        if flags.contains(.needsCharge) { duration = max(duration, charging) }
        duration = max(duration, 1e-3)
        charging = min(charging, duration)
        kind = .parked
        profile = .standing(first: charging, second: duration - charging)
    }

    /// The directed segment taken after `directed`: any other road at its end junction, uniformly; back the same
    /// way only at a dead end.
    mutating func chooseNext(after directed: UInt32, model: VehicleModel) -> UInt32 {
        let network = model.network
        let node = network.endNode(of: directed)
        let first = Int(network.outgoingStart[node])
        let count = Int(network.outgoingStart[node + 1]) - first
        let back = RoadNetwork.reversed(directed)
        // The way back is one of the roads at the junction (unless the segment is a loop onto itself).
        var choices = count
        for slot in first..<(first + count) where network.outgoing[slot] == back {
            choices -= 1
            break
        }
        guard choices > 0 else { return back }
        var pick = choices == 1 ? 0 : random.next(below: choices)
        for slot in first..<(first + count) {
            let candidate = network.outgoing[slot]
            if candidate == back { continue }
            if pick == 0 { return candidate }
            pick -= 1
        }
        return back
    }
}
