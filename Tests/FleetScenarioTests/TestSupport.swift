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

/// A deterministic generator for template rendering tests (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func pattern(_ text: String) -> NamePattern {
    guard case .success(let parsed) = NamePattern.parse(text, allowed: Set(NamePlaceholder.allCases)) else {
        fatalError("bad test pattern \(text)")
    }
    return parsed
}
