import Testing
@testable import MQTTCodec
import FleetTestSupport

/// Builds random but valid packets for a version from a seeded generator.
struct RandomPacketMaker {
    var random: TestRandom
    let version: MQTTProtocolVersion

    private static let characters: [String] = ["a", "b", "z", "0", "-", "_", " ", "é", "€", "日", "𝄞"]

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func bool() -> Bool { Bool.random(using: &random) }
    mutating func string(_ lengths: ClosedRange<Int> = 0...12) -> String {
        var text = ""
        for _ in 0..<int(lengths) { text += Self.characters[int(0...(Self.characters.count - 1))] }
        return text
    }
    mutating func bytes(_ lengths: ClosedRange<Int> = 0...40) -> [UInt8] {
        (0..<int(lengths)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }
    mutating func topic() -> String {
        (0..<int(1...4)).map { _ in string(1...5) }.joined(separator: "/")
    }
    mutating func packetID() -> UInt16 { UInt16(int(1...65535)) }
    mutating func qos() -> MQTTQoS { MQTTQoS(rawValue: UInt8(int(0...2)))! }

    /// Random valid properties for `context`: each allowed identifier at most once, plus user properties.
    mutating func properties(_ context: MQTTPropertyContext) -> [MQTTProperty] {
        guard version.hasProperties else { return [] }
        var list: [MQTTProperty] = []
        for identifier in MQTTPropertyIdentifier.allCases where identifier.isAllowed(in: context) && int(0...3) == 0 {
            list.append(value(of: identifier))
        }
        for _ in 0..<int(0...2) { list.append(.userProperty(name: string(), value: string())) }
        return list.shuffled(using: &random)
    }

    private mutating func value(of identifier: MQTTPropertyIdentifier) -> MQTTProperty {
        let flag = UInt8(int(0...1))
        let u16 = UInt16(int(1...65535))
        let u32 = UInt32(truncatingIfNeeded: random.next()) | 1
        switch identifier {
        case .payloadFormatIndicator: return .payloadFormatIndicator(flag)
        case .messageExpiryInterval: return .messageExpiryInterval(u32)
        case .contentType: return .contentType(string())
        case .responseTopic: return .responseTopic(topic())
        case .correlationData: return .correlationData(bytes())
        case .subscriptionIdentifier: return .subscriptionIdentifier(UInt32(int(1...268_435_455)))
        case .sessionExpiryInterval: return .sessionExpiryInterval(u32)
        case .assignedClientIdentifier: return .assignedClientIdentifier(string())
        case .serverKeepAlive: return .serverKeepAlive(u16)
        case .authenticationMethod: return .authenticationMethod(string())
        case .authenticationData: return .authenticationData(bytes())
        case .requestProblemInformation: return .requestProblemInformation(flag)
        case .willDelayInterval: return .willDelayInterval(u32)
        case .requestResponseInformation: return .requestResponseInformation(flag)
        case .responseInformation: return .responseInformation(string())
        case .serverReference: return .serverReference(string())
        case .reasonString: return .reasonString(string())
        case .receiveMaximum: return .receiveMaximum(u16)
        case .topicAliasMaximum: return .topicAliasMaximum(u16)
        case .topicAlias: return .topicAlias(u16)
        case .maximumQoS: return .maximumQoS(flag)
        case .retainAvailable: return .retainAvailable(flag)
        case .userProperty: return .userProperty(name: string(), value: string())
        case .maximumPacketSize: return .maximumPacketSize(u32)
        case .wildcardSubscriptionAvailable: return .wildcardSubscriptionAvailable(flag)
        case .subscriptionIdentifierAvailable: return .subscriptionIdentifierAvailable(flag)
        case .sharedSubscriptionAvailable: return .sharedSubscriptionAvailable(flag)
        }
    }

    mutating func reasonCode(for type: MQTTPacketType) -> MQTTReasonCode {
        let allowed = MQTTReasonCode.allCases.filter { $0.isAllowed(in: type) }
        return allowed[int(0...(allowed.count - 1))]
    }

    mutating func packet(_ type: MQTTPacketType) -> MQTTPacket {
        let v5 = version.hasProperties
        switch type {
        case .connect:
            let hasUser = bool()
            let will = bool() ? MQTTWill(topic: topic(), payload: bytes(), qos: qos(), retain: bool(),
                                         properties: properties(.will)) : nil
            return .connect(MQTTConnect(
                version: version, clientID: string(), cleanStart: bool(), keepAlive: UInt16(int(0...65535)),
                username: hasUser ? string() : nil, password: (hasUser || v5) && bool() ? bytes() : nil,
                will: will, properties: properties(.connect)))
        case .connAck:
            let code: MQTTReasonCode = v5 ? reasonCode(for: .connAck)
                : MQTTConnectReturnCode.allCases[int(0...5)].reasonCode
            return .connAck(MQTTConnAck(sessionPresent: code == .success && bool(), reasonCode: code,
                                        properties: properties(.connAck)))
        case .publish:
            let qos = qos()
            return .publish(MQTTPublish(topic: topic(), payload: bytes(0...300), qos: qos, retain: bool(),
                                        dup: qos != .atMostOnce && bool(),
                                        packetID: qos == .atMostOnce ? 0 : packetID(),
                                        properties: properties(.publish)))
        case .pubAck, .pubRec, .pubRel, .pubComp:
            let context = MQTTPropertyContext(type)!
            let ack = MQTTPubAck(packetID: packetID(), reasonCode: v5 ? reasonCode(for: type) : .success,
                                 properties: properties(context))
            switch type {
            case .pubAck: return .pubAck(ack)
            case .pubRec: return .pubRec(ack)
            case .pubRel: return .pubRel(ack)
            default: return .pubComp(ack)
            }
        case .subscribe:
            let subscriptions = (0..<int(1...4)).map { _ in
                MQTTSubscription(filter: topic(), options: v5
                    ? MQTTSubscriptionOptions(qos: qos(), noLocal: bool(), retainAsPublished: bool(),
                                              retainHandling: MQTTRetainHandling(rawValue: UInt8(int(0...2)))!)
                    : MQTTSubscriptionOptions(qos: qos()))
            }
            return .subscribe(MQTTSubscribe(packetID: packetID(), subscriptions: subscriptions,
                                            properties: properties(.subscribe)))
        case .subAck:
            let codes: [MQTTReasonCode] = (0..<int(1...4)).map { _ in
                v5 ? reasonCode(for: .subAck) : [.grantedQoS0, .grantedQoS1, .grantedQoS2, .unspecifiedError][int(0...3)]
            }
            return .subAck(MQTTSubAck(packetID: packetID(), reasonCodes: codes, properties: properties(.subAck)))
        case .unsubscribe:
            return .unsubscribe(MQTTUnsubscribe(packetID: packetID(), filters: (0..<int(1...4)).map { _ in topic() },
                                                properties: properties(.unsubscribe)))
        case .unsubAck:
            let codes = v5 ? (0..<int(1...4)).map { _ in reasonCode(for: .unsubAck) } : []
            return .unsubAck(MQTTUnsubAck(packetID: packetID(), reasonCodes: codes, properties: properties(.unsubAck)))
        case .pingReq: return .pingReq
        case .pingResp: return .pingResp
        case .disconnect:
            return .disconnect(v5 ? MQTTDisconnect(reasonCode: reasonCode(for: .disconnect),
                                                   properties: properties(.disconnect)) : MQTTDisconnect())
        case .auth:
            return .auth(MQTTAuth(reasonCode: reasonCode(for: .auth), properties: properties(.auth)))
        }
    }
}

@Suite("Round trips of seeded random packets")
struct MQTTRoundTripTests {
    @Test("every packet type encodes to encodedSize bytes and decodes back equal",
          arguments: MQTTProtocolVersion.allCases, [11, 12, 13] as [UInt64])
    func roundTrip(_ version: MQTTProtocolVersion, _ seed: UInt64) throws {
        var maker = RandomPacketMaker(random: TestRandom(seed: seed), version: version)
        let types = MQTTPacketType.allCases.filter { version.hasProperties || $0 != .auth }
        var stream = MQTTByteBuffer(capacity: 64)
        var expected: [MQTTPacket] = []
        for _ in 0..<40 {
            for type in types {
                let packet = maker.packet(type)
                let bytes = packet.encoded(version: version)
                #expect(bytes.count == packet.encodedSize(version: version))
                var decoder = MQTTDecoder(version: version)
                decoder.feed(bytes)
                #expect(try decoder.next() == packet, "\(type)")
                packet.encode(version: version, into: &stream)
                expected.append(packet)
            }
        }
        // The same packets as one stream in random splits.
        var decoder = MQTTDecoder(version: version, initialCapacity: 32)
        var decoded: [MQTTPacket] = []
        let all = stream.readableBytes
        var offset = 0
        while offset < all.count {
            let size = min(maker.int(1...200), all.count - offset)
            decoder.feed(Array(all[offset..<(offset + size)]))
            offset += size
            while let packet = try decoder.next() { decoded.append(packet) }
        }
        #expect(decoded == expected)
    }
}
