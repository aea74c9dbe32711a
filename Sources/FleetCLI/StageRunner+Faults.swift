import FleetEngine
import FleetScenario

extension StageRunner {
    /// Tunnels and churn need the engine's fault API (being added); until then they are announced and skipped.
    func performClientFault(_ stage: Stage, engine: Engine) {
        console.error("fleetbench: stage \(stage.kind.name) is not supported by the engine yet; skipped")
    }
}
