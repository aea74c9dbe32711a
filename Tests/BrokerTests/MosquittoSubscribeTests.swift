import FleetBroker
import MQTTCodec
import Testing

@Suite("SUBSCRIBE and UNSUBSCRIBE against a real mosquitto")
struct MosquittoSubscribeTests {
    @Test("SUBSCRIBE with three filters (one wildcard each) is granted QoS 0, 1 and 2 in order",
          arguments: MosquittoAnswers.versions)
    func grantedQoS(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection.connected(to: broker, version: version, clientID: "car-1")
        let answer = try connection.exchange(.subscribe(MQTTSubscribe(packetID: 10, subscriptions: [
            MQTTSubscription(filter: "fleet/car-1/speed", qos: .atMostOnce),
            MQTTSubscription(filter: "fleet/+/speed", qos: .atLeastOnce),
            MQTTSubscription(filter: "fleet/#", qos: .exactlyOnce),
        ])))
        #expect(answer == .subAck(MQTTSubAck(
            packetID: 10, reasonCodes: [.grantedQoS0, .grantedQoS1, .grantedQoS2], properties: [])))
    }

    @Test("a shared subscription $share/g/a/b is granted (5.0 §4.8.2; mosquitto also grants it in 3.1.1)",
          arguments: MosquittoAnswers.versions)
    func sharedSubscription(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let member = try BrokerConnection.connected(to: broker, version: version, clientID: "member")
        let answer = try member.exchange(.subscribe(MQTTSubscribe(packetID: 3, subscriptions: [
            MQTTSubscription(filter: "$share/g/a/b", qos: .atLeastOnce),
        ])))
        #expect(answer == .subAck(MQTTSubAck(packetID: 3, reasonCodes: [.grantedQoS1])))
        // A message on a/b reaches the group's only member.
        let publisher = try BrokerConnection.connected(to: broker, version: version, clientID: "publisher")
        try publisher.send(.publish(MQTTPublish(topic: "a/b", payload: [1, 2, 3])))
        try member.expectReceive(.publish(MQTTPublish(topic: "a/b", payload: [1, 2, 3])))
    }

    @Test("5.0 SUBSCRIBE with No Local, Retain As Published and Retain Handling 2 is granted")
    func subscriptionOptions() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection.connected(to: broker, version: .v5, clientID: "car-1")
        let options = MQTTSubscriptionOptions(
            qos: .exactlyOnce, noLocal: true, retainAsPublished: true, retainHandling: .doNotSend)
        let answer = try connection.exchange(.subscribe(MQTTSubscribe(
            packetID: 4, subscriptions: [MQTTSubscription(filter: "fleet/#", options: options)],
            properties: [.subscriptionIdentifier(7), .userProperty(name: "team", value: "qa")])))
        #expect(answer == .subAck(MQTTSubAck(packetID: 4, reasonCodes: [.grantedQoS2])))
        // No Local: our own message on a matching topic does not come back; QoS 1 PUBACK still does.
        try connection.send(.publish(MQTTPublish(topic: "fleet/x", payload: [9], qos: .atLeastOnce, packetID: 5)))
        try connection.expectBeforePingResponse([.pubAck(MQTTPubAck(packetID: 5))])
    }

    @Test("an invalid filter a/#/b: 3.1.1 connection closed; 5.0 DISCONNECT 0x81 Malformed Packet, then closed",
          arguments: MosquittoAnswers.versions)
    func invalidFilter(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection.connected(to: broker, version: version, clientID: "car-1")
        try connection.send(.subscribe(MQTTSubscribe(packetID: 1, subscriptions: [
            MQTTSubscription(filter: "a/#/b", qos: .atMostOnce),
        ])))
        // 5.0 §3.9.3 would allow SUBACK 0x8F Topic Filter invalid; mosquitto 2.0.11 treats it as malformed.
        if version == .v5 {
            try connection.expectReceive(.disconnect(MQTTDisconnect(reasonCode: .malformedPacket)))
        }
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }

    @Test("UNSUBSCRIBE is answered by UNSUBACK (5.0: Success and No subscription existed)",
          arguments: MosquittoAnswers.versions)
    func unsubscribe(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection.connected(to: broker, version: version, clientID: "car-1")
        try connection.subscribe("fleet/+/speed", qos: .atLeastOnce)
        let answer = try connection.exchange(.unsubscribe(MQTTUnsubscribe(
            packetID: 2, filters: ["fleet/+/speed", "fleet/never"])))
        let expected: MQTTUnsubAck = version == .v5
            ? MQTTUnsubAck(packetID: 2, reasonCodes: [.success, .noSubscriptionExisted], properties: [])
            : MQTTUnsubAck(packetID: 2, reasonCodes: [], properties: [])
        #expect(answer == .unsubAck(expected))
        // The subscription is gone: our QoS 1 message finds no subscriber (5.0 PUBACK 0x10 says so) and no
        // PUBLISH comes back.
        try connection.send(.publish(MQTTPublish(
            topic: "fleet/car-1/speed", payload: [50], qos: .atLeastOnce, packetID: 3)))
        let reason: MQTTReasonCode = version == .v5 ? .noMatchingSubscribers : .success
        try connection.expectBeforePingResponse([.pubAck(MQTTPubAck(packetID: 3, reasonCode: reason))])
    }
}
