import Testing
@testable import MQTTCodec
import FleetTestSupport

/// Bytes that must be rejected, with the exact error, message and reason code expected.
struct MalformedInput: Sendable, CustomTestStringConvertible {
    let name: String
    var version: MQTTProtocolVersion = .v3_1_1
    var maximumPacketSize = MQTTDecoder.protocolMaximumPacketSize
    let bytes: [UInt8]
    let error: MQTTDecodeError
    let message: String
    let reasonCode: UInt8
    var testDescription: String { name }
}

let malformedInputs: [MalformedInput] = [
    MalformedInput(name: "remaining length of 5 bytes",
                   bytes: [0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F],
                   error: .variableByteIntegerTooLong(field: "remaining length"),
                   message: "remaining length exceeds 4 bytes", reasonCode: 0x81),
    MalformedInput(name: "packet over the configured maximum size", maximumPacketSize: 16,
                   bytes: [0x30, 0x14, 0x00, 0x01],
                   error: .packetTooLarge(size: 22, maximum: 16),
                   message: "packet of 22 bytes exceeds the maximum packet size of 16 bytes", reasonCode: 0x95),
    MalformedInput(name: "PUBREL with flags 0b0000",
                   bytes: [0x60, 0x02, 0x00, 0x01],
                   error: .invalidFixedHeaderFlags(.pubRel, flags: 0, required: 2),
                   message: "PUBREL fixed header flags are 0b0000, must be 0b0010", reasonCode: 0x81),
    MalformedInput(name: "SUBSCRIBE with flags 0b0000",
                   bytes: [0x80, 0x06, 0x00, 0x01, 0x00, 0x01, 0x61, 0x00],
                   error: .invalidFixedHeaderFlags(.subscribe, flags: 0, required: 2),
                   message: "SUBSCRIBE fixed header flags are 0b0000, must be 0b0010", reasonCode: 0x81),
    MalformedInput(name: "UNSUBSCRIBE with flags 0b0011",
                   bytes: [0xA3, 0x05, 0x00, 0x01, 0x00, 0x01, 0x61],
                   error: .invalidFixedHeaderFlags(.unsubscribe, flags: 3, required: 2),
                   message: "UNSUBSCRIBE fixed header flags are 0b0011, must be 0b0010", reasonCode: 0x81),
    MalformedInput(name: "PINGREQ with flags 0b0001",
                   bytes: [0xC1, 0x00],
                   error: .invalidFixedHeaderFlags(.pingReq, flags: 1, required: 0),
                   message: "PINGREQ fixed header flags are 0b0001, must be 0b0000", reasonCode: 0x81),
    MalformedInput(name: "PUBLISH QoS 3",
                   bytes: [0x36, 0x05, 0x00, 0x01, 0x61, 0x00, 0x01],
                   error: .invalidQoS(.publish), message: "PUBLISH QoS is 3", reasonCode: 0x81),
    MalformedInput(name: "PUBLISH DUP with QoS 0",
                   bytes: [0x38, 0x03, 0x00, 0x01, 0x61],
                   error: .dupWithQoS0, message: "PUBLISH has DUP set with QoS 0", reasonCode: 0x82),
    MalformedInput(name: "PUBLISH QoS 1 with packet identifier 0",
                   bytes: [0x32, 0x05, 0x00, 0x01, 0x61, 0x00, 0x00],
                   error: .packetIdentifierZero(.publish), message: "PUBLISH packet identifier is 0", reasonCode: 0x82),
    MalformedInput(name: "PUBACK with packet identifier 0",
                   bytes: [0x40, 0x02, 0x00, 0x00],
                   error: .packetIdentifierZero(.pubAck), message: "PUBACK packet identifier is 0", reasonCode: 0x82),
    MalformedInput(name: "SUBSCRIBE with packet identifier 0",
                   bytes: [0x82, 0x06, 0x00, 0x00, 0x00, 0x01, 0x61, 0x00],
                   error: .packetIdentifierZero(.subscribe), message: "SUBSCRIBE packet identifier is 0",
                   reasonCode: 0x82),
    MalformedInput(name: "topic with a stray continuation byte",
                   bytes: [0x30, 0x04, 0x00, 0x02, 0xC3, 0x28],
                   error: .invalidUTF8(field: "PUBLISH topic"), message: "PUBLISH topic is not valid UTF-8",
                   reasonCode: 0x81),
    MalformedInput(name: "topic with a UTF-16 surrogate",
                   bytes: [0x30, 0x05, 0x00, 0x03, 0xED, 0xA0, 0x80],
                   error: .invalidUTF8(field: "PUBLISH topic"), message: "PUBLISH topic is not valid UTF-8",
                   reasonCode: 0x81),
    MalformedInput(name: "topic with an overlong encoding",
                   bytes: [0x30, 0x04, 0x00, 0x02, 0xC0, 0xAF],
                   error: .invalidUTF8(field: "PUBLISH topic"), message: "PUBLISH topic is not valid UTF-8",
                   reasonCode: 0x81),
    MalformedInput(name: "topic containing U+0000",
                   bytes: [0x30, 0x04, 0x00, 0x02, 0x61, 0x00],
                   error: .nullCharacter(field: "PUBLISH topic"), message: "PUBLISH topic contains U+0000",
                   reasonCode: 0x81),
    MalformedInput(name: "client identifier containing U+0000",
                   bytes: [0x10, 0x0D, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3C,
                           0x00, 0x01, 0x00],
                   error: .nullCharacter(field: "Client Identifier"), message: "Client Identifier contains U+0000",
                   reasonCode: 0x81),
    MalformedInput(name: "PUBLISH topic with wildcard '+'",
                   bytes: [0x30, 0x05, 0x00, 0x03, 0x61, 0x2F, 0x2B],
                   error: .wildcardInTopicName(field: "PUBLISH topic", wildcard: "+"),
                   message: "PUBLISH topic contains wildcard '+'", reasonCode: 0x82),
    MalformedInput(name: "PUBLISH topic with wildcard '#'",
                   bytes: [0x30, 0x03, 0x00, 0x01, 0x23],
                   error: .wildcardInTopicName(field: "PUBLISH topic", wildcard: "#"),
                   message: "PUBLISH topic contains wildcard '#'", reasonCode: 0x82),
    MalformedInput(name: "empty PUBLISH topic in 3.1.1",
                   bytes: [0x30, 0x02, 0x00, 0x00],
                   error: .emptyTopicName(field: "PUBLISH topic"), message: "PUBLISH topic is empty", reasonCode: 0x82),
    MalformedInput(name: "Topic Alias repeated", version: .v5,
                   bytes: [0x30, 0x0A, 0x00, 0x01, 0x61, 0x06, 0x23, 0x00, 0x01, 0x23, 0x00, 0x02],
                   error: .duplicateProperty(.topicAlias, context: .publish),
                   message: "property Topic Alias appears more than once in PUBLISH", reasonCode: 0x82),
    MalformedInput(name: "Reason String repeated in PUBACK", version: .v5,
                   bytes: [0x40, 0x0B, 0x00, 0x01, 0x10, 0x07, 0x1F, 0x00, 0x01, 0x61, 0x1F, 0x00, 0x00],
                   error: .duplicateProperty(.reasonString, context: .pubAck),
                   message: "property Reason String appears more than once in PUBACK", reasonCode: 0x82),
    MalformedInput(name: "Session Expiry Interval in PUBLISH", version: .v5,
                   bytes: [0x30, 0x09, 0x00, 0x01, 0x61, 0x05, 0x11, 0x00, 0x00, 0x00, 0x01],
                   error: .propertyNotAllowed(.sessionExpiryInterval, context: .publish),
                   message: "property Session Expiry Interval is not allowed in PUBLISH", reasonCode: 0x81),
    MalformedInput(name: "Will Delay Interval in CONNECT properties", version: .v5,
                   bytes: [0x10, 0x12, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05, 0x02, 0x00, 0x3C,
                           0x05, 0x18, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00],
                   error: .propertyNotAllowed(.willDelayInterval, context: .connect),
                   message: "property Will Delay Interval is not allowed in CONNECT", reasonCode: 0x81),
    MalformedInput(name: "unknown property identifier", version: .v5,
                   bytes: [0x30, 0x06, 0x00, 0x01, 0x61, 0x02, 0x05, 0x00],
                   error: .unknownProperty(0x05, context: .publish),
                   message: "unknown property identifier 0x05 in PUBLISH", reasonCode: 0x81),
    MalformedInput(name: "Receive Maximum 0", version: .v5,
                   bytes: [0x20, 0x06, 0x00, 0x00, 0x03, 0x21, 0x00, 0x00],
                   error: .invalidPropertyValue(.receiveMaximum, value: 0),
                   message: "property Receive Maximum has invalid value 0", reasonCode: 0x82),
    MalformedInput(name: "Payload Format Indicator 2", version: .v5,
                   bytes: [0x30, 0x06, 0x00, 0x01, 0x61, 0x02, 0x01, 0x02],
                   error: .invalidPropertyValue(.payloadFormatIndicator, value: 2),
                   message: "property Payload Format Indicator has invalid value 2", reasonCode: 0x82),
    MalformedInput(name: "property length of 5 bytes", version: .v5,
                   bytes: [0x30, 0x08, 0x00, 0x01, 0x61, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
                   error: .variableByteIntegerTooLong(field: "property length"),
                   message: "property length exceeds 4 bytes", reasonCode: 0x81),
    MalformedInput(name: "property list longer than the packet", version: .v5,
                   bytes: [0x30, 0x05, 0x00, 0x01, 0x61, 0x09, 0x01],
                   error: .truncated(.publish, field: "properties"), message: "PUBLISH properties is truncated",
                   reasonCode: 0x81),
    MalformedInput(name: "topic length past the remaining length",
                   bytes: [0x30, 0x03, 0x00, 0x05, 0x61],
                   error: .truncated(.publish, field: "topic name"), message: "PUBLISH topic name is truncated",
                   reasonCode: 0x81),
    MalformedInput(name: "PUBACK with remaining length 1",
                   bytes: [0x40, 0x01, 0x00],
                   error: .truncated(.pubAck, field: "packet identifier"),
                   message: "PUBACK packet identifier is truncated", reasonCode: 0x81),
    MalformedInput(name: "CONNACK with remaining length 1",
                   bytes: [0x20, 0x01, 0x00],
                   error: .truncated(.connAck, field: "return code"), message: "CONNACK return code is truncated",
                   reasonCode: 0x81),
    MalformedInput(name: "3.1.1 PUBACK with a byte after the packet identifier",
                   bytes: [0x40, 0x03, 0x00, 0x01, 0x00],
                   error: .trailingBytes(.pubAck, count: 1), message: "PUBACK has 1 byte after its last field",
                   reasonCode: 0x81),
    MalformedInput(name: "PINGREQ with remaining length 2",
                   bytes: [0xC0, 0x02, 0x00, 0x00],
                   error: .trailingBytes(.pingReq, count: 2), message: "PINGREQ has 2 bytes after its last field",
                   reasonCode: 0x81),
    MalformedInput(name: "3.1.1 DISCONNECT with a body",
                   bytes: [0xE0, 0x01, 0x00],
                   error: .trailingBytes(.disconnect, count: 1), message: "DISCONNECT has 1 byte after its last field",
                   reasonCode: 0x81),
    MalformedInput(name: "packet type 0",
                   bytes: [0x00, 0x00],
                   error: .reservedPacketType(0, version: .v3_1_1), message: "packet type 0 is reserved in MQTT 3.1.1",
                   reasonCode: 0x81),
    MalformedInput(name: "AUTH in 3.1.1",
                   bytes: [0xF0, 0x00],
                   error: .reservedPacketType(15, version: .v3_1_1),
                   message: "packet type 15 is reserved in MQTT 3.1.1", reasonCode: 0x81),
    MalformedInput(name: "CONNECT protocol level 6",
                   bytes: [0x10, 0x07, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x06],
                   error: .unsupportedProtocol(name: "MQTT", level: 6),
                   message: "CONNECT protocol name \"MQTT\" level 6 is not supported", reasonCode: 0x84),
    MalformedInput(name: "CONNECT reserved flag set",
                   bytes: [0x10, 0x0C, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x03, 0x00, 0x3C, 0x00, 0x00],
                   error: .invalidConnectFlags(0x03, reason: "reserved bit 0 is set"),
                   message: "CONNECT flags 0b00000011: reserved bit 0 is set", reasonCode: 0x81),
    MalformedInput(name: "CONNECT will QoS without will flag",
                   bytes: [0x10, 0x0C, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x0A, 0x00, 0x3C, 0x00, 0x00],
                   error: .invalidConnectFlags(0x0A, reason: "Will QoS or Will Retain set without Will Flag"),
                   message: "CONNECT flags 0b00001010: Will QoS or Will Retain set without Will Flag",
                   reasonCode: 0x81),
    MalformedInput(name: "3.1.1 CONNECT password without user name",
                   bytes: [0x10, 0x0C, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x42, 0x00, 0x3C, 0x00, 0x00],
                   error: .invalidConnectFlags(0x42, reason: "Password Flag set without User Name Flag"),
                   message: "CONNECT flags 0b01000010: Password Flag set without User Name Flag", reasonCode: 0x81),
    MalformedInput(name: "CONNECT with a byte after the client identifier",
                   bytes: [0x10, 0x0D, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3C, 0x00, 0x00, 0x00],
                   error: .trailingBytes(.connect, count: 1), message: "CONNECT has 1 byte after its last field",
                   reasonCode: 0x81),
    MalformedInput(name: "PUBACK reason code not valid for PUBACK", version: .v5,
                   bytes: [0x40, 0x03, 0x00, 0x01, 0x8F],
                   error: .invalidReasonCode(0x8F, .pubAck), message: "reason code 0x8F is not valid in PUBACK",
                   reasonCode: 0x81),
    MalformedInput(name: "3.1.1 CONNACK return code 6",
                   bytes: [0x20, 0x02, 0x00, 0x06],
                   error: .invalidReasonCode(0x06, .connAck), message: "reason code 0x06 is not valid in CONNACK",
                   reasonCode: 0x81),
    MalformedInput(name: "CONNACK reserved acknowledge flag",
                   bytes: [0x20, 0x02, 0x02, 0x00],
                   error: .invalidConnAckFlags(0x02), message: "CONNACK acknowledge flags 0b00000010 are invalid",
                   reasonCode: 0x81),
    MalformedInput(name: "SUBSCRIBE options with reserved bits", version: .v5,
                   bytes: [0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, 0x61, 0xC0],
                   error: .invalidSubscriptionOptions(0xC0),
                   message: "subscription options 0b11000000 have reserved bits or Retain Handling 3", reasonCode: 0x81),
    MalformedInput(name: "SUBSCRIBE options with Retain Handling 3", version: .v5,
                   bytes: [0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, 0x61, 0x30],
                   error: .invalidSubscriptionOptions(0x30),
                   message: "subscription options 0b00110000 have reserved bits or Retain Handling 3", reasonCode: 0x81),
    MalformedInput(name: "SUBSCRIBE requesting QoS 3",
                   bytes: [0x82, 0x06, 0x00, 0x01, 0x00, 0x01, 0x61, 0x03],
                   error: .invalidQoS(.subscribe), message: "SUBSCRIBE QoS is 3", reasonCode: 0x81),
    MalformedInput(name: "SUBSCRIBE without topic filters",
                   bytes: [0x82, 0x02, 0x00, 0x01],
                   error: .noTopicFilters(.subscribe), message: "SUBSCRIBE has no topic filter", reasonCode: 0x82),
    MalformedInput(name: "UNSUBSCRIBE without topic filters",
                   bytes: [0xA2, 0x02, 0x00, 0x01],
                   error: .noTopicFilters(.unsubscribe), message: "UNSUBSCRIBE has no topic filter", reasonCode: 0x82),
    MalformedInput(name: "3.1.1 SUBACK with a 5.0-only reason code",
                   bytes: [0x90, 0x03, 0x00, 0x01, 0x8F],
                   error: .invalidReasonCode(0x8F, .subAck), message: "reason code 0x8F is not valid in SUBACK",
                   reasonCode: 0x81),
]

@Suite("Malformed input")
struct MQTTDecodeErrorTests {
    @Test("each malformed input fails with its exact error, message and reason code", arguments: malformedInputs)
    func rejects(_ input: MalformedInput) {
        var decoder = MQTTDecoder(version: input.version, maximumPacketSize: input.maximumPacketSize)
        decoder.feed(input.bytes)
        do {
            let packet = try decoder.next()
            Issue.record("decoded \(String(describing: packet)) instead of failing")
        } catch {
            #expect(error == input.error)
            #expect(error.message == input.message)
            #expect(error.reasonCode.rawValue == input.reasonCode)
        }
    }

    @Test("bytes after a malformed packet do not change the error; nothing is consumed")
    func errorIsSticky() {
        var decoder = MQTTDecoder(version: .v3_1_1)
        decoder.feed([0x40, 0x02, 0x00, 0x00, 0xC0, 0x00])
        #expect(throws: MQTTDecodeError.packetIdentifierZero(.pubAck)) { try decoder.next() }
        #expect(throws: MQTTDecodeError.packetIdentifierZero(.pubAck)) { try decoder.next() }
        #expect(decoder.bufferedByteCount == 6)
    }

    @Test("seeded random corruptions of golden packets never trap, and what decodes re-encodes stably",
          arguments: [7, 99, 2024] as [UInt64])
    func corruptionsNeverTrap(_ seed: UInt64) throws {
        var random = TestRandom(seed: seed)
        let goldens = goldenPackets311 + goldenPackets31 + goldenPackets5
        var decodedCount = 0
        var rejectedCount = 0
        for _ in 0..<3000 {
            let golden = goldens[Int.random(in: 0..<goldens.count, using: &random)]
            var bytes = golden.bytes
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if Bool.random(using: &random) { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &random)) }
            var decoder = MQTTDecoder(version: golden.version, maximumPacketSize: 1024)
            decoder.feed(bytes)
            do {
                while let packet = try decoder.next() {
                    decodedCount += 1
                    // Whatever decodes must survive encode → decode unchanged.
                    let version = decoder.version
                    var again = MQTTDecoder(version: version)
                    again.feed(packet.encoded(version: version))
                    #expect(try again.next() == packet)
                }
            } catch {
                rejectedCount += 1
                #expect(!error.message.isEmpty)
            }
        }
        #expect(decodedCount > 0)
        #expect(rejectedCount > 0)
    }
}
