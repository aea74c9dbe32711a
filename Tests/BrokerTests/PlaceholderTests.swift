import Testing
import FleetTestSupport

@Test("placeholder") func placeholder() { #expect(Bool(true)) }
