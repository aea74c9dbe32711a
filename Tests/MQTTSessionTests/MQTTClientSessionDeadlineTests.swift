import MQTTCodec
import Testing
@testable import MQTTSession

/// Distinct timeouts per kind so a wrong deadline cannot pass by coincidence.
let distinctTimeouts = MQTTAckTimeouts(
    connAck: 12 * second, subAck: 3 * second, unsubAck: 4 * second, pubAck: 5 * second, pubRec: 6 * second,
    pubComp: 7 * second, pingResp: 8 * second)

@Suite("MQTTClientSession: keepalive and acknowledgement deadlines")
struct MQTTClientSessionDeadlineTests {
    @Test("PINGREQ after keepalive seconds without sending; PINGRESP clears the deadline")
    func keepalivePing() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 10, timeouts: distinctTimeouts))
        harness.connected(connAck: connAckV3)
        #expect(harness.session.nextDeadline() == 10 * second)
        harness.tick(10 * second - 1)
        #expect(harness.sent() == [])
        // Sending anything moves the next PINGREQ.
        harness.publish("t", [1], qos: .atMostOnce, at: 4 * second)
        _ = harness.sent()
        #expect(harness.session.nextDeadline() == 14 * second)
        harness.tick(14 * second)
        #expect(harness.sent() == [0xC0, 0x00])
        #expect(harness.session.nextDeadline() == 22 * second)  // PINGRESP deadline: 14 s + 8 s
        harness.feed([0xD0, 0x00], at: 15 * second)
        #expect(harness.takeEvents() == [.pingResponse(sentAt: 14 * second, receivedAt: 15 * second)])
        #expect(harness.session.nextDeadline() == 24 * second)
        #expect(harness.session.statistics.pingsSent == 1)
    }

    @Test("a missing PINGRESP is reported once at its deadline and closes the connection")
    func pingRespTimeout() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 10, timeouts: distinctTimeouts))
        harness.connected(connAck: connAckV3)
        harness.tick(10 * second)
        #expect(harness.sent() == [0xC0, 0x00])
        harness.tick(18 * second - 1)
        #expect(harness.takeEvents() == [])
        harness.tick(18 * second)
        #expect(harness.takeEvents() == [
            .ackTimeout(MQTTAckTimeout(kind: .pingResp, packetID: 0, tag: 0, sentAt: 10 * second, deadline: 18 * second)),
            .closeConnection(MQTTSessionCloseReason(
                cause: .ackTimeout(.pingResp), reasonCode: .unspecifiedError, message: "no PINGRESP within 8000 ms")),
        ])
        #expect(harness.sent() == [])
        harness.tick(30 * second)
        #expect(harness.takeEvents() == [])
        #expect(harness.session.nextDeadline() == nil)
        #expect(harness.session.statistics.ackTimeouts(.pingResp) == 1)
    }

    @Test("keep waiting after a PINGRESP timeout: the next PINGREQ goes out a keepalive after the last one")
    func pingAfterTimeoutKeepWaiting() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 10, timeouts: distinctTimeouts,
                                                  onAckTimeout: .keepWaiting))
        harness.connected(connAck: connAckV3)
        harness.tick(10 * second)
        harness.tick(18 * second)
        #expect(harness.takeEvents().count == 1)
        #expect(harness.sent() == [0xC0, 0x00])  // only the first PINGREQ so far
        #expect(harness.session.nextDeadline() == 20 * second)
        harness.tick(20 * second)
        #expect(harness.sent() == [0xC0, 0x00])
        #expect(harness.session.statistics.pingsSent == 2)
    }

    /// Drives a session until exactly one ack of `kind` is awaited; returns the harness, when that packet
    /// was sent, and its packet identifier and tag.
    static func awaiting(_ kind: MQTTAckKind, policy: MQTTAckTimeoutPolicy) -> (Harness, UInt64, UInt16, UInt64) {
        let settings = MQTTSessionSettings(
            version: .v5, keepAliveSeconds: kind == .pingResp ? 2 : 0, timeouts: distinctTimeouts, onAckTimeout: policy)
        var harness = Harness(settings)
        if kind == .connAck {
            harness.connect(at: 1 * second)
            _ = harness.sent()
            return (harness, 1 * second, 0, 0)
        }
        harness.connected(connAck: connAckV5, at: 0)
        switch kind {
        case .subAck:
            _ = harness.session.subscribe([MQTTSubscription(filter: "a", qos: .atLeastOnce)], now: 1 * second,
                                          into: &harness.output)
            return (harness, 1 * second, 1, 0)
        case .unsubAck:
            _ = harness.session.unsubscribe(["a"], now: 1 * second, into: &harness.output)
            return (harness, 1 * second, 1, 0)
        case .pubAck:
            harness.publish("t", [1], qos: .atLeastOnce, tag: 41, at: 1 * second)
            return (harness, 1 * second, 1, 41)
        case .pubRec:
            harness.publish("t", [1], qos: .exactlyOnce, tag: 42, at: 1 * second)
            return (harness, 1 * second, 1, 42)
        case .pubComp:
            harness.publish("t", [1], qos: .exactlyOnce, tag: 43, at: 0)
            harness.feed([0x50, 0x02, 0x00, 0x01], at: 1 * second)
            _ = harness.takeEvents()
            return (harness, 1 * second, 1, 43)
        case .pingResp:
            harness.tick(2 * second)
            return (harness, 2 * second, 0, 0)
        case .connAck:
            return (harness, 0, 0, 0)
        }
    }

    @Test("each acknowledgement deadline fires exactly once, at its own timeout and not before",
          arguments: MQTTAckKind.allCases)
    func eachTimeoutOnce(kind: MQTTAckKind) {
        var (harness, sentAt, packetID, tag) = Self.awaiting(kind, policy: .keepWaiting)
        _ = harness.sent()
        let deadline = sentAt + distinctTimeouts.timeout(for: kind)
        #expect(harness.session.nextDeadline() == deadline)
        harness.tick(deadline - 1)
        #expect(harness.takeEvents() == [])
        harness.tick(deadline)
        #expect(harness.takeEvents() == [.ackTimeout(MQTTAckTimeout(
            kind: kind, packetID: packetID, tag: tag, sentAt: sentAt, deadline: deadline))])
        harness.tick(deadline + 1)
        // (With keepalive on, a later tick would send a new PINGREQ, which has its own deadline.)
        if kind != .pingResp { harness.tick(deadline + 100 * second) }
        #expect(harness.takeEvents() == [])
        for other in MQTTAckKind.allCases {
            #expect(harness.session.statistics.ackTimeouts(other) == (other == kind ? 1 : 0))
        }
        #expect(harness.session.state != .closing)
    }

    @Test("with the close policy a missed deadline is followed by one close event", arguments: MQTTAckKind.allCases)
    func timeoutCloses(kind: MQTTAckKind) {
        var (harness, sentAt, _, _) = Self.awaiting(kind, policy: .close)
        let deadline = sentAt + distinctTimeouts.timeout(for: kind)
        harness.tick(deadline)
        let events = harness.takeEvents()
        #expect(events.count == 2)
        #expect(events.last == .closeConnection(MQTTSessionCloseReason(
            cause: .ackTimeout(kind), reasonCode: .unspecifiedError,
            message: "no \(kind) within \(distinctTimeouts.timeout(for: kind) / ms) ms")))
        #expect(harness.session.state == .closing)
        #expect(harness.session.nextDeadline() == nil)
    }

    @Test("a late PUBACK after a reported timeout (keep waiting) is still matched")
    func lateAckAfterTimeout() {
        var (harness, _, _, _) = Self.awaiting(.pubAck, policy: .keepWaiting)
        harness.tick(6 * second)
        _ = harness.takeEvents()
        harness.feed([0x40, 0x02, 0x00, 0x01], at: 9 * second)
        #expect(harness.takeEvents() == [.publishAcknowledged(MQTTPublishAcknowledgement(
            kind: .pubAck, packetID: 1, intendedAt: 0, sentAt: 1 * second, receivedAt: 9 * second, tag: 41,
            reasonCode: .success))])
        #expect(harness.session.nextDeadline() == nil)
    }

    @Test("the in-flight deadline follows the oldest unacknowledged message as acknowledgements arrive out of order")
    func inFlightDeadlineOrder() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0, timeouts: distinctTimeouts))
        harness.connected(connAck: connAckV3)
        harness.publish("t", [1], qos: .atLeastOnce, at: 1 * second)  // id 1, deadline 6 s
        harness.publish("t", [2], qos: .exactlyOnce, at: 2 * second)  // id 2, deadline 8 s
        harness.publish("t", [3], qos: .atLeastOnce, at: 3 * second)  // id 3, deadline 8 s
        #expect(harness.session.nextDeadline() == 6 * second)
        harness.feed([0x40, 0x02, 0x00, 0x03], at: 4 * second)
        #expect(harness.session.nextDeadline() == 6 * second)
        harness.feed([0x40, 0x02, 0x00, 0x01], at: 4 * second)
        #expect(harness.session.nextDeadline() == 8 * second)
        harness.feed([0x50, 0x02, 0x00, 0x02], at: 5 * second)  // now awaiting PUBCOMP until 12 s
        #expect(harness.session.nextDeadline() == 12 * second)
        harness.feed([0x70, 0x02, 0x00, 0x02], at: 6 * second)
        #expect(harness.session.nextDeadline() == nil)
        #expect(harness.session.inFlightCount == 0)
    }

    @Test("messages awaiting an ack within their deadline, by QoS: a reported timeout or an ack takes one out")
    func awaitingWithinDeadline() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0, timeouts: distinctTimeouts,
                                                  onAckTimeout: .keepWaiting))
        harness.connected(connAck: connAckV3)
        harness.publish("t", [1], qos: .atLeastOnce, at: 1 * second)   // packet 1, PUBACK by 6 s
        harness.publish("t", [2], qos: .atLeastOnce, at: 2 * second)   // packet 2, PUBACK by 7 s
        harness.publish("t", [3], qos: .exactlyOnce, at: 2 * second)   // packet 3, PUBREC by 8 s
        harness.publish("t", [4], qos: .atMostOnce, at: 2 * second)
        _ = harness.sent()
        #expect(harness.session.awaitingWithinDeadline.qos1 == 2 && harness.session.awaitingWithinDeadline.qos2 == 1)
        harness.tick(6 * second)
        #expect(harness.takeEvents().count == 1)
        #expect(harness.session.awaitingWithinDeadline.qos1 == 1 && harness.session.awaitingWithinDeadline.qos2 == 1)
        harness.feed([0x40, 0x02, 0x00, 0x02], at: 6 * second)  // PUBACK 2
        #expect(harness.session.awaitingWithinDeadline.qos1 == 0 && harness.session.awaitingWithinDeadline.qos2 == 1)
        #expect(harness.session.inFlightCount == 2)  // the timed-out one is still in flight
    }
}
