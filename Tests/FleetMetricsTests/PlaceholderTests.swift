import Testing
@testable import FleetMetrics

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
