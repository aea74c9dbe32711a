import FleetBroker
import FleetTransport
import Testing
import FleetTestSupport

/// The four ways to reach the broker, as the engine will stack the layers.
enum BrokerTransport: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case tcp, tls, ws, wss
    var testDescription: String { rawValue }
    var isSecure: Bool { self == .tls || self == .wss }
    var isWebSocket: Bool { self == .ws || self == .wss }
}

/// A mosquitto with a plain listener (mosquitto 2.0.11 will not start with websockets listeners alone), a
/// websockets listener and one TLS listener: plain MQTT over TLS, or (for wss) WebSocket over TLS.
func startBroker(
    tlsWebSockets: Bool = false, requireClientCertificate: Bool = false
) throws -> (MosquittoBroker, ThrowawayCertificates) {
    let certificates = try TestCertificates.get()
    var configuration = MosquittoConfiguration()
    configuration.websocketsListener = true
    configuration.tlsListener = MosquittoTLSListener(
        caFile: certificates.caFile, certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey,
        requireClientCertificate: requireClientCertificate, websockets: tlsWebSockets)
    return (try MosquittoBroker(configuration: configuration), certificates)
}

func port(of broker: MosquittoBroker, for transport: BrokerTransport) throws -> UInt16 {
    switch transport {
    case .tcp: return broker.port
    case .ws: return try #require(broker.layout.websocketsPort)
    case .tls, .wss: return try #require(broker.tlsPort)
    }
}

@Suite("TLS and WebSocket transports against a real mosquitto")
struct TLSWebSocketBrokerTests {
    static let roundTrips: [(BrokerTransport, UInt8)] = BrokerTransport.allCases.flatMap { transport in
        [UInt8(0), 1, 2].map { (transport, $0) }
    }

    @Test("CONNECT, SUBSCRIBE and a PUBLISH round trip with every acknowledgement, on each transport and QoS",
          arguments: roundTrips)
    func mqttRoundTrip(transport: BrokerTransport, qos: UInt8) throws {
        let (broker, certificates) = try startBroker(tlsWebSockets: transport == .wss)
        let context = transport.isSecure ? try TLSClientContext(configuration: .init(caFile: certificates.caFile)) : nil
        let client = try LayeredTestClient.connect(
            port: try port(of: broker, for: transport), tls: context,
            websocketPath: transport.isWebSocket ? "/mqtt" : nil)
        let exchange = try client.mqttRoundTrip(clientID: "\(transport.rawValue)-q\(qos)", qos: qos)
        #expect(exchange.received == exchange.expected)
        if let tls = client.tls {
            #expect(tls.isHandshakeComplete)
            #expect(["TLSv1.2", "TLSv1.3"].contains(tls.negotiatedVersion))
        }
    }

    @Test("TLS records fed one byte per call still complete the handshake and a QoS 1 round trip, on tls and wss",
          arguments: [BrokerTransport.tls, .wss])
    func ciphertextByteByByte(transport: BrokerTransport) throws {
        let (broker, certificates) = try startBroker(tlsWebSockets: transport == .wss)
        let context = try TLSClientContext(configuration: .init(caFile: certificates.caFile))
        let client = try LayeredTestClient.connect(
            port: try port(of: broker, for: transport), tls: context,
            websocketPath: transport.isWebSocket ? "/mqtt" : nil, feedCiphertextByteByByte: true)
        let exchange = try client.mqttRoundTrip(clientID: "bytewise-\(transport.rawValue)", qos: 1)
        #expect(exchange.received == exchange.expected)
    }

    @Test("TLS 1.2 and TLS 1.3 are both negotiated when pinned", arguments: [TLSProtocolVersion.tls12, .tls13])
    func pinnedVersions(version: TLSProtocolVersion) throws {
        let (broker, certificates) = try startBroker()
        let context = try TLSClientContext(
            configuration: .init(caFile: certificates.caFile, minimumVersion: version, maximumVersion: version))
        let client = try LayeredTestClient.connect(port: try port(of: broker, for: .tls), tls: context)
        #expect(client.tls?.negotiatedVersion == (version == .tls12 ? "TLSv1.2" : "TLSv1.3"))
        try client.sendMQTT(MQTTTestBytes.connect(clientID: "pinned"))
        #expect(try client.receivePackets(1) == [MQTTTestBytes.connack])
    }

    @Test("the broker's certificate verifies by IP address and by DNS name from its subjectAltName",
          arguments: ["127.0.0.1", "localhost"])
    func verifiesByName(serverName: String) throws {
        let (broker, certificates) = try startBroker()
        let context = try TLSClientContext(configuration: .init(caFile: certificates.caFile))
        let client = try LayeredTestClient.connect(port: try port(of: broker, for: .tls), tls: context, serverName: serverName)
        try client.sendMQTT(MQTTTestBytes.connect(clientID: "by-name"))
        #expect(try client.receivePackets(1) == [MQTTTestBytes.connack])
    }

    @Test("a broker certificate from another CA fails with the X509 verify error, on tls and wss",
          arguments: [BrokerTransport.tls, .wss])
    func wrongCAFails(transport: BrokerTransport) throws {
        let (broker, certificates) = try startBroker(tlsWebSockets: transport == .wss)
        let context = try TLSClientContext(configuration: .init(caFile: certificates.otherCAFile))
        let error = #expect(throws: TLSError.self) {
            _ = try LayeredTestClient.connect(
                port: try port(of: broker, for: transport), tls: context,
                websocketPath: transport.isWebSocket ? "/mqtt" : nil)
        }
        #expect(error?.kind == .certificateVerifyFailed)
        // mosquitto's OpenSSL sends the chain up to its CA (built from its cafile), so the client meets a
        // self-signed root it does not trust, rather than a missing issuer.
        #expect(error?.description == "certificate verify failed: self-signed certificate in certificate chain")
    }

    @Test("a broker certificate for other names fails with a hostname mismatch, by DNS name and by IP address",
          arguments: [("broker.example.com", "hostname mismatch"), ("127.0.0.2", "IP address mismatch")])
    func nameMismatchFails(serverName: String, reason: String) throws {
        let (broker, certificates) = try startBroker()
        let context = try TLSClientContext(configuration: .init(caFile: certificates.caFile))
        let error = #expect(throws: TLSError.self) {
            _ = try LayeredTestClient.connect(port: try port(of: broker, for: .tls), tls: context, serverName: serverName)
        }
        #expect(error?.description == "certificate verify failed: \(reason)")
    }

    @Test("insecureSkipVerify accepts a certificate from an unknown CA for a wrong name")
    func insecureSkipVerify() throws {
        let (broker, certificates) = try startBroker()
        let context = try TLSClientContext(
            configuration: .init(caFile: certificates.otherCAFile, insecureSkipVerify: true))
        let client = try LayeredTestClient.connect(
            port: try port(of: broker, for: .tls), tls: context, serverName: "broker.example.com")
        try client.sendMQTT(MQTTTestBytes.connect(clientID: "insecure"))
        #expect(try client.receivePackets(1) == [MQTTTestBytes.connack])
    }

    @Test("a broker requiring client certificates accepts the fleet's certificate and a per-client one")
    func clientCertificateAccepted() throws {
        let (broker, certificates) = try startBroker(requireClientCertificate: true)
        let fleetCertificate = TLSClientCertificate(
            certificateFile: certificates.clientCertificate, privateKeyFile: certificates.clientKey)
        let fleetContext = try TLSClientContext(
            configuration: .init(caFile: certificates.caFile, clientCertificate: fleetCertificate))
        let perClient = TLSClientCertificate.resolving(
            certificatePattern: certificates.directory + "/{client_id}.pem",
            privateKeyPattern: certificates.directory + "/{client_id}.key", clientID: "client")
        #expect(perClient == fleetCertificate)
        let plainContext = try TLSClientContext(configuration: .init(caFile: certificates.caFile))
        for (context, certificate) in [(fleetContext, nil), (plainContext, perClient)] {
            let client = try LayeredTestClient.connect(
                port: try port(of: broker, for: .tls), tls: context, clientCertificate: certificate)
            try client.sendMQTT(MQTTTestBytes.connect(clientID: "with-certificate"))
            #expect(try client.receivePackets(1) == [MQTTTestBytes.connack])
        }
    }

    /// TLS 1.2: the server checks the client's certificate inside the handshake, so the handshake fails. TLS 1.3:
    /// the client finishes first (RFC 8446 §4.4.2) and the alert arrives with the first read after it.
    @Test("a broker requiring client certificates refuses a client without one with the broker's alert",
          arguments: [
              (TLSProtocolVersion.tls12, "protocol alert: sslv3 alert handshake failure"),
              (.tls13, "protocol alert: tlsv13 alert certificate required"),
          ])
    func missingClientCertificateFails(version: TLSProtocolVersion, reason: String) throws {
        let (broker, certificates) = try startBroker(requireClientCertificate: true)
        let context = try TLSClientContext(
            configuration: .init(caFile: certificates.caFile, minimumVersion: version, maximumVersion: version))
        let error = #expect(throws: TLSError.self) {
            // Read straight after the handshake: a CONNECT written now could meet the broker's reset (ECONNRESET)
            // before the alert is read, hiding the reason. The engine should likewise read before reporting a reset.
            let client = try LayeredTestClient.connect(port: try port(of: broker, for: .tls), tls: context)
            _ = try client.receivePackets(1)
        }
        #expect(error?.kind == .protocolAlert)
        #expect(error?.description == reason)
    }

    @Test("mosquitto 2.0.11 upgrades any WebSocket path, so a refused upgrade is tested against a local responder")
    func mosquittoAcceptsAnyPath() throws {
        let (broker, _) = try startBroker()
        let client = try LayeredTestClient.connect(
            port: try port(of: broker, for: .ws), websocketPath: "/no/such/path")
        try client.sendMQTT(MQTTTestBytes.connect(clientID: "any-path"))
        #expect(try client.receivePackets(1) == [MQTTTestBytes.connack])
    }

    @Test("mosquitto closes the connection when no offered subprotocol is MQTT's; the reason says so")
    func unknownSubprotocolClosed() throws {
        let (broker, _) = try startBroker()
        let error = #expect(throws: WebSocketError.self) {
            _ = try LayeredTestClient.connect(
                port: try port(of: broker, for: .ws), websocketPath: "/mqtt", subprotocols: ["chat"])
        }
        #expect(error?.description == "connection closed before any WebSocket upgrade response")
    }

    @Test("mqttv3.1 is offered and accepted as the subprotocol for MQTT 3.1 clients")
    func mqttv31Subprotocol() throws {
        let (broker, _) = try startBroker()
        let client = try LayeredTestClient.connect(
            port: try port(of: broker, for: .ws), websocketPath: "/mqtt", subprotocols: ["mqttv3.1"])
        try client.sendMQTT(MQTTTestBytes.connect(clientID: "v31-subprotocol"))
        #expect(try client.receivePackets(1) == [MQTTTestBytes.connack])
    }

    @Test("ALPN: the wss listener (libwebsockets) selects the protocol we offer")
    func alpnNegotiated() throws {
        let (broker, certificates) = try startBroker(tlsWebSockets: true)
        let context = try TLSClientContext(configuration: .init(caFile: certificates.caFile, alpnProtocols: ["http/1.1"]))
        let client = try LayeredTestClient.connect(port: try port(of: broker, for: .wss), tls: context, websocketPath: "/mqtt")
        #expect(client.tls?.negotiatedALPN == "http/1.1")
    }

    @Test("two MQTT packets in one WebSocket frame and one packet split over three frames both reach the broker")
    func packetsAcrossFrames() throws {
        let (broker, _) = try startBroker()
        let client = try LayeredTestClient.connect(port: try port(of: broker, for: .ws), websocketPath: "/mqtt")
        guard var websocket = client.websocket else { throw LayeredTestClient.EndOfStream() }
        let framed = OutboundBuffer()
        // CONNECT and SUBSCRIBE in a single binary frame.
        try websocket.send(
            MQTTTestBytes.connect(clientID: "frames") + MQTTTestBytes.subscribe(topic: "f/t", qos: 0, packetID: 7),
            into: framed)
        // A PUBLISH cut into three frames at arbitrary points.
        let publish = MQTTTestBytes.publish(topic: "f/t", payload: Array("split".utf8), qos: 0, packetID: 0)
        for piece in [publish[0..<1], publish[1..<6], publish[6...]] { try websocket.send(Array(piece), into: framed) }
        client.websocket = websocket
        try client.writeStream(Array(framed.readableBytes))
        #expect(try client.receivePackets(3) == [MQTTTestBytes.connack, MQTTTestBytes.suback(packetID: 7, qos: 0), publish])
    }
}
