import Testing
@testable import FleetCLI

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
