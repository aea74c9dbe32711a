import FleetBroker
import MQTTCodec
import Testing

/// What mosquitto 2.0.11, as configured by `MosquittoConfiguration()`, answers where the specification leaves it a
/// choice. Observed on the wire and asserted exactly, so a broker upgrade that changes them shows up here.
///
/// Every test starts its own broker with `MosquittoBroker()` (its own free port, so tests run in parallel) and
/// stops it in a `defer`. Without mosquitto installed, `MosquittoError.notInstalled` propagates: its message says
/// how to install it, and the test fails rather than being skipped.
enum MosquittoAnswers {
    /// The versions every flow is tested in.
    static let versions: [MQTTProtocolVersion] = [.v3_1_1, .v5]

    /// CONNACK to an ordinary CONNECT. In 5.0 mosquitto adds Topic Alias Maximum 10 (its `max_topic_alias`
    /// default, 5.0 §3.2.2.3.8); it leaves Receive Maximum out because our configuration sets
    /// `max_inflight_messages 0` (unlimited; an absent Receive Maximum means 65,535: 5.0 §3.2.2.3.3), and leaves
    /// out Maximum QoS (absent: QoS 2, §3.2.2.3.4) and the "available" flags (absent: available, §3.2.2.3.5 and
    /// §3.2.2.3.11-13).
    static func connAckAccepted(_ version: MQTTProtocolVersion) -> MQTTPacket {
        .connAck(MQTTConnAck(
            sessionPresent: false, reasonCode: .success,
            properties: version == .v5 ? [.topicAliasMaximum(10)] : []))
    }
}

extension BrokerConnection {
    /// Opens a connection, sends CONNECT and requires mosquitto's ordinary CONNACK.
    static func connected(
        to broker: MosquittoBroker, version: MQTTProtocolVersion, clientID: String, will: MQTTWill? = nil
    ) throws -> BrokerConnection {
        let connection = try BrokerConnection(port: broker.port, version: version)
        let answer = try connection.exchange(.connect(MQTTConnect(version: version, clientID: clientID, will: will)))
        try #require(answer == MosquittoAnswers.connAckAccepted(version), "\(broker.logTail())")
        return connection
    }

    /// Subscribes to `filter` at `qos` and requires the SUBACK granting it.
    func subscribe(_ filter: String, qos: MQTTQoS, packetID: UInt16 = 1) throws {
        let answer = try exchange(.subscribe(MQTTSubscribe(
            packetID: packetID, subscriptions: [MQTTSubscription(filter: filter, qos: qos)])))
        try #require(answer == .subAck(MQTTSubAck(packetID: packetID, reasonCodes: [.granted(qos)])))
    }

    /// Sends DISCONNECT and waits for mosquitto to close the connection, so that whatever the DISCONNECT made it
    /// do (publish a will, or not) has happened before the test goes on.
    func disconnect(reasonCode: MQTTReasonCode = .normalDisconnection) throws {
        try send(.disconnect(MQTTDisconnect(reasonCode: reasonCode)))
        #expect(throws: BrokerConnectionError.closedByBroker) { try self.receive() }
    }
}
