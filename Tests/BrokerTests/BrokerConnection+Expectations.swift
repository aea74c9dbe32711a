import MQTTCodec
import Testing

// Expectations on what the broker sends. Each receives into a local first: `#expect` shows both sides of `==`
// only when neither contains `try`, and a failure should print the whole packet mosquitto sent.
extension BrokerConnection {
    /// Expects the broker's next packet to be exactly `expected`.
    func expectReceive(_ expected: MQTTPacket, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let received = try receive()
        #expect(received == expected, sourceLocation: sourceLocation)
    }

    /// Sends `packet` and expects the broker's next packet to be exactly `expected`.
    func expectAnswer(
        to packet: MQTTPacket, is expected: MQTTPacket, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let answer = try exchange(packet)
        #expect(answer == expected, sourceLocation: sourceLocation)
    }

    /// Expects exactly `expected` (often nothing) to arrive before the answer to a PINGREQ sent now.
    func expectBeforePingResponse(
        _ expected: [MQTTPacket], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let received = try packetsBeforePingResponse()
        #expect(received == expected, sourceLocation: sourceLocation)
    }
}
