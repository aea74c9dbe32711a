import FleetBroker
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine
import FleetTestSupport

/// The engine over TLS, WebSocket and WebSocket over TLS against a real mosquitto: exact counts as on TCP.
@Suite("Engine over TLS and WebSocket", .serialized)
struct EngineTransportTests {
    enum Layers: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case tls, ws, wss
        var testDescription: String { rawValue }
    }

    /// A mosquitto with a websockets listener and a TLS listener (WebSocket over TLS for `wss`).
    static func broker(for layers: Layers, certificates: ThrowawayCertificates) throws -> MosquittoBroker {
        var configuration = MosquittoConfiguration()
        configuration.websocketsListener = true
        configuration.tlsListener = MosquittoTLSListener(
            caFile: certificates.caFile, certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey,
            websockets: layers == .wss)
        return try MosquittoBroker(configuration: configuration)
    }

    static func endpoint(for layers: Layers, broker: MosquittoBroker, caFile: String) throws -> EngineBrokerEndpoint {
        let webSocket = EngineWebSocket(host: "127.0.0.1", path: "/mqtt")
        switch layers {
        case .ws:
            let port = try #require(broker.layout.websocketsPort)
            return EngineBrokerEndpoint(address: try SocketAddress(ipAddress: "127.0.0.1", port: port),
                                        transport: .webSocket(webSocket))
        case .tls, .wss:
            let port = try #require(broker.tlsPort)
            let tls = EngineTLS(context: try TLSClientContext(configuration: .init(caFile: caFile)), serverName: "127.0.0.1")
            return EngineBrokerEndpoint(address: try SocketAddress(ipAddress: "127.0.0.1", port: port),
                                        transport: layers == .tls ? .tls(tls) : .secureWebSocket(tls, webSocket))
        }
    }

    static func withEndpoint(_ fleets: [EngineFleet], _ endpoint: EngineBrokerEndpoint) -> [EngineFleet] {
        fleets.map { fleet in
            var fleet = fleet
            fleet.endpoints = [endpoint]
            return fleet
        }
    }

    static let roundTrips: [(Layers, MQTTQoS)] = Layers.allCases.flatMap { layers in
        [MQTTQoS.atMostOnce, .atLeastOnce, .exactlyOnce].map { (layers, $0) }
    }

    @Test("QoS 0, 1 and 2 round trips deliver every message exactly once on tls, ws and wss", arguments: roundTrips)
    func roundTrip(layers: Layers, qos: MQTTQoS) throws {
        let certificates = try TestCertificates.get()
        let broker = try Self.broker(for: layers, certificates: certificates)
        defer { broker.stop() }
        let endpoint = try Self.endpoint(for: layers, broker: broker, caFile: certificates.caFile)
        let fleets = EngineTests.fleets(version: .v5, qos: qos, publishers: 3, messages: 200, subscribers: 2)
        let configuration = EngineConfiguration(fleets: Self.withEndpoint(fleets, endpoint), brokers: [], lanes: 2,
                                                drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        EngineTests.expectExactRoundTrip(result, qos: qos)
        let handshakes = result.latency.histogram(.tlsHandshake, from: .sent).totalCount
        let upgrades = result.latency.histogram(.wsUpgrade, from: .sent).totalCount
        #expect(handshakes == (layers == .ws ? 0 : 5))
        #expect(upgrades == (layers == .tls ? 0 : 5))
        #expect(result.counters.transportErrors.isEmpty)
        #expect(result.counters.disconnects[.clientInitiated] == 5)
    }

    @Test("a CA that did not sign the broker fails every connect with certificate verify failed", arguments: [Layers.tls, .wss])
    func wrongCA(layers: Layers) throws {
        let certificates = try TestCertificates.get()
        let broker = try Self.broker(for: layers, certificates: certificates)
        defer { broker.stop() }
        let endpoint = try Self.endpoint(for: layers, broker: broker, caFile: certificates.otherCAFile)
        let fleets = EngineTests.fleets(version: .v3_1_1, qos: .atLeastOnce, publishers: 4, messages: 10, subscribers: 3)
        var configuration = EngineConfiguration(fleets: Self.withEndpoint(fleets, endpoint), brokers: [], lanes: 2,
                                                readyTimeout: 2_000_000_000, drainTimeout: 500_000_000)
        configuration.waitForReady = true
        let result = try Engine(configuration: configuration).run(duration: 200_000_000)
        #expect(result.counters.connectsAttempted == 7)
        #expect(result.counters.connectsSucceeded == 0)
        #expect(result.counters.connectFailures[.tlsHandshakeFailed] == 7)
        #expect(result.counters.transportErrors == ["certificate verify failed: self-signed certificate in certificate chain": 7])
        #expect(result.fleets["publishers"]?.counters.transportErrors.values.reduce(0, +) == 4)
    }

    @Test("a refused WebSocket upgrade fails every connect with the HTTP status in the reason")
    func refusedUpgrade() throws {
        let responder = try MiniHTTPServer(address: try SocketAddress(ipAddress: "127.0.0.1", port: 0)) { _, _ in
            MiniHTTPServer.Response(status: 404, body: "no such path\n")
        }
        defer { responder.stop() }
        let endpoint = EngineBrokerEndpoint(
            address: responder.address, transport: .webSocket(EngineWebSocket(host: "127.0.0.1", path: "/wrong")))
        let fleets = EngineTests.fleets(version: .v5, qos: .atMostOnce, publishers: 2, messages: 10, subscribers: 1)
        let configuration = EngineConfiguration(fleets: Self.withEndpoint(fleets, endpoint), brokers: [], lanes: 1,
                                                readyTimeout: 2_000_000_000, drainTimeout: 500_000_000)
        let result = try Engine(configuration: configuration).run(duration: 200_000_000)
        #expect(result.counters.connectsAttempted == 3)
        #expect(result.counters.connectsSucceeded == 0)
        #expect(result.counters.connectFailures[.websocketUpgradeFailed] == 3)
        #expect(result.counters.transportErrors == ["WebSocket upgrade refused: HTTP 404 (HTTP/1.1 404 Not Found)": 3])
    }

    // MARK: Hostile peers

    static let hostileFrameCases: [(String, [UInt8], String)] = [
        ("reserved bits set", [0xF2, 0x00],
         "WebSocket frame with reserved bits set (0xf2): no extension was negotiated"),
        ("a masked server frame", [0x82, 0x82, 1, 2, 3, 4, 0, 0], "masked WebSocket frame from the server"),
        // A binary frame announcing 2 MiB (64-bit length, RFC 6455 §5.2) against the 1 MiB maximum.
        ("an oversized frame", [0x82, 127, 0, 0, 0, 0, 0x00, 0x20, 0x00, 0x00],
         "WebSocket frame of 2097152 bytes exceeds the maximum of 1048576"),
    ]

    @Test("bad or oversized WebSocket frames close only the clients that got them, with the reason; the run goes on",
          arguments: hostileFrameCases)
    func hostileFrames(name: String, bytes: [UInt8], reason: String) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let peer = try HostileTransportPeer(mode: .webSocket, bytes: bytes)
        defer { peer.stop() }
        var fleets = EngineTests.fleets(version: .v3_1_1, qos: .atLeastOnce, publishers: 2, messages: 100, subscribers: 1)
        var victims = EngineFleet(name: "victims", count: 3, clientID: { "victim-\($0)" },
                                  session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30))
        victims.endpoints = [EngineBrokerEndpoint(
            address: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port),
            transport: .webSocket(EngineWebSocket(host: "127.0.0.1")))]
        fleets.append(victims)
        let configuration = EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 500_000_000)
        let victimResult = try #require(result.fleets["victims"])
        #expect(victimResult.counters.connectsSucceeded == 3)
        #expect(victimResult.counters.disconnects[.protocolError] == 3)
        #expect(victimResult.counters.transportErrors == [reason: 3])
        #expect(result.counters.connectsSucceeded == 6)
        #expect(result.delivery[1].expected == 200)
        #expect(result.delivery[1].unique == 200)
        #expect(result.delivery[1].lost == 0)
    }

    @Test("a TLS endpoint that answers with plain text fails each connect as a TLS handshake failure with the reason")
    func garbageInsteadOfTLS() throws {
        let peer = try HostileTransportPeer(mode: .garbage, bytes: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        defer { peer.stop() }
        let certificates = try TestCertificates.get()
        var fleet = EngineFleet(name: "cars", count: 3, clientID: { "car-\($0)" },
                                session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30))
        fleet.endpoints = [EngineBrokerEndpoint(
            address: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port),
            transport: .tls(EngineTLS(context: try TLSClientContext(configuration: .init(caFile: certificates.caFile)),
                                      serverName: "127.0.0.1")))]
        let configuration = EngineConfiguration(fleets: [fleet], brokers: [], lanes: 1, readyTimeout: 2_000_000_000,
                                                drainTimeout: 200_000_000)
        let result = try Engine(configuration: configuration).run(duration: 100_000_000)
        #expect(result.counters.connectsAttempted == 3)
        #expect(result.counters.connectFailures[.tlsHandshakeFailed] == 3)
        #expect(result.counters.transportErrors == ["TLS error: wrong version number": 3])
    }

    @Test("a peer that never answers the TLS handshake or the WebSocket upgrade times out within the connect timeout",
          arguments: [Layers.tls, .ws])
    func silentPeer(layers: Layers) throws {
        let peer = try HostileTransportPeer(mode: .silent, bytes: [])
        defer { peer.stop() }
        let certificates = try TestCertificates.get()
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: peer.port)
        let transport: EngineTransport = layers == .tls
            ? .tls(EngineTLS(context: try TLSClientContext(configuration: .init(caFile: certificates.caFile)), serverName: "127.0.0.1"))
            : .webSocket(EngineWebSocket(host: "127.0.0.1"))
        // The connect timeout (ack_timeouts.connect) bounds the layers, not the CONNACK deadline, which is long.
        var fleet = EngineFleet(
            name: "cars", count: 2, clientID: { "car-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30, timeouts: MQTTAckTimeouts(connAck: 60_000_000_000)))
        fleet.connectTimeout = 300_000_000
        fleet.endpoints = [EngineBrokerEndpoint(address: address, transport: transport)]
        let configuration = EngineConfiguration(fleets: [fleet], brokers: [], lanes: 1, readyTimeout: 2_000_000_000,
                                                drainTimeout: 200_000_000)
        let result = try Engine(configuration: configuration).run(duration: 100_000_000)
        #expect(result.counters.connectsAttempted == 2)
        if layers == .tls {
            #expect(result.counters.connectFailures[.tlsHandshakeFailed] == 2)
            #expect(result.counters.transportErrors == ["TLS handshake timeout": 2])
        } else {
            #expect(result.counters.connectFailures[.websocketUpgradeFailed] == 2)
            #expect(result.counters.transportErrors == ["WebSocket upgrade timeout": 2])
        }
    }

    @Test("the CONNACK deadline counts from CONNECT sent: a slow WebSocket upgrade within the connect timeout does not eat it")
    func connAckDeadlineFromConnectSent() throws {
        let peer = try HostileTransportPeer(mode: .slowUpgrade(microseconds: 800_000), bytes: [])
        defer { peer.stop() }
        var fleet = EngineFleet(
            name: "cars", count: 1, clientID: { "car-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30, timeouts: MQTTAckTimeouts(connAck: 600_000_000)))
        fleet.connectTimeout = 5_000_000_000
        fleet.endpoints = [EngineBrokerEndpoint(address: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port),
                                                transport: .webSocket(EngineWebSocket(host: "127.0.0.1")))]
        let configuration = EngineConfiguration(fleets: [fleet], brokers: [], lanes: 1, readyTimeout: 4_000_000_000,
                                                drainTimeout: 200_000_000)
        let result = try Engine(configuration: configuration).run(duration: 100_000_000)
        // The upgrade took 800 ms, more than the CONNACK deadline (600 ms) but within the connect timeout: the
        // client got to send CONNECT, and only then waited 600 ms for a CONNACK that never came.
        #expect(result.counters.connectsAttempted == 1)
        #expect(result.counters.connectFailures[.websocketUpgradeFailed] == nil)
        #expect(result.counters.connectFailures[.connackTimeout] == 1)
        #expect(result.counters.ackTimeouts.connack == 1)
    }
}
