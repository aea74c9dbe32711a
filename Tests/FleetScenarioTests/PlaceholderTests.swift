import Testing
@testable import FleetScenario

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
