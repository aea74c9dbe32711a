import FleetTransport

/// How a fleet's clients reach their broker: plain TCP, or TLS and/or WebSocket layered on it.
public enum EngineTransport: Sendable {
    case tcp
    case tls(EngineTLS)
    case webSocket(EngineWebSocket)
    /// WebSocket over TLS (wss).
    case secureWebSocket(EngineTLS, EngineWebSocket)

    var tls: EngineTLS? {
        switch self {
        case .tls(let tls), .secureWebSocket(let tls, _): return tls
        case .tcp, .webSocket: return nil
        }
    }

    var webSocket: EngineWebSocket? {
        switch self {
        case .webSocket(let ws), .secureWebSocket(_, let ws): return ws
        case .tcp, .tls: return nil
        }
    }

    /// The URL scheme, for reports ("mqtt", "mqtts", "ws", "wss").
    public var scheme: String {
        switch self {
        case .tcp: return "mqtt"
        case .tls: return "mqtts"
        case .webSocket: return "ws"
        case .secureWebSocket: return "wss"
        }
    }
}

/// TLS settings of an endpoint: one shared context (CA store, fleet certificate, ALPN) and the name the
/// broker's certificate must carry (also sent as SNI when it is a host name).
public struct EngineTLS: Sendable {
    public var context: TLSClientContext
    public var serverName: String
    /// Per-client certificate (e.g. from `certs/{client_id}.pem`); nil: the context's fleet certificate, if any.
    public var clientCertificate: (@Sendable (_ index: Int, _ clientID: String) -> TLSClientCertificate?)?
    /// Per-client identity held in memory (minted at start, `tls.mint`), by the client's index in its fleet;
    /// takes precedence over `clientCertificate`.
    public var clientIdentities: [TLSClientIdentity] = []

    public init(context: TLSClientContext, serverName: String,
                clientCertificate: (@Sendable (Int, String) -> TLSClientCertificate?)? = nil) {
        self.context = context
        self.serverName = serverName
        self.clientCertificate = clientCertificate
    }
}

/// The HTTP/1.1 upgrade of an endpoint (RFC 6455 §4.1).
public struct EngineWebSocket: Sendable {
    /// Host header value (the broker's host name or address).
    public var host: String
    public var path: String
    /// Sec-WebSocket-Protocol values: "mqtt" (3.1.1 and 5.0), "mqttv3.1" for 3.1.
    public var subprotocols: [String]
    public var headers: [WebSocketHeader]
    /// Server frames longer than this close the client.
    public var maximumFrameLength: UInt64

    public init(host: String, path: String = "/mqtt", subprotocols: [String] = ["mqtt"],
                headers: [WebSocketHeader] = [], maximumFrameLength: UInt64 = 1 << 20) {
        self.host = host
        self.path = path
        self.subprotocols = subprotocols
        self.headers = headers
        self.maximumFrameLength = maximumFrameLength
    }
}

public struct WebSocketHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// One broker endpoint: where to connect and through which layers.
public struct EngineBrokerEndpoint: Sendable {
    public var address: SocketAddress
    public var transport: EngineTransport

    public init(address: SocketAddress, transport: EngineTransport = .tcp) {
        self.address = address
        self.transport = transport
    }
}

/// An endpoint's layers as the lane uses them, shared by every client of the endpoint (immutable).
final class TransportEndpoint: Sendable {
    let tls: EngineTLS?
    let webSocket: EngineWebSocket?
    let port: UInt16

    init(_ endpoint: EngineBrokerEndpoint) {
        tls = endpoint.transport.tls
        webSocket = endpoint.transport.webSocket
        port = endpoint.address.port
    }
}

/// A TLS or WebSocket client's layer state while it has a connection; allocated at connect, dropped at close,
/// so plain-TCP and idle disconnected clients pay only a nil reference.
final class ClientTransport {
    enum Stage: UInt8 {
        case tlsHandshake
        case webSocketUpgrade
        case open
    }

    var stage: Stage
    let tls: TLSConnection?
    var upgrade: WebSocketUpgradeResponseParser?
    var webSocket: WebSocketClientFraming?
    var stageStartedAt: UInt64
    /// MQTT bytes of the current turn, framed and encrypted at flush.
    let plaintext = OutboundBuffer(initialCapacity: 1024)
    /// WebSocket frames (and control replies) waiting to be encrypted, when TLS is below WebSocket.
    let frames = OutboundBuffer(initialCapacity: 1024)

    init(stage: Stage, tls: TLSConnection?, startedAt: UInt64) {
        self.stage = stage
        self.tls = tls
        self.stageStartedAt = startedAt
    }
}
