import Testing
@testable import FleetReports

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
