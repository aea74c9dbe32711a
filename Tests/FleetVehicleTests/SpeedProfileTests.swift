import Testing
@testable import FleetVehicle

@Suite("SpeedProfile: one leg's speed under acceleration and braking bounds")
struct SpeedProfileTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let entry: Double, cruise: Double, exitTarget: Double, distance: Double
        // Expected: peak and exit speeds (m/s), phase durations (s).
        let peak: Double, exit: Double, ramp: Double, cruiseTime: Double, final: Double
        var testDescription: String { name }
    }

    // a = 2 m/s², b = 3 m/s² throughout; expected values worked out by hand from v² = v0² + 2as.
    static let cases: [Case] = [
        Case(name: "from rest to the limit, then cruise", entry: 0, cruise: 10, exitTarget: 10, distance: 100,
             peak: 10, exit: 10, ramp: 5, cruiseTime: 7.5, final: 0),
        Case(name: "too short to reach the limit: accelerate, then brake to a stop (triangle)", entry: 0, cruise: 20, exitTarget: 0, distance: 30,
             peak: 72.0.squareRoot(), exit: 0, ramp: 72.0.squareRoot() / 2, cruiseTime: 0, final: 72.0.squareRoot() / 3),
        Case(name: "entering above a lower limit: brake to it, then cruise", entry: 20, cruise: 10, exitTarget: 10, distance: 100,
             peak: 10, exit: 10, ramp: 10.0 / 3, cruiseTime: 5, final: 0),
        Case(name: "too short to stop: leave still braking at the reachable speed", entry: 20, cruise: 20, exitTarget: 0, distance: 30,
             peak: 20, exit: 220.0.squareRoot(), ramp: 0, cruiseTime: 0, final: (20 - 220.0.squareRoot()) / 3),
        Case(name: "too short to reach the next limit: accelerate all the way", entry: 0, cruise: 30, exitTarget: 30, distance: 25,
             peak: 10, exit: 10, ramp: 5, cruiseTime: 0, final: 0),
        Case(name: "cruise, then slow down for the next road", entry: 10, cruise: 10, exitTarget: 4, distance: 50,
             peak: 10, exit: 4, ramp: 0, cruiseTime: (50 - 14) / 10.0, final: 2),
    ]

    @Test("plans the expected phases", arguments: cases)
    func plannedPhases(_ c: Case) {
        let profile = SpeedProfile.plan(entry: c.entry, cruise: c.cruise, exitTarget: c.exitTarget, distance: c.distance,
                                        acceleration: 2, deceleration: 3)
        #expect(abs(Double(profile.peakSpeed) - c.peak) < 1e-5)
        #expect(abs(Double(profile.exitSpeed) - c.exit) < 1e-5)
        #expect(abs(Double(profile.rampDuration) - c.ramp) < 1e-5)
        #expect(abs(Double(profile.cruiseDuration) - c.cruiseTime) < 1e-5)
        #expect(abs(Double(profile.finalDuration) - c.final) < 1e-5)
        #expect(abs(profile.length - c.distance) < 1e-4)
        #expect(profile.distance(at: profile.duration) == profile.length)
        #expect(profile.distance(at: profile.duration + 1) == profile.length)
        #expect(profile.distance(at: 0) == 0)
        #expect(profile.speed(at: 0) == c.entry)
    }

    @Test("over 10,000 random legs: distance never decreases, speed stays within bounds, speed and distance agree")
    func randomLegs() {
        var random = VehicleRandom(seed: 9, index: 0, purpose: 0)
        var checkedSteps = 0
        for _ in 0..<10_000 {
            let cruise = random.next(in: 1...40)
            let entry = random.nextUnit() < 0.2 ? 0 : random.next(in: 0...(cruise * 1.5))
            let exitTarget = random.nextUnit() < 0.3 ? 0 : random.next(in: 0...cruise)
            let distance = random.nextUnit() < 0.2 ? random.next(in: 0.01...5) : random.next(in: 5...500)
            let a = random.next(in: 0.5...4), b = random.next(in: 1...6)
            let profile = SpeedProfile.plan(entry: entry, cruise: cruise, exitTarget: exitTarget, distance: distance, acceleration: a, deceleration: b)
            #expect(abs(profile.length - distance) <= 1e-4 * max(1, distance))
            #expect(Double(profile.exitSpeed) <= max(exitTarget, Double(profile.entrySpeed)) + 1e-4)
            let steps = 40
            let peak = Double(profile.peakSpeed)
            var previousDistance = 0.0
            var previousSpeed = profile.speed(at: 0)
            let dt = profile.duration / Double(steps)
            for step in 1...steps {
                let time = step == steps ? profile.duration : dt * Double(step)
                let covered = profile.distance(at: time)
                let speed = profile.speed(at: time)
                guard covered >= previousDistance, covered <= profile.length, speed >= 0,
                      speed <= max(entry, cruise) + 1e-4,
                      abs(speed - previousSpeed) <= max(a, b) * dt * (1 + 1e-4) + 1e-5,
                      // Speed is linear within a phase and equals the peak at both phase boundaries, so over a step
                      // it ranges between the ends' speeds and possibly the peak.
                      covered - previousDistance <= max(speed, previousSpeed, peak) * dt * (1 + 1e-5) + 1e-6,
                      covered - previousDistance >= min(speed, previousSpeed, peak) * dt * (1 - 1e-5) - 1e-6
                else {
                    Issue.record("leg \(profile) at \(time) s: distance \(previousDistance) -> \(covered), speed \(previousSpeed) -> \(speed)")
                    return
                }
                previousDistance = covered
                previousSpeed = speed
                checkedSteps += 1
            }
            #expect(previousDistance == profile.length)
        }
        #expect(checkedSteps == 400_000)
    }

    @Test("a standing profile covers nothing and lasts the sum of its two periods")
    func standing() {
        let profile = SpeedProfile.standing(first: 30, second: 90)
        #expect(profile.duration == 120)
        #expect(profile.length == 0)
        #expect(profile.distance(at: 10) == 0 && profile.distance(at: 60) == 0)
        #expect(profile.speed(at: 45) == 0)
    }
}
