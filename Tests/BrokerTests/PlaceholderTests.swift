import Testing
import FleetBroker

@Test("placeholder") func placeholder() { #expect(Bool(true)) }
