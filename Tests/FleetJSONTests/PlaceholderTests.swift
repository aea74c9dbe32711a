import Testing
@testable import FleetJSON

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
