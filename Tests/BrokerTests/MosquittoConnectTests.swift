import FleetBroker
import MQTTCodec
import Testing

@Suite("CONNECT, PINGREQ and AUTH against a real mosquitto")
struct MosquittoConnectTests {
    @Test("CONNECT is answered by CONNACK success (3.1 MQIsdp, 3.1.1, 5.0 with Topic Alias Maximum 10)",
          arguments: [MQTTProtocolVersion.v3_1, .v3_1_1, .v5])
    func connectAccepted(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: version)
        let answer = try connection.exchange(.connect(MQTTConnect(version: version, clientID: "car-1")))
        let expected: MQTTPacket = version == .v5
            ? .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success, properties: [.topicAliasMaximum(10)]))
            : .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success, properties: []))
        #expect(answer == expected)
    }

    @Test("5.0 CONNACK carries Receive Maximum 20 when max_inflight_messages is 20")
    func connAckReceiveMaximum() throws {
        var configuration = MosquittoConfiguration()
        configuration.maxInflightMessages = 20
        let broker = try MosquittoBroker(configuration: configuration)
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: .v5)
        let answer = try connection.exchange(.connect(MQTTConnect(version: .v5, clientID: "car-1")))
        #expect(answer == .connAck(MQTTConnAck(
            sessionPresent: false, reasonCode: .success,
            properties: [.topicAliasMaximum(10), .receiveMaximum(20)])))
    }

    @Test("5.0 CONNECT with keep alive 0 gets Server Keep Alive 65535 (max_keepalive) in CONNACK")
    func connAckServerKeepAlive() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: .v5)
        let answer = try connection.exchange(.connect(MQTTConnect(version: .v5, clientID: "car-1", keepAlive: 0)))
        #expect(answer == .connAck(MQTTConnAck(
            sessionPresent: false, reasonCode: .success,
            properties: [.topicAliasMaximum(10), .serverKeepAlive(65_535)])))
    }

    @Test("5.0 CONNECT with an empty client identifier gets an Assigned Client Identifier auto-<UUID>")
    func assignedClientIdentifier() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: .v5)
        let answer = try connection.exchange(.connect(MQTTConnect(version: .v5, clientID: "")))
        guard case .connAck(let connAck) = answer else {
            Issue.record("expected CONNACK, got \(answer)")
            return
        }
        #expect(connAck.sessionPresent == false)
        #expect(connAck.reasonCode == .success)
        #expect(connAck.properties.count == 2)
        #expect(connAck.properties.first == .topicAliasMaximum(10))
        // The identifier is random: check its shape, "auto-" and a 36-character UUID.
        guard case .assignedClientIdentifier(let identifier) = connAck.properties.last else {
            Issue.record("expected Assigned Client Identifier last, got \(connAck.properties)")
            return
        }
        #expect(identifier.hasPrefix("auto-"))
        #expect(identifier.count == 41)
    }

    @Test("3.1.1 CONNECT with an empty client identifier and clean session is accepted")
    func emptyClientIdentifier311() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: .v3_1_1)
        let answer = try connection.exchange(.connect(MQTTConnect(version: .v3_1_1, clientID: "")))
        #expect(answer == .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success)))
    }

    @Test("3.1 CONNECT with an empty client identifier is refused with return code 2 and closed")
    func emptyClientIdentifier31() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: .v3_1)
        let answer = try connection.exchange(.connect(MQTTConnect(version: .v3_1, clientID: "")))
        // 3.1.1 return code 2 "identifier rejected" decodes as 0x85 Client Identifier not valid.
        #expect(answer == .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .clientIdentifierNotValid)))
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }

    @Test("a second CONNECT on one connection makes mosquitto close it without any packet",
          arguments: MosquittoAnswers.versions)
    func secondConnect(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection.connected(to: broker, version: version, clientID: "car-1")
        try connection.send(.connect(MQTTConnect(version: version, clientID: "car-1")))
        // 5.0 §3.1 [MQTT-3.1.0-2]: a Protocol Error, and the server closes; it MAY send DISCONNECT 0x82 first
        // (§4.13.1). mosquitto 2.0.11 does not: it closes at once, in both versions.
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }

    /// A CONNECT whose protocol name and level bytes are replaced, for levels the codec cannot encode.
    static func connectBytes(name: String, level: UInt8) -> [UInt8] {
        let version: MQTTProtocolVersion = name == "MQIsdp" ? .v3_1 : .v3_1_1
        var bytes = MQTTPacket.connect(MQTTConnect(version: version, clientID: "car-1")).encoded(version: version)
        // Fixed header (2 bytes), name length (2), name, then the level (3.1.1 §3.1.2.2).
        bytes[2 + 2 + name.utf8.count] = level
        return bytes
    }

    @Test("an unknown protocol level is refused with a 3.1.1-form CONNACK return code 1, then closed",
          arguments: [("MQTT", UInt8(6)), ("MQTT", UInt8(2)), ("MQTT", UInt8(3)), ("MQIsdp", UInt8(4))])
    func unsupportedProtocolLevel(name: String, level: UInt8) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        // 3.1.1 §3.1.2.2 requires return code 0x01 and a close; 5.0 §3.1.2.2 lets a 5.0 server answer a non-5
        // level with CONNACK 0x84 or just close. mosquitto 2.0.11 answers every unknown level, and a name/level
        // mismatch (MQIsdp with level 4), in the 3.1.1 form (2-byte body, return code 1), so it is decoded as 3.1.1.
        let connection = try BrokerConnection(port: broker.port, version: .v3_1_1)
        try connection.sendBytes(Self.connectBytes(name: name, level: level))
        try connection.expectReceive(
            .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .unsupportedProtocolVersion)))
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }

    @Test("a CONNECT with the reserved flag bit set is closed without CONNACK", arguments: MosquittoAnswers.versions)
    func reservedConnectFlag(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: version)
        var bytes = MQTTPacket.connect(MQTTConnect(version: version, clientID: "car-1")).encoded(version: version)
        // Connect flags follow the 2-byte header, "MQTT" with its length and the level; bit 0 is reserved
        // and must be 0 (3.1.1 §3.1.2.3, 5.0 §3.1.2.3: Malformed Packet).
        bytes[9] |= 0b1
        try connection.sendBytes(bytes)
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }

    @Test("PINGREQ is answered by PINGRESP", arguments: MosquittoAnswers.versions)
    func ping(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection.connected(to: broker, version: version, clientID: "car-1")
        try connection.expectAnswer(to: .pingReq, is: .pingResp)
        try connection.expectAnswer(to: .pingReq, is: .pingResp)
    }

    @Test("5.0 CONNECT with an Authentication Method and no auth plugin: CONNACK 0x8C, then closed")
    func authenticationMethodRefused() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection(port: broker.port, version: .v5)
        let answer = try connection.exchange(.connect(MQTTConnect(
            version: .v5, clientID: "car-1",
            properties: [.authenticationMethod("SCRAM-SHA-256"), .authenticationData(Array("n,,n=car".utf8))])))
        #expect(answer == .connAck(MQTTConnAck(sessionPresent: false, reasonCode: .badAuthenticationMethod)))
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }

    @Test("5.0 AUTH on a connection made without an Authentication Method is closed without DISCONNECT",
          arguments: [
            MQTTAuth(reasonCode: .success),
            MQTTAuth(reasonCode: .reAuthenticate, properties: [.authenticationMethod("SCRAM-SHA-256")]),
          ])
    func authWithoutMethod(auth: MQTTAuth) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let connection = try BrokerConnection.connected(to: broker, version: .v5, clientID: "car-1")
        try connection.send(.auth(auth))
        // 5.0 §3.15, §4.12: AUTH when CONNECT had no Authentication Method is a Protocol Error. The server MAY send
        // DISCONNECT 0x82 (§4.13.1); mosquitto 2.0.11 closes without any packet.
        #expect(throws: BrokerConnectionError.closedByBroker) { try connection.receive() }
    }
}
