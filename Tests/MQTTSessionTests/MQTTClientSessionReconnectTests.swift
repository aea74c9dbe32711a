import MQTTCodec
import Testing
@testable import MQTTSession

@Suite("MQTTClientSession: subscriptions and reconnection")
struct MQTTClientSessionReconnectTests {
    @Test("3.1.1 SUBSCRIBE with per-filter QoS; SUBACK with granted and failed filters; refused filters are forgotten")
    func subscribeV3() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        let result = harness.session.subscribe(
            [MQTTSubscription(filter: "a/b", qos: .atLeastOnce), MQTTSubscription(filter: "c", qos: .exactlyOnce)],
            now: 1, into: &harness.output)
        #expect(result == .sent(packetID: 1))
        #expect(harness.sent() == [0x82, 0x0C, 0x00, 0x01, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x01, 0x00, 0x01, 0x63, 0x02])
        harness.feed([0x90, 0x04, 0x00, 0x01, 0x01, 0x80], at: 2)
        #expect(harness.takeEvents() == [
            .subscriptionNotGranted(filter: "c", requested: .exactlyOnce, result: .unspecifiedError),
            .subscribed(packetID: 1, results: [.grantedQoS1, .unspecifiedError]),
        ])
        #expect(harness.session.subscriptions == [MQTTSubscription(filter: "a/b", qos: .atLeastOnce)])
        #expect(harness.session.unsubscribe(["a/b"], now: 3, into: &harness.output) == .sent(packetID: 2))
        #expect(harness.sent() == [0xA2, 0x07, 0x00, 0x02, 0x00, 0x03, 0x61, 0x2F, 0x62])
        harness.feed([0xB0, 0x02, 0x00, 0x02], at: 4)
        #expect(harness.takeEvents() == [.unsubscribed(packetID: 2, results: [.success])])
        #expect(harness.session.subscriptions == [])
        #expect(harness.session.nextDeadline() == 3 + 60 * second)  // only the keepalive is left (UNSUBSCRIBE at 3)
    }

    @Test("5.0 SUBSCRIBE with subscription options; SUBACK and UNSUBACK failure codes")
    func subscribeV5() {
        var harness = Harness(MQTTSessionSettings(version: .v5))
        harness.connected(connAck: connAckV5)
        let options = MQTTSubscriptionOptions(qos: .atLeastOnce, noLocal: true, retainAsPublished: true,
                                              retainHandling: .doNotSend)
        _ = harness.session.subscribe([MQTTSubscription(filter: "t", options: options)], now: 1, into: &harness.output)
        #expect(harness.sent() == [0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, 0x74, 0x2D])
        harness.feed([0x90, 0x04, 0x00, 0x01, 0x00, 0x87], at: 2)
        #expect(harness.takeEvents() == [
            .subscriptionNotGranted(filter: "t", requested: .atLeastOnce, result: .notAuthorized),
            .subscribed(packetID: 1, results: [.notAuthorized]),
        ])
        _ = harness.session.unsubscribe(["a/b"], now: 3, into: &harness.output)
        #expect(harness.sent() == [0xA2, 0x08, 0x00, 0x02, 0x00, 0x00, 0x03, 0x61, 0x2F, 0x62])
        harness.feed([0xB0, 0x04, 0x00, 0x02, 0x00, 0x11], at: 4)
        #expect(harness.takeEvents() == [.unsubscribed(packetID: 2, results: [.noSubscriptionExisted])])
    }

    @Test("a SUBACK with fewer codes than filters closes with a clear reason")
    func subAckCountMismatch() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        _ = harness.session.subscribe([MQTTSubscription(filter: "a", qos: .atMostOnce),
                                       MQTTSubscription(filter: "b", qos: .atMostOnce)], now: 1, into: &harness.output)
        harness.feed([0x90, 0x03, 0x00, 0x01, 0x00], at: 2)
        #expect(harness.takeEvents() == [.closeConnection(MQTTSessionCloseReason(
            cause: .protocolViolation, reasonCode: .protocolError,
            message: "SUBACK carries 1 reason code for 2 topic filters"))])
    }

    @Test("reconnect with the session present: DUP PUBLISH and PUBREL resent in order, deadlines restart")
    func reconnectSessionPresent() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, cleanStart: false))
        harness.connected(connAck: connAckV3)
        harness.publish("t", [0xAA], qos: .atLeastOnce, intendedAt: 1, tag: 11, at: 1)  // id 1
        harness.publish("t", [0xAB], qos: .exactlyOnce, intendedAt: 2, tag: 12, at: 2)  // id 2
        harness.publish("t", [0xAC], qos: .exactlyOnce, intendedAt: 3, tag: 13, at: 3)  // id 3
        harness.feed([0x50, 0x02, 0x00, 0x03], at: 4)  // id 3 now awaits PUBCOMP
        _ = harness.session.subscribe([MQTTSubscription(filter: "s", qos: .atLeastOnce)], now: 4, into: &harness.output)
        _ = harness.sent()
        _ = harness.takeEvents()

        harness.lose(at: 5)
        #expect(harness.takeEvents() == [.requestAbandoned(.subAck, packetID: 4)])
        #expect(harness.session.nextDeadline() == nil)
        harness.tick(100 * second)
        #expect(harness.takeEvents() == [])

        harness.connect(at: 10 * second)
        #expect(harness.sent() == [0x10, 0x0E, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x00, 0x00, 0x3C,
                                   0x00, 0x02, 0x63, 0x31])
        harness.feed([0x20, 0x02, 0x01, 0x00], at: 10 * second)
        #expect(harness.takeEvents() == [.connected(sessionPresent: true)])
        #expect(harness.sent() == [
            0x3A, 0x06, 0x00, 0x01, 0x74, 0x00, 0x01, 0xAA,  // PUBLISH DUP QoS 1 id 1
            0x3C, 0x06, 0x00, 0x01, 0x74, 0x00, 0x02, 0xAB,  // PUBLISH DUP QoS 2 id 2
            0x62, 0x02, 0x00, 0x03,  // PUBREL id 3
        ])
        #expect(harness.session.nextDeadline() == 25 * second)
        #expect(harness.session.statistics.retransmittedPublishes == 2)
        #expect(harness.session.statistics.retransmittedReleases == 1)
        harness.feed([0x40, 0x02, 0x00, 0x01, 0x70, 0x02, 0x00, 0x03], at: 11 * second)
        #expect(harness.takeEvents() == [
            .publishAcknowledged(MQTTPublishAcknowledgement(
                kind: .pubAck, packetID: 1, intendedAt: 1, sentAt: 1, receivedAt: 11 * second, tag: 11, reasonCode: .success)),
            .publishAcknowledged(MQTTPublishAcknowledgement(
                kind: .pubComp, packetID: 3, intendedAt: 3, sentAt: 3, receivedAt: 11 * second, tag: 13, reasonCode: .success)),
        ])
        #expect(harness.session.inFlightCount == 1)
    }

    @Test("reconnect without the session: in-flight messages are dropped, subscriptions re-sent, QoS 2 state cleared")
    func reconnectSessionLost() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1))
        harness.connected(connAck: connAckV3)
        _ = harness.session.subscribe([MQTTSubscription(filter: "a/b", qos: .atLeastOnce)], now: 1, into: &harness.output)
        harness.feed([0x90, 0x03, 0x00, 0x01, 0x01], at: 2)
        harness.publish("t", [0xAA], qos: .atLeastOnce, intendedAt: 7, tag: 9, at: 8)  // id 2
        harness.publish("t", [0xAB], qos: .exactlyOnce, tag: 10, at: 8)  // id 3
        harness.feed([0x50, 0x02, 0x00, 0x03], at: 9)
        harness.feed([0x34, 0x06, 0x00, 0x01, 0x74, 0x00, 0x05, 0xB1], at: 9)  // inbound QoS 2 id 5, no PUBREL yet
        _ = harness.sent()
        _ = harness.takeEvents()

        harness.lose(at: 10)
        harness.connect(at: 20)
        _ = harness.sent()
        harness.feed(connAckV3, at: 20)
        #expect(harness.takeEvents() == [
            .connected(sessionPresent: false),
            .publishDropped(MQTTDroppedPublish(packetID: 2, qos: .atLeastOnce, awaiting: .pubAck, intendedAt: 7, tag: 9)),
            .publishDropped(MQTTDroppedPublish(packetID: 3, qos: .exactlyOnce, awaiting: .pubComp, intendedAt: 0, tag: 10)),
        ])
        #expect(harness.sent() == [0x82, 0x08, 0x00, 0x04, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x01])
        #expect(harness.session.inFlightCount == 0)
        #expect(harness.session.statistics.droppedPublishes == 2)
        // The broker's new session may reuse id 5: it is a new message.
        harness.feed([0x34, 0x06, 0x00, 0x01, 0x74, 0x00, 0x05, 0xB2], at: 21)
        #expect(harness.recorder.messages.map(\.payload) == [[0xB1], [0xB2]])
    }

    @Test("re-subscription can be turned off")
    func noResubscribe() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, resubscribesWhenSessionLost: false))
        harness.connected(connAck: connAckV3)
        _ = harness.session.subscribe([MQTTSubscription(filter: "a", qos: .atMostOnce)], now: 1, into: &harness.output)
        harness.feed([0x90, 0x03, 0x00, 0x01, 0x00], at: 2)
        harness.lose(at: 3)
        harness.connect(at: 4)
        _ = harness.sent()
        harness.feed(connAckV3, at: 4)
        #expect(harness.sent() == [])
    }

    @Test("without retransmission copies a present session drops unacknowledged PUBLISH but still resends PUBREL")
    func noRetransmissionCopies() {
        var harness = Harness(MQTTSessionSettings(version: .v5, cleanStart: false, keepsPublishesForRetransmission: false))
        harness.connected(connAck: connAckV5)
        harness.publish("t", [0xAA], qos: .atLeastOnce, tag: 1, at: 1)
        harness.publish("t", [0xAB], qos: .exactlyOnce, tag: 2, at: 1)
        harness.feed([0x50, 0x02, 0x00, 0x02], at: 2)
        _ = harness.sent()
        _ = harness.takeEvents()
        harness.lose(at: 3)
        harness.connect(at: 4)
        _ = harness.sent()
        harness.feed([0x20, 0x03, 0x01, 0x00, 0x00], at: 4)
        #expect(harness.takeEvents() == [
            .connected(sessionPresent: true),
            .publishDropped(MQTTDroppedPublish(packetID: 1, qos: .atLeastOnce, awaiting: .pubAck, intendedAt: 0, tag: 1)),
        ])
        #expect(harness.sent() == [0x62, 0x02, 0x00, 0x02])
    }

    @Test("many in-flight messages acknowledged out of order keep their retransmission copies intact")
    func storedCopiesSurviveCompaction() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, cleanStart: false, inFlightWindow: 16))
        harness.connected(connAck: connAckV3)
        var expected: [UInt8] = []
        var id: UInt16 = 0
        // Publish 40 messages, acknowledging every one except those with id % 5 == 0, in mixed order.
        for round in 0..<8 {
            var ids: [UInt16] = []
            for _ in 0..<5 {
                id += 1
                let payload = [UInt8](repeating: UInt8(truncatingIfNeeded: id), count: Int(id % 7) + 1)
                #expect(harness.publish("t", payload, qos: .atLeastOnce, at: UInt64(round)) == .sent(packetID: id))
                if id % 5 == 0 {
                    expected += [0x3A, UInt8(5 + payload.count), 0x00, 0x01, 0x74, 0x00, UInt8(id)] + payload
                } else {
                    ids.append(id)
                }
            }
            for ackID in ids.reversed() { harness.feed([0x40, 0x02, 0x00, UInt8(ackID)], at: UInt64(round)) }
            if round == 5 { break }  // 6 messages left in flight
        }
        _ = harness.sent()
        harness.lose(at: 100)
        harness.connect(at: 100)
        _ = harness.sent()
        harness.feed([0x20, 0x02, 0x01, 0x00], at: 100)
        #expect(harness.sent() == expected)
        #expect(harness.session.inFlightCount == 6)
    }
}
