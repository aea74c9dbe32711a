import FleetBroker
import MQTTCodec
import Testing

@Suite("DISCONNECT and will messages against a real mosquitto")
struct MosquittoDisconnectTests {
    static let will = MQTTWill(topic: "fleet/car-1/status", payload: Array("offline".utf8), qos: .atLeastOnce)

    /// A subscriber to the will topic, at QoS 1.
    static func willWatcher(_ broker: MosquittoBroker, _ version: MQTTProtocolVersion) throws -> BrokerConnection {
        let watcher = try BrokerConnection.connected(to: broker, version: version, clientID: "watcher")
        try watcher.subscribe("fleet/+/status", qos: .atLeastOnce)
        return watcher
    }

    static let willDelivered = MQTTPacket.publish(MQTTPublish(
        topic: "fleet/car-1/status", payload: Array("offline".utf8), qos: .atLeastOnce, retain: false, packetID: 1))

    @Test("a normal DISCONNECT makes mosquitto close the connection and discard the will",
          arguments: MosquittoAnswers.versions)
    func normalDisconnect(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let watcher = try Self.willWatcher(broker, version)
        let car = try BrokerConnection.connected(to: broker, version: version, clientID: "car-1", will: Self.will)
        try car.disconnect()
        try watcher.expectBeforePingResponse([])
    }

    @Test("5.0 DISCONNECT 0x04 Disconnect with Will Message closes the connection and publishes the will")
    func disconnectWithWill() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let watcher = try Self.willWatcher(broker, .v5)
        let car = try BrokerConnection.connected(to: broker, version: .v5, clientID: "car-1", will: Self.will)
        try car.disconnect(reasonCode: .disconnectWithWillMessage)
        try watcher.expectReceive(Self.willDelivered)
        try watcher.send(.pubAck(MQTTPubAck(packetID: 1)))
        try watcher.expectBeforePingResponse([])
    }

    @Test("losing the connection without DISCONNECT publishes the will", arguments: MosquittoAnswers.versions)
    func connectionLost(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let watcher = try Self.willWatcher(broker, version)
        let car = try BrokerConnection.connected(to: broker, version: version, clientID: "car-1", will: Self.will)
        car.close()
        try watcher.expectReceive(Self.willDelivered)
    }

    @Test("5.0 DISCONNECT with a Session Expiry Interval when CONNECT had none is a Protocol Error: DISCONNECT 0x82")
    func sessionExpiryOnDisconnect() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let car = try BrokerConnection.connected(to: broker, version: .v5, clientID: "car-1")
        try car.send(.disconnect(MQTTDisconnect(
            reasonCode: .normalDisconnection, properties: [.sessionExpiryInterval(60)])))
        try car.expectReceive(.disconnect(MQTTDisconnect(reasonCode: .protocolError)))
        #expect(throws: BrokerConnectionError.closedByBroker) { try car.receive() }
    }
}
