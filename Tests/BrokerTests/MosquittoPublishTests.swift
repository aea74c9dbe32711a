import FleetBroker
import MQTTCodec
import Testing

@Suite("PUBLISH at QoS 0, 1 and 2 and retained messages against a real mosquitto")
struct MosquittoPublishTests {
    static let payload: [UInt8] = Array("speed=88".utf8)

    @Test("QoS 0 PUBLISH reaches a subscriber on a second connection", arguments: MosquittoAnswers.versions)
    func qos0(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let subscriber = try BrokerConnection.connected(to: broker, version: version, clientID: "subscriber")
        try subscriber.subscribe("fleet/+/speed", qos: .atMostOnce)
        let publisher = try BrokerConnection.connected(to: broker, version: version, clientID: "publisher")
        try publisher.send(.publish(MQTTPublish(topic: "fleet/car-1/speed", payload: Self.payload)))
        try subscriber.expectReceive(.publish(MQTTPublish(
            topic: "fleet/car-1/speed", payload: Self.payload, qos: .atMostOnce, retain: false, dup: false,
            packetID: 0, properties: [])))
        // QoS 0 has no acknowledgement: the publisher receives nothing.
        try publisher.expectBeforePingResponse([])
    }

    @Test("QoS 1 PUBLISH gets PUBACK and reaches the subscriber, whose PUBACK ends the flow",
          arguments: MosquittoAnswers.versions)
    func qos1(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let subscriber = try BrokerConnection.connected(to: broker, version: version, clientID: "subscriber")
        try subscriber.subscribe("fleet/#", qos: .atLeastOnce)
        let publisher = try BrokerConnection.connected(to: broker, version: version, clientID: "publisher")
        let answer = try publisher.exchange(.publish(MQTTPublish(
            topic: "fleet/car-1/speed", payload: Self.payload, qos: .atLeastOnce, packetID: 7)))
        #expect(answer == .pubAck(MQTTPubAck(packetID: 7, reasonCode: .success, properties: [])))
        // mosquitto numbers its outgoing messages per client from 1.
        try subscriber.expectReceive(.publish(MQTTPublish(
            topic: "fleet/car-1/speed", payload: Self.payload, qos: .atLeastOnce, packetID: 1)))
        try subscriber.send(.pubAck(MQTTPubAck(packetID: 1)))
        try subscriber.expectBeforePingResponse([])
    }

    @Test("QoS 2 PUBLISH: PUBREC, PUBREL then PUBCOMP; the subscriber runs its own QoS 2 flow",
          arguments: MosquittoAnswers.versions)
    func qos2(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let subscriber = try BrokerConnection.connected(to: broker, version: version, clientID: "subscriber")
        try subscriber.subscribe("fleet/#", qos: .exactlyOnce)
        let publisher = try BrokerConnection.connected(to: broker, version: version, clientID: "publisher")
        try publisher.expectAnswer(to: .publish(MQTTPublish(
            topic: "fleet/car-1/door", payload: Self.payload, qos: .exactlyOnce, packetID: 9)),
            is: .pubRec(MQTTPubRec(packetID: 9, reasonCode: .success, properties: [])))
        try publisher.expectAnswer(to: .pubRel(MQTTPubRel(packetID: 9)),
            is: .pubComp(MQTTPubComp(packetID: 9, reasonCode: .success, properties: [])))
        try subscriber.expectReceive(.publish(MQTTPublish(
            topic: "fleet/car-1/door", payload: Self.payload, qos: .exactlyOnce, packetID: 1)))
        try subscriber.expectAnswer(to: .pubRec(MQTTPubRec(packetID: 1)), is: .pubRel(MQTTPubRel(packetID: 1)))
        try subscriber.send(.pubComp(MQTTPubComp(packetID: 1)))
        try subscriber.expectBeforePingResponse([])
        try publisher.expectBeforePingResponse([])
    }

    @Test("with no subscriber: 5.0 PUBACK says 0x10 No matching subscribers, PUBREC says Success",
          arguments: MosquittoAnswers.versions)
    func noSubscribers(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let publisher = try BrokerConnection.connected(to: broker, version: version, clientID: "publisher")
        let pubAckReason: MQTTReasonCode = version == .v5 ? .noMatchingSubscribers : .success
        try publisher.expectAnswer(to: .publish(MQTTPublish(
            topic: "nobody/listens", payload: [1], qos: .atLeastOnce, packetID: 1)),
            is: .pubAck(MQTTPubAck(packetID: 1, reasonCode: pubAckReason)))
        // 5.0 §3.5.2.1 allows 0x10 in PUBREC too; mosquitto 2.0.11 only uses it in PUBACK.
        try publisher.expectAnswer(to: .publish(MQTTPublish(
            topic: "nobody/listens", payload: [2], qos: .exactlyOnce, packetID: 2)),
            is: .pubRec(MQTTPubRec(packetID: 2, reasonCode: .success)))
        try publisher.expectAnswer(to: .pubRel(MQTTPubRel(packetID: 2)), is: .pubComp(MQTTPubComp(packetID: 2)))
    }

    @Test("PUBREL for an unknown packet identifier is answered by PUBCOMP Success (not 0x92)",
          arguments: MosquittoAnswers.versions)
    func pubRelUnknown(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let publisher = try BrokerConnection.connected(to: broker, version: version, clientID: "publisher")
        // 5.0 §3.7.2.1 allows 0x92 Packet Identifier not found here; mosquitto answers Success.
        try publisher.expectAnswer(to: .pubRel(MQTTPubRel(packetID: 42)),
            is: .pubComp(MQTTPubComp(packetID: 42, reasonCode: .success, properties: [])))
    }

    @Test("a retained message reaches later subscribers with retain=1; an empty retained payload clears it",
          arguments: MosquittoAnswers.versions)
    func retained(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let publisher = try BrokerConnection.connected(to: broker, version: version, clientID: "publisher")
        // QoS 1, so the PUBACK tells us the message is stored before anyone subscribes.
        try publisher.expectAnswer(to: .publish(MQTTPublish(
            topic: "fleet/car-1/state", payload: Self.payload, qos: .atLeastOnce, retain: true, packetID: 1)),
            is: .pubAck(MQTTPubAck(packetID: 1, reasonCode: version == .v5 ? .noMatchingSubscribers : .success)))

        let late = try BrokerConnection.connected(to: broker, version: version, clientID: "late")
        try late.expectAnswer(to: .subscribe(MQTTSubscribe(
            packetID: 5, subscriptions: [MQTTSubscription(filter: "fleet/+/state", qos: .atLeastOnce)])),
            is: .subAck(MQTTSubAck(packetID: 5, reasonCodes: [.grantedQoS1])))
        try late.expectReceive(.publish(MQTTPublish(
            topic: "fleet/car-1/state", payload: Self.payload, qos: .atLeastOnce, retain: true, packetID: 1)))
        try late.send(.pubAck(MQTTPubAck(packetID: 1)))

        // Clear it. The current subscriber gets the empty message as a live one (retain=0).
        try publisher.expectAnswer(to: .publish(MQTTPublish(
            topic: "fleet/car-1/state", payload: [], qos: .atLeastOnce, retain: true, packetID: 2)),
            is: .pubAck(MQTTPubAck(packetID: 2)))
        try late.expectReceive(.publish(MQTTPublish(
            topic: "fleet/car-1/state", payload: [], qos: .atLeastOnce, retain: false, packetID: 2)))
        try late.send(.pubAck(MQTTPubAck(packetID: 2)))
        try late.expectBeforePingResponse([])

        // A subscriber after the clearing gets SUBACK and nothing else.
        let later = try BrokerConnection.connected(to: broker, version: version, clientID: "later")
        try later.subscribe("fleet/+/state", qos: .atLeastOnce)
        try later.expectBeforePingResponse([])
    }
}

@Suite("MQTT 5.0 PUBLISH properties and topic aliases through a real mosquitto")
struct MosquittoPublishPropertiesTests {
    @Test("5.0 PUBLISH properties reach the subscriber, with the subscription's Subscription Identifier added")
    func propertiesForwarded() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let subscriber = try BrokerConnection.connected(to: broker, version: .v5, clientID: "subscriber")
        try subscriber.expectAnswer(to: .subscribe(MQTTSubscribe(
            packetID: 1, subscriptions: [MQTTSubscription(filter: "fleet/#", qos: .atMostOnce)],
            properties: [.subscriptionIdentifier(300)])),
            is: .subAck(MQTTSubAck(packetID: 1, reasonCodes: [.grantedQoS0])))
        let publisher = try BrokerConnection.connected(to: broker, version: .v5, clientID: "publisher")
        let properties: [MQTTProperty] = [
            .payloadFormatIndicator(1), .contentType("text/plain"), .responseTopic("fleet/replies/car-1"),
            .correlationData([0xCA, 0xFE]), .userProperty(name: "vin", value: "W0L000051T2123456"),
            .userProperty(name: "vin", value: "second value, same name"),
        ]
        try publisher.send(.publish(MQTTPublish(topic: "fleet/car-1/speed", payload: [88], properties: properties)))
        try subscriber.expectReceive(.publish(MQTTPublish(
            topic: "fleet/car-1/speed", payload: [88], properties: [.subscriptionIdentifier(300)] + properties)))
    }

    @Test("5.0 Topic Alias: a PUBLISH with an empty topic and alias 1 reaches the subscriber under the full topic")
    func topicAlias() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let subscriber = try BrokerConnection.connected(to: broker, version: .v5, clientID: "subscriber")
        try subscriber.subscribe("fleet/#", qos: .atMostOnce)
        let publisher = try BrokerConnection.connected(to: broker, version: .v5, clientID: "publisher")
        try publisher.send(.publish(MQTTPublish(
            topic: "fleet/car-1/speed", payload: [1], properties: [.topicAlias(1)])))
        try publisher.send(.publish(MQTTPublish(topic: "", payload: [2], properties: [.topicAlias(1)])))
        // mosquitto resolves the alias and sends the full topic name without an alias of its own.
        try subscriber.expectReceive(.publish(MQTTPublish(topic: "fleet/car-1/speed", payload: [1])))
        try subscriber.expectReceive(.publish(MQTTPublish(topic: "fleet/car-1/speed", payload: [2])))
    }

    @Test("5.0 Topic Alias 11, above the Topic Alias Maximum 10 in CONNACK: DISCONNECT 0x94, then closed")
    func topicAliasAboveMaximum() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let publisher = try BrokerConnection.connected(to: broker, version: .v5, clientID: "publisher")
        try publisher.send(.publish(MQTTPublish(
            topic: "fleet/car-1/speed", payload: [1], properties: [.topicAlias(11)])))
        try publisher.expectReceive(.disconnect(MQTTDisconnect(reasonCode: .topicAliasInvalid)))
        #expect(throws: BrokerConnectionError.closedByBroker) { try publisher.receive() }
    }
}
