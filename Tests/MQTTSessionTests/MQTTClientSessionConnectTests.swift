import MQTTCodec
import Testing
@testable import MQTTSession

@Suite("MQTTClientSession: CONNECT and CONNACK")
struct MQTTClientSessionConnectTests {
    @Test("CONNECT bytes for 3.1 and 3.1.1 with clean session and keepalive 60")
    func connectBytesV3() {
        var v31 = Harness(MQTTSessionSettings(version: .v3_1))
        v31.connect(at: 0)
        #expect(v31.sent() == [0x10, 0x10, 0x00, 0x06] + Array("MQIsdp".utf8)
            + [0x03, 0x02, 0x00, 0x3C, 0x00, 0x02, 0x63, 0x31])
        var v311 = Harness(MQTTSessionSettings(version: .v3_1_1))
        v311.connect(at: 0)
        #expect(v311.sent() == [0x10, 0x0E, 0x00, 0x04] + Array("MQTT".utf8)
            + [0x04, 0x02, 0x00, 0x3C, 0x00, 0x02, 0x63, 0x31])
        #expect(v311.session.state == .awaitingConnAck)
    }

    @Test("5.0 CONNECT carries session expiry, receive maximum, topic alias maximum, will with delay, user and password")
    func connectBytesV5() {
        let settings = MQTTSessionSettings(
            version: .v5, cleanStart: false, keepAliveSeconds: 30, sessionExpiryInterval: 120, username: "u",
            password: [0x70], will: MQTTWill(topic: "w", payload: [0x01], qos: .atLeastOnce, retain: true,
                                             properties: [.willDelayInterval(5)]),
            receiveMaximum: 10, topicAliasMaximum: 4)
        var harness = Harness(settings)
        harness.connect(at: 0)
        #expect(harness.sent() == [
            0x10, 0x2C,
            0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05,  // "MQTT", level 5
            0xEC,  // user, password, will retain, will QoS 1, will; clean start 0
            0x00, 0x1E,  // keepalive 30
            0x0B, 0x11, 0x00, 0x00, 0x00, 0x78, 0x21, 0x00, 0x0A, 0x22, 0x00, 0x04,  // properties
            0x00, 0x02, 0x63, 0x31,  // client id "c1"
            0x05, 0x18, 0x00, 0x00, 0x00, 0x05,  // will properties: delay 5 s
            0x00, 0x01, 0x77, 0x00, 0x01, 0x01,  // will topic "w", payload 01
            0x00, 0x01, 0x75, 0x00, 0x01, 0x70,  // user "u", password 70
        ])
    }

    @Test("3.1.1 CONNACK return codes are refused with their 5.0 reason codes", arguments: [
        (UInt8(1), MQTTReasonCode.unsupportedProtocolVersion), (2, .clientIdentifierNotValid), (3, .serverUnavailable),
        (4, .badUserNameOrPassword), (5, .notAuthorized),
    ])
    func refusedV3(code: UInt8, reason: MQTTReasonCode) {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connect(at: 0)
        _ = harness.sent()
        harness.feed([0x20, 0x02, 0x00, code], at: 5)
        #expect(harness.takeEvents() == [.connectionRefused(reason, reasonString: nil)])
        #expect(harness.session.state == .closing)
        #expect(harness.sent() == [])
        #expect(harness.session.nextDeadline() == nil)
    }

    @Test("5.0 CONNACK refusal carries its reason code and reason string")
    func refusedV5() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connect(at: 0)
        harness.feed([0x20, 0x09, 0x00, 0x86, 0x06, 0x1F, 0x00, 0x03, 0x62, 0x61, 0x64], at: 1)
        #expect(harness.takeEvents() == [.connectionRefused(.badUserNameOrPassword, reasonString: "bad")])
    }

    @Test("5.0 CONNACK limits are honoured: receive maximum, topic alias maximum, maximum packet size, server keepalive")
    func connAckLimits() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connect(at: 0)
        // Receive Maximum 2, Topic Alias Maximum 3, Maximum Packet Size 20, Server Keep Alive 7, Maximum QoS 1
        harness.feed([0x20, 0x13, 0x00, 0x00, 0x10, 0x21, 0x00, 0x02, 0x22, 0x00, 0x03, 0x27, 0x00, 0x00, 0x00, 0x14,
                      0x13, 0x00, 0x07, 0x24, 0x01], at: 1)
        #expect(harness.takeEvents() == [.connected(sessionPresent: false)])
        _ = harness.sent()
        #expect(harness.session.inFlightWindow == 2)
        #expect(harness.session.brokerTopicAliasMaximum == 3)
        #expect(harness.session.keepAliveSeconds == 7)
        #expect(harness.session.nextDeadline() == 7 * second)
        #expect(harness.publish("t", [1], qos: .exactlyOnce, at: 2) == .qosNotSupported(maximum: .atLeastOnce))
        #expect(harness.publish("t", Array(repeating: 0, count: 20), qos: .atMostOnce, at: 2)
            == .packetTooLarge(size: 26, maximum: 20))
        #expect(harness.sent() == [])
    }

    @Test("Assigned Client Identifier replaces the client id for the next CONNECT")
    func assignedClientIdentifier() {
        var harness = Harness(MQTTSessionSettings(version: .v5), clientID: "")
        harness.connected(connAck: [0x20, 0x07, 0x00, 0x00, 0x04, 0x12, 0x00, 0x01, 0x41])
        #expect(harness.session.clientID == "A")
    }

    @Test("a second CONNACK closes the connection with Protocol Error")
    func connAckTwice() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connected(connAck: connAckV5)
        harness.feed(connAckV5, at: 1)
        #expect(harness.takeEvents() == [.closeConnection(MQTTSessionCloseReason(
            cause: .protocolViolation, reasonCode: .protocolError, message: "CONNACK received twice"))])
        #expect(harness.sent() == [0xE0, 0x01, 0x82])
    }

    @Test("Session Present after a clean start is a protocol violation")
    func sessionPresentAfterCleanStart() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connect(at: 0)
        _ = harness.sent()
        harness.feed([0x20, 0x02, 0x01, 0x00], at: 1)
        #expect(harness.takeEvents() == [.closeConnection(MQTTSessionCloseReason(
            cause: .protocolViolation, reasonCode: .protocolError,
            message: "CONNACK has Session Present set although the client asked for a clean start"))])
        #expect(harness.sent() == [])
    }

    @Test("a packet before CONNACK is a protocol violation")
    func publishBeforeConnAck() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connect(at: 0)
        _ = harness.sent()
        harness.feed([0x30, 0x05, 0x00, 0x01, 0x74, 0x00, 0xAA], at: 1)
        #expect(harness.takeEvents() == [.closeConnection(MQTTSessionCloseReason(
            cause: .protocolViolation, reasonCode: .protocolError, message: "PUBLISH received before CONNACK"))])
        #expect(harness.sent() == [0xE0, 0x01, 0x82])
        #expect(harness.recorder.messages.isEmpty)
    }

    @Test("client DISCONNECT: 3.1.1 bare, 5.0 with reason code and session expiry")
    func clientDisconnect() {
        var v3 = Harness(MQTTSessionSettings(version: .v3_1_1))
        v3.connected(connAck: connAckV3)
        v3.session.disconnect(now: 1, into: &v3.output)
        #expect(v3.sent() == [0xE0, 0x00])
        #expect(v3.session.state == .closing)
        var v5 = Harness(MQTTSessionSettings(version: .v5))
        v5.connected(connAck: connAckV5)
        v5.session.disconnect(reasonCode: .disconnectWithWillMessage, sessionExpiryInterval: 0, now: 1, into: &v5.output)
        #expect(v5.sent() == [0xE0, 0x07, 0x04, 0x05, 0x11, 0x00, 0x00, 0x00, 0x00])
    }

    @Test("server DISCONNECT in 5.0 reports its reason code and reason string")
    func serverDisconnect() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connected(connAck: connAckV5)
        harness.feed([0xE0, 0x07, 0x8B, 0x05, 0x1F, 0x00, 0x02, 0x62, 0x79], at: 1)
        let events = harness.takeEvents()
        #expect(events == [.serverDisconnected(.serverShuttingDown, reasonString: "by")])
        #expect(events[0].closesConnection)
        #expect(harness.session.state == .closing)
        #expect(harness.sent() == [])
    }

    @Test("a DISCONNECT from a 3.1.1 server is a protocol violation")
    func serverDisconnectV3() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        harness.feed([0xE0, 0x00], at: 1)
        #expect(harness.takeEvents() == [.closeConnection(MQTTSessionCloseReason(
            cause: .protocolViolation, reasonCode: .protocolError,
            message: "DISCONNECT received from the server, which MQTT 3.1.1 does not allow"))])
    }
}
