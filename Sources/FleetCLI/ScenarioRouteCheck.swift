import FleetEngine
import FleetJSON
import FleetScenario

/// The engine's refusal of ambiguous delivery routes (`Engine.refuseAmbiguousRoutes`: a client that would get one
/// accounted stream through a plain and a shared subscription, or through two groups), run on a scenario before
/// anything connects, so `validate` and `run` refuse it as an invalid scenario (exit 65) with the engine's own
/// message, located at the subscribing fleet's `subscriptions` in the file.
enum ScenarioRouteCheck {
    /// `file:line:column: fleets[i].subscriptions: message`, or nil when every route is unambiguous. Problems
    /// other than an ambiguous route (none are expected from a valid scenario) are left to the run.
    static func diagnostic(_ scenario: Scenario, file: String) -> String? {
        guard let configuration = try? ScenarioMapping.engineConfiguration(scenario, brokers: [], seed: 1) else { return nil }
        do {
            try Engine.refuseAmbiguousRoutes(configuration)
            return nil
        } catch let error as EngineConfigurationError {
            guard let name = error.fleet, let index = scenario.fleets.firstIndex(where: { $0.name == name }) else {
                return "\(file): \(error.message)"
            }
            var path = JSONPath.root.appending("fleets").appending(index: index)
            if !scenario.fleets[index].subscriptions.isEmpty { path = path.appending("subscriptions") }
            guard let document = try? JSONDocument.load(path: file) else { return "\(file): \(path): \(error.message)" }
            let position = document.position(of: path)
            return "\(file):\(position.line):\(position.column): \(path): \(error.message)"
        } catch {
            return nil
        }
    }
}
