import MQTTCodec
import Testing
@testable import MQTTSession

@Suite("MQTTClientSession: malformed and unexpected input")
struct MQTTClientSessionViolationTests {
    struct Case: Sendable, CustomStringConvertible {
        var version: MQTTProtocolVersion
        var bytes: [UInt8]
        var cause: MQTTCloseCause
        var reasonCode: MQTTReasonCode
        var message: String
        var disconnect: [UInt8]
        var description: String { message }
    }

    static let cases: [Case] = [
        Case(version: .v3_1_1, bytes: [0x38, 0x04, 0x00, 0x01, 0x74, 0xAA], cause: .malformedPacket,
             reasonCode: .protocolError, message: "malformed packet from the server: PUBLISH has DUP set with QoS 0",
             disconnect: []),
        Case(version: .v5, bytes: [0x38, 0x04, 0x00, 0x01, 0x74, 0xAA], cause: .malformedPacket,
             reasonCode: .protocolError, message: "malformed packet from the server: PUBLISH has DUP set with QoS 0",
             disconnect: [0xE0, 0x01, 0x82]),
        Case(version: .v5, bytes: [0x00, 0x00], cause: .malformedPacket, reasonCode: .malformedPacket,
             message: "malformed packet from the server: packet type 0 is reserved in MQTT 5.0",
             disconnect: [0xE0, 0x01, 0x81]),
        Case(version: .v3_1_1, bytes: [0xF0, 0x00], cause: .malformedPacket, reasonCode: .malformedPacket,
             message: "malformed packet from the server: packet type 15 is reserved in MQTT 3.1.1", disconnect: []),
        Case(version: .v5, bytes: [0x40, 0x02, 0x00, 0x00], cause: .malformedPacket, reasonCode: .protocolError,
             message: "malformed packet from the server: PUBACK packet identifier is 0", disconnect: [0xE0, 0x01, 0x82]),
        Case(version: .v3_1_1, bytes: [0x90, 0x03, 0x00, 0x01, 0x05], cause: .malformedPacket,
             reasonCode: .malformedPacket,
             message: "malformed packet from the server: reason code 0x05 is not valid in SUBACK", disconnect: []),
        Case(version: .v5, bytes: [0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], cause: .malformedPacket,
             reasonCode: .malformedPacket, message: "malformed packet from the server: remaining length exceeds 4 bytes",
             disconnect: [0xE0, 0x01, 0x81]),
        Case(version: .v3_1_1, bytes: [0x82, 0x06, 0x00, 0x01, 0x00, 0x01, 0x74, 0x00], cause: .protocolViolation,
             reasonCode: .protocolError, message: "SUBSCRIBE is not a packet a server sends", disconnect: []),
        Case(version: .v5, bytes: [0xC0, 0x00], cause: .protocolViolation, reasonCode: .protocolError,
             message: "PINGREQ is not a packet a server sends", disconnect: [0xE0, 0x01, 0x82]),
        Case(version: .v5, bytes: [0xF0, 0x00], cause: .protocolViolation, reasonCode: .protocolError,
             message: "AUTH received, but this client did not start enhanced authentication",
             disconnect: [0xE0, 0x01, 0x82]),
    ]

    @Test("bad input closes the connection with a clear reason and the MQTT 5 code; later bytes are ignored",
          arguments: cases)
    func closes(_ input: Case) {
        var harness = Harness(MQTTSessionSettings(version: input.version))
        harness.connected(connAck: input.version == .v5 ? connAckV5 : connAckV3)
        harness.feed(input.bytes + [0x30, 0x03, 0x00, 0x01, 0x74], at: 1)
        let events = harness.takeEvents()
        #expect(events == [.closeConnection(MQTTSessionCloseReason(
            cause: input.cause, reasonCode: input.reasonCode, message: input.message))])
        #expect(events.first?.closesConnection == true)
        #expect(harness.sent() == input.disconnect)
        #expect(harness.session.state == .closing)
        #expect(harness.recorder.messages.isEmpty)
        harness.feed([0x30, 0x03, 0x00, 0x01, 0x74], at: 2)
        #expect(harness.takeEvents() == [])
    }

    @Test("an idle session is small: no tables allocated, a few hundred bytes inline")
    func idleSize() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connected(connAck: connAckV5)
        #expect(harness.session.outbound.slots.capacity == 0)
        #expect(harness.session.outbound.storedBytes.capacity == 0)
        #expect(harness.session.pendingRequests.capacity == 0)
        #expect(harness.session.inboundAwaitingRelease.capacity == 0)
        #expect(MemoryLayout<MQTTClientSession>.size <= 384)
    }

    @Test("releaseIdleStorage frees the window's storage once nothing is in flight, and publishing still works")
    func releaseIdleStorage() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        harness.publish("t", [1], qos: .atLeastOnce, at: 1)
        harness.session.releaseIdleStorage()
        #expect(harness.session.outbound.slots.capacity > 0)  // still in flight: kept
        harness.feed([0x40, 0x02, 0x00, 0x01], at: 2)
        harness.session.releaseIdleStorage()
        #expect(harness.session.outbound.slots.capacity == 0)
        #expect(harness.session.outbound.storedBytes.capacity == 0)
        _ = harness.sent()
        #expect(harness.publish("t", [2], qos: .atLeastOnce, at: 3) == .sent(packetID: 2))
        #expect(harness.sent() == [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x02, 0x02])
    }
}
