import Testing
@testable import MQTTCodec

/// One packet with its exact wire bytes, written by hand from the specification.
struct GoldenPacket: Sendable, CustomTestStringConvertible {
    let name: String
    let version: MQTTProtocolVersion
    let packet: MQTTPacket
    let bytes: [UInt8]
    var testDescription: String { "\(version) \(name)" }
}

// "MQTT" and "MQIsdp" as bytes, to keep the tables readable.
private let mqtt: [UInt8] = [0x4D, 0x51, 0x54, 0x54]

let goldenPackets311: [GoldenPacket] = [
    GoldenPacket(
        name: "CONNECT with will, user name and password", version: .v3_1_1,
        packet: .connect(MQTTConnect(
            version: .v3_1_1, clientID: "c1", cleanStart: true, keepAlive: 60, username: "u", password: [0x70],
            will: MQTTWill(topic: "w", payload: [0x78], qos: .atLeastOnce, retain: false))),
        bytes: [
            0x10, 0x1A,                     // §3.1.1 fixed header: CONNECT; remaining length 26
            0x00, 0x04] + mqtt + [          // §3.1.2.1 protocol name "MQTT"
            0x04,                           // §3.1.2.2 protocol level 4
            0xCE,                           // §3.1.2.3 flags: user name, password, will QoS 1, will, clean session
            0x00, 0x3C,                     // §3.1.2.10 keep alive 60 s
            0x00, 0x02, 0x63, 0x31,         // §3.1.3.1 client identifier "c1"
            0x00, 0x01, 0x77,               // §3.1.3.2 will topic "w"
            0x00, 0x01, 0x78,               // §3.1.3.3 will message "x"
            0x00, 0x01, 0x75,               // §3.1.3.4 user name "u"
            0x00, 0x01, 0x70,               // §3.1.3.5 password "p"
        ]),
    GoldenPacket(
        name: "CONNACK session present, accepted", version: .v3_1_1,
        packet: .connAck(MQTTConnAck(sessionPresent: true, reasonCode: .success)),
        bytes: [
            0x20, 0x02,                     // §3.2.1 fixed header: CONNACK; remaining length 2
            0x01,                           // §3.2.2.2 session present
            0x00,                           // §3.2.2.3 return code 0: accepted
        ]),
    GoldenPacket(
        name: "CONNACK refused, not authorized", version: .v3_1_1,
        packet: .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .notAuthorized)),
        bytes: [
            0x20, 0x02,                     // §3.2.1 fixed header: CONNACK; remaining length 2
            0x00,                           // §3.2.2.2 no session present
            0x05,                           // §3.2.2.3 return code 5: not authorized
        ]),
    GoldenPacket(
        name: "PUBLISH QoS 0", version: .v3_1_1,
        packet: .publish(MQTTPublish(topic: "a/b", payload: [0x68, 0x69])),
        bytes: [
            0x30, 0x07,                     // §3.3.1 fixed header: PUBLISH, QoS 0; remaining length 7
            0x00, 0x03, 0x61, 0x2F, 0x62,   // §3.3.2.1 topic name "a/b"
            0x68, 0x69,                     // §3.3.3 payload "hi"
        ]),
    GoldenPacket(
        name: "PUBLISH QoS 1 DUP RETAIN", version: .v3_1_1,
        packet: .publish(MQTTPublish(topic: "a/b", payload: [0x68, 0x69], qos: .atLeastOnce, retain: true,
                                     dup: true, packetID: 10)),
        bytes: [
            0x3B, 0x09,                     // §3.3.1 fixed header: PUBLISH, DUP, QoS 1, RETAIN; remaining length 9
            0x00, 0x03, 0x61, 0x2F, 0x62,   // §3.3.2.1 topic name "a/b"
            0x00, 0x0A,                     // §3.3.2.2 packet identifier 10
            0x68, 0x69,                     // §3.3.3 payload "hi"
        ]),
    GoldenPacket(
        name: "PUBLISH QoS 2", version: .v3_1_1,
        packet: .publish(MQTTPublish(topic: "t", payload: [], qos: .exactlyOnce, packetID: 0x1234)),
        bytes: [
            0x34, 0x05,                     // §3.3.1 fixed header: PUBLISH, QoS 2; remaining length 5
            0x00, 0x01, 0x74,               // §3.3.2.1 topic name "t"
            0x12, 0x34,                     // §3.3.2.2 packet identifier 0x1234; §3.3.3 empty payload
        ]),
    GoldenPacket(
        name: "PUBACK", version: .v3_1_1, packet: .pubAck(MQTTPubAck(packetID: 10)),
        bytes: [
            0x40, 0x02,                     // §3.4.1 fixed header: PUBACK; remaining length 2
            0x00, 0x0A,                     // §3.4.2 packet identifier 10
        ]),
    GoldenPacket(
        name: "PUBREC", version: .v3_1_1, packet: .pubRec(MQTTPubAck(packetID: 10)),
        bytes: [
            0x50, 0x02,                     // §3.5.1 fixed header: PUBREC; remaining length 2
            0x00, 0x0A,                     // §3.5.2 packet identifier 10
        ]),
    GoldenPacket(
        name: "PUBREL", version: .v3_1_1, packet: .pubRel(MQTTPubAck(packetID: 10)),
        bytes: [
            0x62, 0x02,                     // §3.6.1 fixed header: PUBREL, flags 0b0010; remaining length 2
            0x00, 0x0A,                     // §3.6.2 packet identifier 10
        ]),
    GoldenPacket(
        name: "PUBCOMP", version: .v3_1_1, packet: .pubComp(MQTTPubAck(packetID: 10)),
        bytes: [
            0x70, 0x02,                     // §3.7.1 fixed header: PUBCOMP; remaining length 2
            0x00, 0x0A,                     // §3.7.2 packet identifier 10
        ]),
    GoldenPacket(
        name: "SUBSCRIBE two filters", version: .v3_1_1,
        packet: .subscribe(MQTTSubscribe(packetID: 1, subscriptions: [
            MQTTSubscription(filter: "a/+", qos: .atLeastOnce), MQTTSubscription(filter: "#", qos: .exactlyOnce)])),
        bytes: [
            0x82, 0x0C,                     // §3.8.1 fixed header: SUBSCRIBE, flags 0b0010; remaining length 12
            0x00, 0x01,                     // §3.8.2 packet identifier 1
            0x00, 0x03, 0x61, 0x2F, 0x2B,   // §3.8.3 topic filter "a/+"
            0x01,                           // §3.8.3 requested QoS 1
            0x00, 0x01, 0x23,               // §3.8.3 topic filter "#"
            0x02,                           // §3.8.3 requested QoS 2
        ]),
    GoldenPacket(
        name: "SUBACK granted and failure", version: .v3_1_1,
        packet: .subAck(MQTTSubAck(packetID: 1, reasonCodes: [.grantedQoS1, .unspecifiedError])),
        bytes: [
            0x90, 0x04,                     // §3.9.1 fixed header: SUBACK; remaining length 4
            0x00, 0x01,                     // §3.9.2 packet identifier 1
            0x01,                           // §3.9.3 return code: success, maximum QoS 1
            0x80,                           // §3.9.3 return code: failure
        ]),
    GoldenPacket(
        name: "UNSUBSCRIBE", version: .v3_1_1,
        packet: .unsubscribe(MQTTUnsubscribe(packetID: 2, filters: ["a/+"])),
        bytes: [
            0xA2, 0x07,                     // §3.10.1 fixed header: UNSUBSCRIBE, flags 0b0010; remaining length 7
            0x00, 0x02,                     // §3.10.2 packet identifier 2
            0x00, 0x03, 0x61, 0x2F, 0x2B,   // §3.10.3 topic filter "a/+"
        ]),
    GoldenPacket(
        name: "UNSUBACK", version: .v3_1_1, packet: .unsubAck(MQTTUnsubAck(packetID: 2)),
        bytes: [
            0xB0, 0x02,                     // §3.11.1 fixed header: UNSUBACK; remaining length 2
            0x00, 0x02,                     // §3.11.2 packet identifier 2
        ]),
    GoldenPacket(
        name: "PINGREQ", version: .v3_1_1, packet: .pingReq,
        bytes: [0xC0, 0x00]),               // §3.12.1 fixed header: PINGREQ; remaining length 0
    GoldenPacket(
        name: "PINGRESP", version: .v3_1_1, packet: .pingResp,
        bytes: [0xD0, 0x00]),               // §3.13.1 fixed header: PINGRESP; remaining length 0
    GoldenPacket(
        name: "DISCONNECT", version: .v3_1_1, packet: .disconnect(MQTTDisconnect()),
        bytes: [0xE0, 0x00]),               // §3.14.1 fixed header: DISCONNECT; remaining length 0
]

let goldenPackets31: [GoldenPacket] = [
    GoldenPacket(
        name: "CONNECT (MQIsdp)", version: .v3_1,
        packet: .connect(MQTTConnect(version: .v3_1, clientID: "c1", cleanStart: true, keepAlive: 10)),
        bytes: [
            0x10, 0x10,                     // 3.1 §3.1 fixed header: CONNECT; remaining length 16
            0x00, 0x06, 0x4D, 0x51, 0x49, 0x73, 0x64, 0x70, // 3.1 §3.1 protocol name "MQIsdp"
            0x03,                           // 3.1 §3.1 protocol version 3
            0x02,                           // 3.1 §3.1 connect flags: clean session
            0x00, 0x0A,                     // 3.1 §3.1 keep alive timer 10 s
            0x00, 0x02, 0x63, 0x31,         // 3.1 §3.1 payload: client identifier "c1"
        ]),
]

let goldenPackets5: [GoldenPacket] = [
    GoldenPacket(
        name: "CONNECT with properties, will properties and user name", version: .v5,
        packet: .connect(MQTTConnect(
            version: .v5, clientID: "c1", cleanStart: true, keepAlive: 60, username: "u",
            will: MQTTWill(topic: "w", payload: [0x78], qos: .atMostOnce, retain: true,
                           properties: [.willDelayInterval(5)]),
            properties: [.sessionExpiryInterval(120), .receiveMaximum(20)])),
        bytes: [
            0x10, 0x26,                     // §3.1.1 fixed header: CONNECT; remaining length 38
            0x00, 0x04] + mqtt + [          // §3.1.2.1 protocol name "MQTT"
            0x05,                           // §3.1.2.2 protocol version 5
            0xA6,                           // §3.1.2.3 flags: user name, will retain, will (QoS 0), clean start
            0x00, 0x3C,                     // §3.1.2.10 keep alive 60 s
            0x08,                           // §3.1.2.11.1 property length 8
            0x11, 0x00, 0x00, 0x00, 0x78,   // §3.1.2.11.2 session expiry interval 120 s
            0x21, 0x00, 0x14,               // §3.1.2.11.3 receive maximum 20
            0x00, 0x02, 0x63, 0x31,         // §3.1.3.1 client identifier "c1"
            0x05,                           // §3.1.3.2.1 will property length 5
            0x18, 0x00, 0x00, 0x00, 0x05,   // §3.1.3.2.2 will delay interval 5 s
            0x00, 0x01, 0x77,               // §3.1.3.3 will topic "w"
            0x00, 0x01, 0x78,               // §3.1.3.4 will payload "x"
            0x00, 0x01, 0x75,               // §3.1.3.5 user name "u"
        ]),
    GoldenPacket(
        name: "CONNACK with properties", version: .v5,
        packet: .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success, properties: [
            .maximumQoS(1), .topicAliasMaximum(10), .assignedClientIdentifier("id")])),
        bytes: [
            0x20, 0x0D,                     // §3.2.1 fixed header: CONNACK; remaining length 13
            0x00,                           // §3.2.2.1 acknowledge flags: no session present
            0x00,                           // §3.2.2.2 reason code: Success
            0x0A,                           // §3.2.2.3.1 property length 10
            0x24, 0x01,                     // §3.2.2.3.4 maximum QoS 1
            0x22, 0x00, 0x0A,               // §3.2.2.3.8 topic alias maximum 10
            0x12, 0x00, 0x02, 0x69, 0x64,   // §3.2.2.3.7 assigned client identifier "id"
        ]),
    GoldenPacket(
        name: "CONNACK refused, bad user name or password", version: .v5,
        packet: .connAck(MQTTConnAck(reasonCode: .badUserNameOrPassword)),
        bytes: [
            0x20, 0x03,                     // §3.2.1 fixed header: CONNACK; remaining length 3
            0x00,                           // §3.2.2.1 acknowledge flags
            0x86,                           // §3.2.2.2 reason code: Bad User Name or Password
            0x00,                           // §3.2.2.3.1 property length 0
        ]),
    GoldenPacket(
        name: "PUBLISH QoS 1 with properties", version: .v5,
        packet: .publish(MQTTPublish(topic: "a/b", payload: [0x68, 0x69], qos: .atLeastOnce, packetID: 10,
                                     properties: [.userProperty(name: "k", value: "v"), .messageExpiryInterval(60)])),
        bytes: [
            0x32, 0x16,                     // §3.3.1 fixed header: PUBLISH, QoS 1; remaining length 22
            0x00, 0x03, 0x61, 0x2F, 0x62,   // §3.3.2.1 topic name "a/b"
            0x00, 0x0A,                     // §3.3.2.2 packet identifier 10
            0x0C,                           // §3.3.2.3.1 property length 12
            0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x76, // §3.3.2.3.7 user property "k" = "v"
            0x02, 0x00, 0x00, 0x00, 0x3C,   // §3.3.2.3.3 message expiry interval 60 s
            0x68, 0x69,                     // §3.3.3 payload "hi"
        ]),
    GoldenPacket(
        name: "PUBLISH QoS 0 without properties", version: .v5,
        packet: .publish(MQTTPublish(topic: "a/b", payload: [0x68, 0x69])),
        bytes: [
            0x30, 0x08,                     // §3.3.1 fixed header: PUBLISH, QoS 0; remaining length 8
            0x00, 0x03, 0x61, 0x2F, 0x62,   // §3.3.2.1 topic name "a/b"
            0x00,                           // §3.3.2.3.1 property length 0
            0x68, 0x69,                     // §3.3.3 payload "hi"
        ]),
    GoldenPacket(
        name: "PUBACK success, short form", version: .v5, packet: .pubAck(MQTTPubAck(packetID: 10)),
        bytes: [
            0x40, 0x02,                     // §3.4.1 fixed header: PUBACK; remaining length 2
            0x00, 0x0A,                     // §3.4.2 packet identifier 10 (reason Success omitted, §3.4.2.1)
        ]),
    GoldenPacket(
        name: "PUBACK no matching subscribers", version: .v5,
        packet: .pubAck(MQTTPubAck(packetID: 10, reasonCode: .noMatchingSubscribers)),
        bytes: [
            0x40, 0x03,                     // §3.4.1 fixed header: PUBACK; remaining length 3
            0x00, 0x0A,                     // §3.4.2 packet identifier 10
            0x10,                           // §3.4.2.1 reason code: No matching subscribers (properties omitted)
        ]),
    GoldenPacket(
        name: "PUBREC with reason string", version: .v5,
        packet: .pubRec(MQTTPubAck(packetID: 10, reasonCode: .noMatchingSubscribers, properties: [.reasonString("no")])),
        bytes: [
            0x50, 0x09,                     // §3.5.1 fixed header: PUBREC; remaining length 9
            0x00, 0x0A,                     // §3.5.2 packet identifier 10
            0x10,                           // §3.5.2.1 reason code: No matching subscribers
            0x05,                           // §3.5.2.2 property length 5
            0x1F, 0x00, 0x02, 0x6E, 0x6F,   // §3.5.2.2.2 reason string "no"
        ]),
    GoldenPacket(
        name: "PUBREL packet identifier not found", version: .v5,
        packet: .pubRel(MQTTPubAck(packetID: 10, reasonCode: .packetIdentifierNotFound)),
        bytes: [
            0x62, 0x03,                     // §3.6.1 fixed header: PUBREL, flags 0b0010; remaining length 3
            0x00, 0x0A,                     // §3.6.2 packet identifier 10
            0x92,                           // §3.6.2.1 reason code: Packet Identifier not found
        ]),
    GoldenPacket(
        name: "PUBCOMP success", version: .v5, packet: .pubComp(MQTTPubAck(packetID: 10)),
        bytes: [
            0x70, 0x02,                     // §3.7.1 fixed header: PUBCOMP; remaining length 2
            0x00, 0x0A,                     // §3.7.2 packet identifier 10
        ]),
    GoldenPacket(
        name: "SUBSCRIBE with options and subscription identifier", version: .v5,
        packet: .subscribe(MQTTSubscribe(packetID: 1, subscriptions: [
            MQTTSubscription(filter: "a/+", options: MQTTSubscriptionOptions(
                qos: .atLeastOnce, noLocal: true, retainAsPublished: true, retainHandling: .doNotSend))],
            properties: [.subscriptionIdentifier(5)])),
        bytes: [
            0x82, 0x0B,                     // §3.8.1 fixed header: SUBSCRIBE, flags 0b0010; remaining length 11
            0x00, 0x01,                     // §3.8.2 packet identifier 1
            0x02,                           // §3.8.2.1.1 property length 2
            0x0B, 0x05,                     // §3.8.2.1.2 subscription identifier 5
            0x00, 0x03, 0x61, 0x2F, 0x2B,   // §3.8.3 topic filter "a/+"
            0x2D,                           // §3.8.3.1 options: retain handling 2, RAP, no local, QoS 1
        ]),
    GoldenPacket(
        name: "SUBACK granted and topic filter invalid", version: .v5,
        packet: .subAck(MQTTSubAck(packetID: 1, reasonCodes: [.grantedQoS1, .topicFilterInvalid])),
        bytes: [
            0x90, 0x05,                     // §3.9.1 fixed header: SUBACK; remaining length 5
            0x00, 0x01,                     // §3.9.2 packet identifier 1
            0x00,                           // §3.9.2.1.1 property length 0
            0x01,                           // §3.9.3 reason code: Granted QoS 1
            0x8F,                           // §3.9.3 reason code: Topic Filter invalid
        ]),
    GoldenPacket(
        name: "UNSUBSCRIBE", version: .v5,
        packet: .unsubscribe(MQTTUnsubscribe(packetID: 2, filters: ["a/+"])),
        bytes: [
            0xA2, 0x08,                     // §3.10.1 fixed header: UNSUBSCRIBE, flags 0b0010; remaining length 8
            0x00, 0x02,                     // §3.10.2 packet identifier 2
            0x00,                           // §3.10.2.1.1 property length 0
            0x00, 0x03, 0x61, 0x2F, 0x2B,   // §3.10.3 topic filter "a/+"
        ]),
    GoldenPacket(
        name: "UNSUBACK", version: .v5,
        packet: .unsubAck(MQTTUnsubAck(packetID: 2, reasonCodes: [.success, .noSubscriptionExisted])),
        bytes: [
            0xB0, 0x05,                     // §3.11.1 fixed header: UNSUBACK; remaining length 5
            0x00, 0x02,                     // §3.11.2 packet identifier 2
            0x00,                           // §3.11.2.1.1 property length 0
            0x00,                           // §3.11.3 reason code: Success
            0x11,                           // §3.11.3 reason code: No subscription existed
        ]),
    GoldenPacket(
        name: "PINGREQ", version: .v5, packet: .pingReq,
        bytes: [0xC0, 0x00]),               // §3.12.1 fixed header: PINGREQ; remaining length 0
    GoldenPacket(
        name: "PINGRESP", version: .v5, packet: .pingResp,
        bytes: [0xD0, 0x00]),               // §3.13.1 fixed header: PINGRESP; remaining length 0
    GoldenPacket(
        name: "DISCONNECT normal, short form", version: .v5, packet: .disconnect(MQTTDisconnect()),
        bytes: [0xE0, 0x00]),               // §3.14.1 fixed header: DISCONNECT; remaining length 0 (§3.14.2.1)
    GoldenPacket(
        name: "DISCONNECT session taken over with reason string", version: .v5,
        packet: .disconnect(MQTTDisconnect(reasonCode: .sessionTakenOver, properties: [.reasonString("bye")])),
        bytes: [
            0xE0, 0x08,                     // §3.14.1 fixed header: DISCONNECT; remaining length 8
            0x8E,                           // §3.14.2.1 reason code: Session taken over
            0x06,                           // §3.14.2.2.1 property length 6
            0x1F, 0x00, 0x03, 0x62, 0x79, 0x65, // §3.14.2.2.3 reason string "bye"
        ]),
    GoldenPacket(
        name: "AUTH continue authentication", version: .v5,
        packet: .auth(MQTTAuth(reasonCode: .continueAuthentication, properties: [
            .authenticationMethod("SCRAM"), .authenticationData([0x01, 0x02])])),
        bytes: [
            0xF0, 0x0F,                     // §3.15.1 fixed header: AUTH; remaining length 15
            0x18,                           // §3.15.2.1 reason code: Continue authentication
            0x0D,                           // §3.15.2.2.1 property length 13
            0x15, 0x00, 0x05, 0x53, 0x43, 0x52, 0x41, 0x4D, // §3.15.2.2.2 authentication method "SCRAM"
            0x16, 0x00, 0x02, 0x01, 0x02,   // §3.15.2.2.3 authentication data 01 02
        ]),
]

@Suite("Golden bytes of every packet type")
struct MQTTGoldenBytesTests {
    @Test("encodes each packet to exactly the specification's bytes",
          arguments: goldenPackets311 + goldenPackets31 + goldenPackets5)
    func encodes(_ golden: GoldenPacket) {
        #expect(golden.packet.encoded(version: golden.version) == golden.bytes)
        #expect(golden.packet.encodedSize(version: golden.version) == golden.bytes.count)
    }

    @Test("decodes each packet's bytes back to the packet",
          arguments: goldenPackets311 + goldenPackets31 + goldenPackets5)
    func decodes(_ golden: GoldenPacket) throws {
        var decoder = MQTTDecoder(version: golden.version)
        decoder.feed(golden.bytes)
        let packet = try decoder.next()
        #expect(packet == golden.packet)
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("every packet type appears in the 3.1.1 and the 5.0 tables")
    func coversEveryType() {
        let types311 = Set(goldenPackets311.map(\.packet.type))
        let types5 = Set(goldenPackets5.map(\.packet.type))
        #expect(types311 == Set(MQTTPacketType.allCases.filter { $0 != .auth }))
        #expect(types5 == Set(MQTTPacketType.allCases))
    }

    @Test("a CONNECT decoded by a broker-side decoder sets the decoder's version")
    func connectSetsVersion() throws {
        var decoder = MQTTDecoder(version: .v5)
        decoder.feed(goldenPackets31[0].bytes)
        _ = try decoder.next()
        #expect(decoder.version == .v3_1)
    }
}
