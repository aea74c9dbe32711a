import MQTTCodec
import Testing
@testable import MQTTSession

@Suite("MQTTClientSession: publishing and receiving")
struct MQTTClientSessionPublishTests {
    @Test("QoS 0, 1 and 2 outbound flows in 3.1.1: exact bytes and acknowledgement events with both times and the tag")
    func outboundFlowsV3() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        #expect(harness.publish("t", [0xAA], qos: .atMostOnce, at: 1) == .sent(packetID: 0))
        #expect(harness.sent() == [0x30, 0x04, 0x00, 0x01, 0x74, 0xAA])

        #expect(harness.publish("t", [0xAA], qos: .atLeastOnce, intendedAt: 5, tag: 77, at: 10) == .sent(packetID: 1))
        #expect(harness.sent() == [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x01, 0xAA])
        #expect(harness.session.inFlightCount == 1)
        harness.feed([0x40, 0x02, 0x00, 0x01], at: 20)
        #expect(harness.takeEvents() == [.publishAcknowledged(MQTTPublishAcknowledgement(
            kind: .pubAck, packetID: 1, intendedAt: 5, sentAt: 10, receivedAt: 20, tag: 77, reasonCode: .success))])
        #expect(harness.session.inFlightCount == 0)

        #expect(harness.publish("t", [0xAA], qos: .exactlyOnce, intendedAt: 30, tag: 78, at: 31) == .sent(packetID: 2))
        #expect(harness.sent() == [0x34, 0x06, 0x00, 0x01, 0x74, 0x00, 0x02, 0xAA])
        harness.feed([0x50, 0x02, 0x00, 0x02], at: 40)
        #expect(harness.sent() == [0x62, 0x02, 0x00, 0x02])
        harness.feed([0x70, 0x02, 0x00, 0x02], at: 50)
        #expect(harness.takeEvents() == [
            .publishAcknowledged(MQTTPublishAcknowledgement(
                kind: .pubRec, packetID: 2, intendedAt: 30, sentAt: 31, receivedAt: 40, tag: 78, reasonCode: .success)),
            .publishAcknowledged(MQTTPublishAcknowledgement(
                kind: .pubComp, packetID: 2, intendedAt: 30, sentAt: 31, receivedAt: 50, tag: 78, reasonCode: .success)),
        ])
        #expect(harness.sent() == [])
        let statistics = harness.session.statistics
        #expect([statistics.published(.atMostOnce), statistics.published(.atLeastOnce), statistics.published(.exactlyOnce)]
            == [1, 1, 1])
        #expect(statistics.acknowledgedQoS1 == 1)
        #expect(statistics.acknowledgedQoS2 == 1)
    }

    @Test("5.0 outbound QoS 1 carries an empty property length; a PUBACK failure code is reported")
    func outboundV5() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connected(connAck: connAckV5)
        #expect(harness.publish("t", [0xAA], qos: .atLeastOnce, tag: 3, at: 1) == .sent(packetID: 1))
        #expect(harness.sent() == [0x32, 0x07, 0x00, 0x01, 0x74, 0x00, 0x01, 0x00, 0xAA])
        harness.feed([0x40, 0x03, 0x00, 0x01, 0x10], at: 2)
        #expect(harness.takeEvents() == [.publishAcknowledged(MQTTPublishAcknowledgement(
            kind: .pubAck, packetID: 1, intendedAt: 0, sentAt: 1, receivedAt: 2, tag: 3,
            reasonCode: .noMatchingSubscribers))])
    }

    @Test("a 5.0 PUBREC failure code ends the QoS 2 flow without PUBREL")
    func pubRecFailure() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connected(connAck: connAckV5)
        harness.publish("t", [0xAA], qos: .exactlyOnce, at: 1)
        _ = harness.sent()
        harness.feed([0x50, 0x03, 0x00, 0x01, 0x87], at: 2)
        #expect(harness.sent() == [])
        #expect(harness.takeEvents() == [.publishAcknowledged(MQTTPublishAcknowledgement(
            kind: .pubRec, packetID: 1, intendedAt: 0, sentAt: 1, receivedAt: 2, tag: 0, reasonCode: .notAuthorized))])
        #expect(harness.session.inFlightCount == 0)
    }

    @Test("inbound QoS 0, 1 and 2: delivery, PUBACK, PUBREC/PUBREL/PUBCOMP")
    func inboundFlows() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        harness.feed([0x31, 0x04, 0x00, 0x01, 0x74, 0xB0], at: 1)
        #expect(harness.sent() == [])
        harness.feed([0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x07, 0xB1], at: 2)
        #expect(harness.sent() == [0x40, 0x02, 0x00, 0x07])
        harness.feed([0x34, 0x06, 0x00, 0x01, 0x74, 0x00, 0x08, 0xB2], at: 3)
        #expect(harness.sent() == [0x50, 0x02, 0x00, 0x08])
        harness.feed([0x62, 0x02, 0x00, 0x08], at: 4)
        #expect(harness.sent() == [0x70, 0x02, 0x00, 0x08])
        #expect(harness.recorder.messages == [
            .init(topic: "t", payload: [0xB0], qos: .atMostOnce, retain: true, dup: false, packetID: 0, topicAlias: 0),
            .init(topic: "t", payload: [0xB1], qos: .atLeastOnce, retain: false, dup: false, packetID: 7, topicAlias: 0),
            .init(topic: "t", payload: [0xB2], qos: .exactlyOnce, retain: false, dup: false, packetID: 8, topicAlias: 0),
        ])
        #expect(harness.takeEvents() == [])
        let statistics = harness.session.statistics
        #expect([statistics.received(.atMostOnce), statistics.received(.atLeastOnce), statistics.received(.exactlyOnce)]
            == [1, 1, 1])
    }

    @Test("an inbound QoS 2 PUBLISH repeated before PUBREL is acknowledged again but delivered once")
    func inboundQoS2Duplicate() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        harness.feed([0x34, 0x06, 0x00, 0x01, 0x74, 0x00, 0x08, 0xB2], at: 1)
        harness.feed([0x3C, 0x06, 0x00, 0x01, 0x74, 0x00, 0x08, 0xB2], at: 2)  // DUP
        #expect(harness.sent() == [0x50, 0x02, 0x00, 0x08, 0x50, 0x02, 0x00, 0x08])
        #expect(harness.recorder.messages.count == 1)
        #expect(harness.session.statistics.duplicatesSuppressed == 1)
        #expect(harness.session.statistics.duplicatesReceived == 1)
        // After PUBREL the identifier is free: a new message with it is delivered.
        harness.feed([0x62, 0x02, 0x00, 0x08], at: 3)
        harness.feed([0x34, 0x06, 0x00, 0x01, 0x74, 0x00, 0x08, 0xB3], at: 4)
        #expect(harness.recorder.messages.map(\.payload) == [[0xB2], [0xB3]])
        #expect(harness.sent() == [0x70, 0x02, 0x00, 0x08, 0x50, 0x02, 0x00, 0x08])
    }

    @Test("PUBREL for an unknown identifier gets PUBCOMP, in 5.0 with Packet Identifier not found")
    func unknownPubRel() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connected(connAck: connAckV5)
        harness.feed([0x62, 0x02, 0x00, 0x09], at: 1)
        #expect(harness.sent() == [0x70, 0x03, 0x00, 0x09, 0x92])
        #expect(harness.takeEvents() == [])
    }

    @Test("an acknowledgement for an unknown identifier is counted and ignored, the connection stays")
    func unknownAck() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        harness.feed([0x40, 0x02, 0x00, 0x09, 0x70, 0x02, 0x00, 0x0A], at: 1)
        #expect(harness.takeEvents() == [.unexpectedAcknowledgement(.pubAck, packetID: 9),
                                         .unexpectedAcknowledgement(.pubComp, packetID: 10)])
        #expect(harness.session.statistics.unexpectedAcknowledgements == 2)
        #expect(harness.session.state == .connected)
        #expect(harness.sent() == [])
    }

    @Test("the in-flight window refuses a publish when full and accepts one after an acknowledgement")
    func windowFull() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, inFlightWindow: 2))
        harness.connected(connAck: connAckV3)
        #expect(harness.publish("t", [1], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
        #expect(harness.publish("t", [2], qos: .exactlyOnce, at: 1) == .sent(packetID: 2))
        _ = harness.sent()
        #expect(harness.publish("t", [3], qos: .atLeastOnce, at: 1) == .windowFull)
        #expect(harness.publish("t", [3], qos: .atMostOnce, at: 1) == .sent(packetID: 0))  // QoS 0 is not windowed
        #expect(harness.sent() == [0x30, 0x04, 0x00, 0x01, 0x74, 0x03])
        harness.feed([0x40, 0x02, 0x00, 0x01], at: 2)
        #expect(harness.publish("t", [4], qos: .atLeastOnce, at: 3) == .sent(packetID: 3))
        #expect(harness.sent() == [0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x03, 0x04])
    }

    @Test("the 5.0 broker Receive Maximum caps the configured window")
    func receiveMaximumWindow() {
        var harness = Harness(MQTTSessionSettings(version: .v5, inFlightWindow: 32))
        harness.connected(connAck: [0x20, 0x06, 0x00, 0x00, 0x03, 0x21, 0x00, 0x01])
        #expect(harness.session.inFlightWindow == 1)
        #expect(harness.publish("t", [1], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
        #expect(harness.publish("t", [2], qos: .atLeastOnce, at: 1) == .windowFull)
    }

    @Test("packet identifiers wrap from 65535 to 1 and skip identifiers still in flight")
    func packetIDWrap() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        #expect(harness.publish("t", [1], qos: .atLeastOnce, at: 1) == .sent(packetID: 1))
        harness.session.nextPacketID = 65535
        _ = harness.sent()
        #expect(harness.publish("t", [2], qos: .atLeastOnce, at: 2) == .sent(packetID: 65535))
        #expect(harness.publish("t", [3], qos: .atLeastOnce, at: 3) == .sent(packetID: 2))
        #expect(harness.sent() == [0x32, 0x06, 0x00, 0x01, 0x74, 0xFF, 0xFF, 0x02,
                                   0x32, 0x06, 0x00, 0x01, 0x74, 0x00, 0x02, 0x03])
        // Once identifier 1 is acknowledged it is handed out again.
        harness.feed([0x40, 0x02, 0x00, 0x01], at: 4)
        harness.session.nextPacketID = 1
        #expect(harness.publish("t", [4], qos: .atLeastOnce, at: 5) == .sent(packetID: 1))
        #expect(harness.publish("t", [5], qos: .atLeastOnce, at: 5) == .sent(packetID: 3))
    }

    @Test("publishing before CONNACK or after a close is refused")
    func notConnected() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        #expect(harness.publish("t", [1], qos: .atMostOnce, at: 0) == .notConnected)
        harness.connect(at: 0)
        #expect(harness.publish("t", [1], qos: .atLeastOnce, at: 0) == .notConnected)
    }

    @Test("outbound topic aliases: assigned on first use, then an empty topic; none left means the whole topic")
    func outboundTopicAlias() {
        var harness = Harness(MQTTSessionSettings(version: .v5, cleanStart: false, usesOutgoingTopicAliases: true))
        harness.connected(connAck: [0x20, 0x06, 0x00, 0x00, 0x03, 0x22, 0x00, 0x01])
        harness.publish("t", [0xAA], qos: .atMostOnce, at: 1)
        #expect(harness.sent() == [0x30, 0x08, 0x00, 0x01, 0x74, 0x03, 0x23, 0x00, 0x01, 0xAA])
        harness.publish("t", [0xAA], qos: .atMostOnce, at: 2)
        #expect(harness.sent() == [0x30, 0x07, 0x00, 0x00, 0x03, 0x23, 0x00, 0x01, 0xAA])
        harness.publish("u", [0xAA], qos: .atMostOnce, at: 3)
        #expect(harness.sent() == [0x30, 0x05, 0x00, 0x01, 0x75, 0x00, 0xAA])
        harness.publish("t", [0xAA], qos: .atLeastOnce, at: 4)
        #expect(harness.sent() == [0x32, 0x09, 0x00, 0x00, 0x00, 0x01, 0x03, 0x23, 0x00, 0x01, 0xAA])
        // Aliases end with the connection: the retransmission carries the whole topic and no alias.
        harness.lose(at: 5)
        harness.connect(at: 6)
        _ = harness.sent()
        harness.feed([0x20, 0x06, 0x01, 0x00, 0x03, 0x22, 0x00, 0x01], at: 6)
        #expect(harness.sent() == [0x3A, 0x07, 0x00, 0x01, 0x74, 0x00, 0x01, 0x00, 0xAA])
        harness.publish("t", [0xAB], qos: .atMostOnce, at: 7)
        #expect(harness.sent() == [0x30, 0x08, 0x00, 0x01, 0x74, 0x03, 0x23, 0x00, 0x01, 0xAB])
    }

    @Test("inbound topic aliases are resolved; an alias above the client's maximum closes with Topic Alias invalid")
    func inboundTopicAlias() {
        var harness = Harness(MQTTSessionSettings(version: .v5, topicAliasMaximum: 2))
        harness.connected(connAck: connAckV5)
        harness.feed([0x30, 0x08, 0x00, 0x01, 0x74, 0x03, 0x23, 0x00, 0x01, 0xBB], at: 1)
        harness.feed([0x30, 0x07, 0x00, 0x00, 0x03, 0x23, 0x00, 0x01, 0xCC], at: 2)
        #expect(harness.recorder.messages == [
            .init(topic: "t", payload: [0xBB], qos: .atMostOnce, retain: false, dup: false, packetID: 0, topicAlias: 1),
            .init(topic: "t", payload: [0xCC], qos: .atMostOnce, retain: false, dup: false, packetID: 0, topicAlias: 1),
        ])
        harness.feed([0x30, 0x07, 0x00, 0x00, 0x03, 0x23, 0x00, 0x03, 0xCC], at: 3)
        #expect(harness.takeEvents() == [.closeConnection(MQTTSessionCloseReason(
            cause: .protocolViolation, reasonCode: .topicAliasInvalid,
            message: "PUBLISH Topic Alias 3 is outside 1...2, the client's Topic Alias Maximum"))])
        #expect(harness.sent() == [0xE0, 0x01, 0x94])
    }

    @Test("an inbound alias never set on this connection closes with Protocol Error")
    func inboundUnknownAlias() {
        var harness = Harness(MQTTSessionSettings(version: .v5, topicAliasMaximum: 2))
        harness.connected(connAck: connAckV5)
        harness.feed([0x30, 0x07, 0x00, 0x00, 0x03, 0x23, 0x00, 0x02, 0xCC], at: 1)
        #expect(harness.takeEvents() == [.closeConnection(MQTTSessionCloseReason(
            cause: .protocolViolation, reasonCode: .protocolError,
            message: "PUBLISH uses Topic Alias 2, which this connection has not set"))])
        #expect(harness.recorder.messages.isEmpty)
    }
}
