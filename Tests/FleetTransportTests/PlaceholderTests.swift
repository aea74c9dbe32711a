import Testing
@testable import FleetTransport

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
