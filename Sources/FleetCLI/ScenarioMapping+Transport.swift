import FleetEngine
import FleetScenario
import FleetTransport

/// A broker the run connects to: its resolved address and the scenario's transport settings (or the embedded
/// mosquitto's listener with its throwaway CA).
struct RunBroker: Sendable {
    /// As the report shows it (credentials redacted).
    var url: String
    var transport: BrokerTransport
    var host: String
    var address: SocketAddress
    var caFile: String?
    var insecureSkipVerify = false
    var clientCertificate: NamePattern?
    var clientKey: NamePattern?
    var alpn: [String] = []
    /// SNI and the name the broker's certificate must carry; nil: `host`.
    var serverName: String?
    var webSocketPath = "/mqtt"
    var subprotocol = "mqtt"
    var headers: [WebSocketHeader] = []

    init(url: String, transport: BrokerTransport, host: String, address: SocketAddress) {
        self.url = url
        self.transport = transport
        self.host = host
        self.address = address
    }

    init(_ endpoint: BrokerEndpoint, url: String, address: SocketAddress) {
        self.init(url: url, transport: endpoint.transport, host: endpoint.host, address: address)
        if let tls = endpoint.tls {
            caFile = tls.caFile
            insecureSkipVerify = tls.insecureSkipVerify
            clientCertificate = tls.clientCertificate
            clientKey = tls.clientKey
            alpn = tls.alpn
            serverName = tls.serverName
        }
        if let webSocket = endpoint.webSocket {
            webSocketPath = webSocket.path
            subprotocol = webSocket.subprotocol
            headers = webSocket.headers.map { WebSocketHeader(name: $0.name, value: $0.value) }
        }
    }

    /// The report's line for this broker: says when certificate verification was skipped.
    var reportedURL: String {
        transport.usesTLS && insecureSkipVerify ? url + " (certificate verification skipped)" : url
    }
}

extension ScenarioMapping {
    /// The endpoints of one fleet: the brokers of its `transport`, or every broker when it names none (with the
    /// embedded broker: its plain listener). One TLS context per (fleet, broker), sharing CA store and ALPN.
    static func endpoints(for fleet: Fleet, brokers: [RunBroker], embedded: Bool) throws -> [EngineBrokerEndpoint] {
        let chosen = brokers.filter { broker in
            if let wanted = fleet.transport { return broker.transport == wanted }
            return !embedded || broker.transport == .tcp
        }
        guard !chosen.isEmpty else {
            throw UnsupportedFeature(description: "fleet \(fleet.name): no broker with a \((fleet.transport ?? .tcp).rawValue):// URL")
        }
        return try chosen.map { broker in
            EngineBrokerEndpoint(address: broker.address, transport: try transport(for: fleet, broker: broker))
        }
    }

    static func transport(for fleet: Fleet, broker: RunBroker) throws -> EngineTransport {
        // Frames are streamed, never buffered, so the limit guards nothing the MQTT decoder does not: allow the
        // largest MQTT packet (MQTT 5.0 §1.5.5: remaining length up to 268,435,455, plus 5 header bytes).
        let webSocket = EngineWebSocket(host: broker.host, path: broker.webSocketPath, subprotocols: [broker.subprotocol],
                                        headers: broker.headers, maximumFrameLength: 268_435_460)
        guard broker.transport.usesTLS else {
            return broker.transport == .webSocket ? .webSocket(webSocket) : .tcp
        }
        // The fleet's certificate takes precedence over the broker's.
        let certificatePattern = fleet.clientCertificate ?? broker.clientCertificate
        let keyPattern = fleet.clientCertificate != nil ? fleet.clientKey : broker.clientKey
        var fleetCertificate: TLSClientCertificate?
        var perClient: (@Sendable (Int, String) -> TLSClientCertificate?)?
        if let certificatePattern, let keyPattern {
            if certificatePattern.placeholders.isEmpty && keyPattern.placeholders.isEmpty {
                fleetCertificate = TLSClientCertificate(certificateFile: certificatePattern.render(),
                                                        privateKeyFile: keyPattern.render())
            } else {
                let name = fleet.name
                perClient = { index, clientID in
                    TLSClientCertificate(
                        certificateFile: certificatePattern.render(clientID: clientID, index: index, fleet: name),
                        privateKeyFile: keyPattern.render(clientID: clientID, index: index, fleet: name))
                }
            }
        }
        let context: TLSClientContext
        do {
            context = try TLSClientContext(configuration: TLSClientConfiguration(
                caFile: broker.caFile, insecureSkipVerify: broker.insecureSkipVerify, clientCertificate: fleetCertificate,
                alpnProtocols: broker.alpn))
        } catch {
            throw UnsupportedFeature(description: "broker \(broker.url), fleet \(fleet.name): \(error)")
        }
        var tls = EngineTLS(context: context, serverName: broker.serverName ?? broker.host, clientCertificate: perClient)
        if let mint = fleet.mint { tls.clientIdentities = try mintedIdentities(fleet, mint) }
        return broker.transport == .tls ? .tls(tls) : .secureWebSocket(tls, webSocket)
    }
}
