import Testing
@testable import MQTTCodec
import FleetTestSupport

/// Feeds `bytes` in the chunks given and collects every packet, checking that nothing is returned before a
/// packet's last byte has arrived.
private func decodeInChunks(_ bytes: [UInt8], chunkSizes: [Int], version: MQTTProtocolVersion,
                            packetEnds: [Int]) throws -> [MQTTPacket] {
    var decoder = MQTTDecoder(version: version, initialCapacity: 16)
    var packets: [MQTTPacket] = []
    var fed = 0
    var sizes = chunkSizes.makeIterator()
    while fed < bytes.count {
        let size = min(sizes.next() ?? bytes.count, bytes.count - fed)
        decoder.feed(Array(bytes[fed..<(fed + size)]))
        fed += size
        while let packet = try decoder.next() { packets.append(packet) }
        // Exactly the packets whose last byte is in by now, and the rest of the bytes still buffered.
        let whole = packetEnds.filter { $0 <= fed }.count
        #expect(packets.count == whole)
        #expect(decoder.bufferedByteCount == fed - (whole == 0 ? 0 : packetEnds[whole - 1]))
    }
    return packets
}

@Suite("Incremental decoder")
struct MQTTDecoderTests {
    static let streams: [(MQTTProtocolVersion, [GoldenPacket])] = [
        (.v3_1_1, goldenPackets311.filter { $0.packet.type != .connect }),
        (.v5, goldenPackets5.filter { $0.packet.type != .connect }),
    ]

    private func stream(_ index: Int) -> (MQTTProtocolVersion, [UInt8], [MQTTPacket], [Int]) {
        let (version, goldens) = Self.streams[index]
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for golden in goldens {
            bytes += golden.bytes
            ends.append(bytes.count)
        }
        return (version, bytes, goldens.map(\.packet), ends)
    }

    @Test("all packets fed at once come out whole and in order", arguments: [0, 1])
    func allAtOnce(_ index: Int) throws {
        let (version, bytes, packets, ends) = stream(index)
        #expect(try decodeInChunks(bytes, chunkSizes: [bytes.count], version: version, packetEnds: ends) == packets)
    }

    @Test("bytes fed one at a time yield nothing until each packet is whole", arguments: [0, 1])
    func byteByByte(_ index: Int) throws {
        let (version, bytes, packets, ends) = stream(index)
        let ones = [Int](repeating: 1, count: bytes.count)
        #expect(try decodeInChunks(bytes, chunkSizes: ones, version: version, packetEnds: ends) == packets)
    }

    @Test("seeded random splits yield exactly the packets in order", arguments: [1, 2, 3, 42, 1234] as [UInt64])
    func randomSplits(_ seed: UInt64) throws {
        var random = TestRandom(seed: seed)
        for index in 0..<2 {
            let (version, bytes, packets, ends) = stream(index)
            for _ in 0..<20 {
                let sizes = (0..<bytes.count).map { _ in Int.random(in: 1...9, using: &random) }
                #expect(try decodeInChunks(bytes, chunkSizes: sizes, version: version, packetEnds: ends) == packets)
            }
        }
    }

    @Test("a PUBLISH view gives the topic, properties and payload ranges without copying")
    func publishView() throws {
        let golden = goldenPackets5.first { $0.name == "PUBLISH QoS 1 with properties" }!
        var decoder = MQTTDecoder(version: .v5)
        decoder.feed([0xC0, 0x00] + golden.bytes)  // a PINGREQ first, so ranges do not start at 0
        let ping = try #require(try decoder.nextView())
        #expect(ping.type == .pingReq && ping.packetRange == 0..<2)
        let view = try #require(try decoder.nextView())
        #expect(view.type == .publish)
        #expect(view.qos == .atLeastOnce && !view.retain && !view.dup)
        #expect(view.packetID == 10)
        #expect(view.packetRange == 2..<26)
        #expect(decoder.buffer.bytes(in: view.topicRange) == Array("a/b".utf8))
        #expect(decoder.buffer.bytes(in: view.payloadRange) == Array("hi".utf8))
        #expect(view.propertiesRange.count == 12)
        #expect(view.hasProperty(.userProperty) && view.hasProperty(.messageExpiryInterval))
        #expect(!view.hasProperty(.topicAlias))
        #expect(try decoder.nextView() == nil)
    }

    @Test("an ack view gives packet identifier and reason code")
    func ackView() throws {
        var decoder = MQTTDecoder(version: .v5)
        decoder.feed([0x50, 0x03, 0x12, 0x34, 0x10])
        let view = try #require(try decoder.nextView())
        #expect(view.type == .pubRec && view.packetID == 0x1234 && view.reasonCode == .noMatchingSubscribers)
    }

    @Test("a view parsed straight from a caller's buffer uses offsets in that buffer")
    func statelessView() throws {
        let bytes: [UInt8] = [0xFF, 0xFF, 0x40, 0x02, 0x00, 0x07, 0x40]
        let view = try bytes.withUnsafeBytes { raw in
            try MQTTDecoder.view(in: raw, from: 2, to: raw.count, version: .v3_1_1)
        }
        #expect(view?.packetRange == 2..<6 && view?.packetID == 7)
        let partial = try bytes.withUnsafeBytes { raw in
            try MQTTDecoder.view(in: raw, from: 6, to: raw.count, version: .v3_1_1)
        }
        #expect(partial == nil)
    }

    @Test("PUBLISH may repeat Subscription Identifier; SUBSCRIBE may not")
    func subscriptionIdentifierRepeat() throws {
        var decoder = MQTTDecoder(version: .v5)
        // PUBLISH QoS 0 "a", properties: subscription identifier 1, subscription identifier 2
        decoder.feed([0x30, 0x08, 0x00, 0x01, 0x61, 0x04, 0x0B, 0x01, 0x0B, 0x02])
        #expect(try decoder.next() == .publish(MQTTPublish(
            topic: "a", payload: [], properties: [.subscriptionIdentifier(1), .subscriptionIdentifier(2)])))
        var subscribeDecoder = MQTTDecoder(version: .v5)
        subscribeDecoder.feed([0x82, 0x0B, 0x00, 0x01, 0x04, 0x0B, 0x01, 0x0B, 0x02, 0x00, 0x01, 0x61, 0x00])
        #expect(throws: MQTTDecodeError.duplicateProperty(.subscriptionIdentifier, context: .subscribe)) {
            try subscribeDecoder.next()
        }
    }

    @Test("an empty PUBLISH topic is accepted in 5.0 when a Topic Alias is present")
    func emptyTopicWithAlias() throws {
        var decoder = MQTTDecoder(version: .v5)
        decoder.feed([0x30, 0x06, 0x00, 0x00, 0x03, 0x23, 0x00, 0x07])
        #expect(try decoder.next() == .publish(MQTTPublish(topic: "", payload: [], properties: [.topicAlias(7)])))
    }

    @Test("the decoder's buffer is reused: no growth after the first packets")
    func bufferReuse() throws {
        var decoder = MQTTDecoder(version: .v3_1_1, initialCapacity: 64)
        let bytes = goldenPackets311.first { $0.name == "PUBLISH QoS 1 DUP RETAIN" }!.bytes
        for _ in 0..<1000 {
            decoder.feed(bytes)
            #expect(try decoder.nextView() != nil)
        }
        #expect(decoder.buffer.capacity == 64)
    }
}
