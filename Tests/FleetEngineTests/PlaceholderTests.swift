import Testing
@testable import FleetEngine

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
