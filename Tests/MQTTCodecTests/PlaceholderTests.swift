import Testing
@testable import MQTTCodec

@Test("placeholder") func placeholder() { #expect(Bool(true)) }
