import Testing
@testable import MQTTSession

@Test("placeholder until this layer has tests") func placeholder() { #expect(Bool(true)) }
