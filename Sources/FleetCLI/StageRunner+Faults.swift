import FleetEngine
import FleetScenario

extension StageRunner {
    /// Tunnels and churn on the running engine's clients.
    func performClientFault(_ stage: Stage, engine: Engine) {
        do {
            switch stage.kind {
            case let .tunnel(fleet, fraction, outage):
                let cut = try engine.tunnel(fleet: fleet, fraction: fraction,
                                            outage: outage.lowerBound.nanoseconds...outage.upperBound.nanoseconds)
                if !quiet {
                    console.print("stage tunnel: \(cut) clients of \(fleet) lost their connection for \(outage.lowerBound)-\(outage.upperBound)")
                }
            case let .churn(fleet, rate):
                let planned = try engine.churn(fleet: fleet, ratePerSecond: rate, duration: stage.duration.nanoseconds)
                if !quiet { console.print("stage churn: \(planned) reconnects of \(fleet) at \(rate)/s over \(stage.duration)") }
            default:
                break
            }
        } catch {
            console.error("fleetbench: stage \(stage.kind.name) failed: \(error)")
        }
    }
}
