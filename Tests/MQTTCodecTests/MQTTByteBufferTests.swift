import Testing
@testable import MQTTCodec

@Suite("Byte buffer and the encoding fast path")
struct MQTTByteBufferTests {
    @Test("fast-path PUBLISH equals the general encoding", arguments: MQTTProtocolVersion.allCases, MQTTQoS.allCases)
    func fastPublishMatchesGeneral(_ version: MQTTProtocolVersion, _ qos: MQTTQoS) throws {
        let properties: [MQTTProperty] = version.hasProperties
            ? [.userProperty(name: "run", value: "r1"), .userProperty(name: "car", value: "42")] : []
        let payload = (0..<64).map { UInt8($0) }
        let general = MQTTPacket.publish(MQTTPublish(
            topic: "fleet/car/42", payload: payload, qos: qos, retain: true, dup: qos != .atMostOnce,
            packetID: qos == .atMostOnce ? 0 : 513, properties: properties))
        var buffer = MQTTByteBuffer(capacity: 16)
        let topic = try MQTTTopicName("fleet/car/42")
        buffer.writePublish(topic: topic, packetID: 513, qos: qos, retain: true, dup: qos != .atMostOnce,
                            version: version, properties: MQTTEncodedProperties(properties),
                            payloadCount: 64) { target in
            for index in 0..<64 { target[index] = UInt8(index) }
        }
        #expect(buffer.readableBytes == general.encoded(version: version))
        #expect(MQTTByteBuffer.publishSize(topicByteCount: 12, qos: qos, version: version,
                                           propertiesByteCount: MQTTEncodedProperties(properties).bytes.count,
                                           payloadCount: 64) == buffer.readableCount)
    }

    @Test("fast-path acks and PINGREQ equal the general encoding", arguments: MQTTProtocolVersion.allCases)
    func fastAcksMatchGeneral(_ version: MQTTProtocolVersion) {
        var buffer = MQTTByteBuffer()
        buffer.writePublishAck(.pubAck, packetID: 7, version: version)
        buffer.writePublishAck(.pubRec, packetID: 8, reasonCode: .noMatchingSubscribers, version: version)
        buffer.writePublishAck(.pubRel, packetID: 9, version: version)
        buffer.writePublishAck(.pubComp, packetID: 10, version: version)
        buffer.writePingReq()
        buffer.writePingResp()
        let v5 = version.hasProperties
        let expected: [MQTTPacket] = [
            .pubAck(MQTTPubAck(packetID: 7)),
            .pubRec(MQTTPubAck(packetID: 8, reasonCode: v5 ? .noMatchingSubscribers : .success)),
            .pubRel(MQTTPubAck(packetID: 9)), .pubComp(MQTTPubAck(packetID: 10)), .pingReq, .pingResp,
        ]
        #expect(buffer.readableBytes == expected.flatMap { $0.encoded(version: version) })
    }

    @Test("clear keeps capacity and reading compacts instead of growing")
    func reuse() {
        var buffer = MQTTByteBuffer(capacity: 32)
        buffer.writeBytes([UInt8](repeating: 1, count: 100))
        let grown = buffer.capacity
        #expect(grown == 128)
        buffer.clear()
        #expect(buffer.capacity == grown && buffer.isEmpty)
        buffer.writeBytes([UInt8](repeating: 2, count: 100))
        buffer.moveReaderIndex(forwardBy: 90)
        buffer.writeBytes([UInt8](repeating: 3, count: 100))  // fits after moving the 10 unread bytes to the front
        #expect(buffer.capacity == grown)
        #expect(buffer.readableBytes == [UInt8](repeating: 2, count: 10) + [UInt8](repeating: 3, count: 100))
    }

    @Test("writeWithUnsafeMutableBytes advances by what the body reports")
    func directWrite() {
        var buffer = MQTTByteBuffer(capacity: 16)
        let written = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 64) { target in
            #expect(target.count >= 64)
            target[0] = 0xC0
            target[1] = 0x00
            return 2
        }
        #expect(written == 2 && buffer.readableBytes == [0xC0, 0x00])
    }

    @Test("MQTTEncodedProperties holds the property list bytes without their length")
    func encodedProperties() {
        let encoded = MQTTEncodedProperties([.userProperty(name: "k", value: "v"), .topicAlias(3)])
        #expect(encoded.bytes == [0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x76, 0x23, 0x00, 0x03])
    }
}
