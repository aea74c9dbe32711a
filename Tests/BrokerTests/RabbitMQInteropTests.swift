import FleetBroker
import MQTTCodec
import Testing

/// What RabbitMQ 3.10's MQTT plugin (Debian bookworm's rabbitmq-server 3.10.8, stock settings) answers, on the
/// wire and exactly: the flows fleetbench relies on, and the two places where it gives less than asked, which
/// fleetbench must report rather than pass over: QoS 2 runs as QoS 1 (SUBACK grants 1, a QoS 2 PUBLISH gets a
/// PUBACK) and MQTT 5 is not spoken (the connection is closed without a CONNACK).
///
/// One node for the whole suite (`.rabbitMQNode`, extended in RabbitMQEngineTests.swift and
/// RabbitMQRunTests.swift); each test uses its own client ids and topics. Serialized: the node is shared and the
/// machine small, and every test's exchange is short.
@Suite("RabbitMQ 3.10 MQTT plugin", .serialized, .rabbitMQNode)
struct RabbitMQTests {
    static let payload: [UInt8] = Array("speed=88".utf8)
    static let accepted = MQTTPacket.connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success))

    /// Opens a 3.1.1 connection and requires RabbitMQ's CONNACK (`sessionPresent` as given).
    static func connected(
        _ clientID: String, cleanSession: Bool = true, will: MQTTWill? = nil, sessionPresent: Bool = false
    ) throws -> BrokerConnection {
        let broker = try RabbitMQNode.broker()
        let connection = try BrokerConnection(port: broker.port, version: .v3_1_1)
        let answer = try connection.exchange(.connect(MQTTConnect(
            version: .v3_1_1, clientID: clientID, cleanStart: cleanSession, will: will)))
        try #require(answer == .connAck(MQTTConnAck(sessionPresent: sessionPresent, reasonCode: .success)),
                     "\(broker.logTail())")
        return connection
    }

    @Test("CONNECT is accepted; SUBACK grants QoS 0 and 1 as asked and QoS 2 as QoS 1")
    func connectAndSubscribe() throws {
        let client = try Self.connected("rabbit-subscriber")
        let answer = try client.exchange(.subscribe(MQTTSubscribe(packetID: 5, subscriptions: [
            MQTTSubscription(filter: "interop/subscribe/0", qos: .atMostOnce),
            MQTTSubscription(filter: "interop/subscribe/1", qos: .atLeastOnce),
            MQTTSubscription(filter: "interop/subscribe/2", qos: .exactlyOnce),
        ])))
        #expect(answer == .subAck(MQTTSubAck(packetID: 5, reasonCodes: [
            .granted(.atMostOnce), .granted(.atLeastOnce), .granted(.atLeastOnce)])))
        try client.disconnect()
    }

    @Test("QoS 0 and QoS 1 PUBLISH reach a subscriber; QoS 1 gets PUBACK")
    func qos0AndQoS1() throws {
        let subscriber = try Self.connected("rabbit-flow-subscriber")
        try subscriber.subscribe("interop/flow/#", qos: .atLeastOnce)
        let publisher = try Self.connected("rabbit-flow-publisher")
        try publisher.send(.publish(MQTTPublish(topic: "interop/flow/0", payload: Self.payload)))
        // A QoS 0 message is delivered at QoS 0 whatever the subscription's QoS.
        try subscriber.expectReceive(.publish(MQTTPublish(topic: "interop/flow/0", payload: Self.payload)))
        try publisher.expectAnswer(
            to: .publish(MQTTPublish(topic: "interop/flow/1", payload: Self.payload, qos: .atLeastOnce, packetID: 7)),
            is: .pubAck(MQTTPubAck(packetID: 7)))
        // RabbitMQ numbers its outgoing QoS 1 messages per connection from 1.
        try subscriber.expectReceive(.publish(MQTTPublish(
            topic: "interop/flow/1", payload: Self.payload, qos: .atLeastOnce, packetID: 1)))
        try subscriber.send(.pubAck(MQTTPubAck(packetID: 1)))
        try publisher.disconnect()
        try subscriber.disconnect()
    }

    @Test("QoS 2 PUBLISH is answered with PUBACK, not PUBREC, and delivered at QoS 1 (no QoS 2 in 3.10)")
    func qos2RunsAsQoS1() throws {
        let subscriber = try Self.connected("rabbit-qos2-subscriber")
        let granted = try subscriber.exchange(.subscribe(MQTTSubscribe(
            packetID: 1, subscriptions: [MQTTSubscription(filter: "interop/qos2", qos: .exactlyOnce)])))
        #expect(granted == .subAck(MQTTSubAck(packetID: 1, reasonCodes: [.granted(.atLeastOnce)])))
        let publisher = try Self.connected("rabbit-qos2-publisher")
        try publisher.expectAnswer(
            to: .publish(MQTTPublish(topic: "interop/qos2", payload: Self.payload, qos: .exactlyOnce, packetID: 9)),
            is: .pubAck(MQTTPubAck(packetID: 9)))
        try subscriber.expectReceive(.publish(MQTTPublish(
            topic: "interop/qos2", payload: Self.payload, qos: .atLeastOnce, packetID: 1)))
        try subscriber.send(.pubAck(MQTTPubAck(packetID: 1)))
        try publisher.disconnect()
        try subscriber.disconnect()
    }

    @Test("a retained QoS 1 message is delivered to a later subscriber with the retain flag set")
    func retained() throws {
        let publisher = try Self.connected("rabbit-retain-publisher")
        try publisher.expectAnswer(
            to: .publish(MQTTPublish(topic: "interop/retained", payload: Self.payload, qos: .atLeastOnce,
                                     retain: true, packetID: 3)),
            is: .pubAck(MQTTPubAck(packetID: 3)))
        try publisher.disconnect()
        let subscriber = try Self.connected("rabbit-retain-subscriber")
        try subscriber.subscribe("interop/retained", qos: .atLeastOnce)
        try subscriber.expectReceive(.publish(MQTTPublish(
            topic: "interop/retained", payload: Self.payload, qos: .atLeastOnce, retain: true, packetID: 1)))
        try subscriber.send(.pubAck(MQTTPubAck(packetID: 1)))
        try subscriber.disconnect()
        // An empty retained message clears it, so a rerun against the same node starts clean. Sent by a client
        // that does not subscribe: the subscriber would get it back, and may before its DISCONNECT closes.
        let clearer = try Self.connected("rabbit-retain-clearer")
        try clearer.send(.publish(MQTTPublish(topic: "interop/retained", payload: [], retain: true)))
        try clearer.disconnect()
    }

    @Test("a client lost without DISCONNECT has its will published; a clean DISCONNECT does not")
    func will() throws {
        let watcher = try Self.connected("rabbit-will-watcher")
        try watcher.subscribe("interop/will/+", qos: .atLeastOnce)
        let lost = try Self.connected("rabbit-will-lost", will: MQTTWill(
            topic: "interop/will/lost", payload: Array("gone".utf8), qos: .atLeastOnce))
        let polite = try Self.connected("rabbit-will-polite", will: MQTTWill(
            topic: "interop/will/polite", payload: Array("bye".utf8), qos: .atLeastOnce))
        try polite.disconnect()
        lost.close()
        try watcher.expectReceive(.publish(MQTTPublish(
            topic: "interop/will/lost", payload: Array("gone".utf8), qos: .atLeastOnce, packetID: 1)))
        try watcher.send(.pubAck(MQTTPubAck(packetID: 1)))
        // Only the lost client's will arrives: 2 s of silence after it.
        #expect(throws: BrokerConnectionError.timedOut(seconds: 2, bufferedBytes: 0)) {
            try watcher.receive(timeout: 2)
        }
        try watcher.disconnect()
    }

    @Test("clean session false: the session survives a disconnect and the 3 QoS 1 messages queued meanwhile arrive in order")
    func persistentSession() throws {
        let first = try Self.connected("rabbit-persistent", cleanSession: false)
        try first.subscribe("interop/persistent", qos: .atLeastOnce)
        try first.disconnect()
        let publisher = try Self.connected("rabbit-persistent-publisher")
        for id: UInt16 in 1...3 {
            try publisher.expectAnswer(
                to: .publish(MQTTPublish(topic: "interop/persistent", payload: [UInt8(id)], qos: .atLeastOnce,
                                         packetID: id)),
                is: .pubAck(MQTTPubAck(packetID: id)))
        }
        try publisher.disconnect()
        let again = try Self.connected("rabbit-persistent", cleanSession: false, sessionPresent: true)
        for id: UInt16 in 1...3 {
            try again.expectReceive(.publish(MQTTPublish(
                topic: "interop/persistent", payload: [UInt8(id)], qos: .atLeastOnce, packetID: id)))
            try again.send(.pubAck(MQTTPubAck(packetID: id)))
        }
        try again.disconnect()
        // A clean session ends it, so a rerun against the same node starts from no session.
        let cleaned = try Self.connected("rabbit-persistent", cleanSession: true)
        try cleaned.disconnect()
    }

    @Test("MQTT 5 CONNECT: the connection is closed without a CONNACK (3.10 speaks 3.1 and 3.1.1 only)")
    func mqtt5Refused() throws {
        let connection = try BrokerConnection(port: try RabbitMQNode.broker().port, version: .v5)
        try connection.send(.connect(MQTTConnect(version: .v5, clientID: "rabbit-five")))
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }
}
