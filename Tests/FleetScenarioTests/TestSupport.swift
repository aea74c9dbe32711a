import FleetJSON
@testable import FleetScenario

/// The full error text of a fixture that failed to decode.
struct FixtureError: Error, Equatable {
    var text: String
}

/// Decodes inline fixture text; returns the scenario or the full error text.
func decodeFixture(_ text: String, overrides: [String] = [], environment: [String: String] = [:]) -> Result<Scenario, FixtureError> {
    let document: JSONDocument
    do {
        document = try JSONDocument.parse(text: text, file: "t.json")
    } catch {
        return .failure(FixtureError(text: error.description))
    }
    do {
        return .success(try Scenario.decode(document: document, overrides: overrides, environment: environment, defaultName: "t"))
    } catch {
        return .failure(FixtureError(text: error.description))
    }
}

func errorText(_ text: String, overrides: [String] = [], environment: [String: String] = [:]) -> String? {
    if case .failure(let failure) = decodeFixture(text, overrides: overrides, environment: environment) { return failure.text }
    return nil
}

func pattern(_ text: String) -> NamePattern {
    guard case .success(let parsed) = NamePattern.parse(text, allowed: Set(NamePlaceholder.allCases)) else {
        fatalError("bad test pattern \(text)")
    }
    return parsed
}
