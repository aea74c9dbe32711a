// How the embedded mosquitto is configured. The generated file is plain mosquitto.conf syntax (mosquitto 2.0).

/// A TLS listener's files. Only written into the configuration here; certificates are produced elsewhere (TLS issue).
public struct MosquittoTLSListener: Sendable, Equatable {
    public var caFile: String
    public var certificateFile: String
    public var keyFile: String
    /// Ask clients for a certificate signed by `caFile` and refuse those without one.
    public var requireClientCertificate: Bool
    /// Speak MQTT over WebSocket on this TLS listener (`wss://`) instead of plain MQTT (`mqtts://`).
    public var websockets: Bool

    public init(
        caFile: String, certificateFile: String, keyFile: String,
        requireClientCertificate: Bool = false, websockets: Bool = false
    ) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.requireClientCertificate = requireClientCertificate
        self.websockets = websockets
    }
}

public struct MosquittoConfiguration: Sendable, Equatable {
    /// Highest keepalive a client may ask for (mosquitto 2.0 `max_keepalive`, at most 65535).
    public var maxKeepAlive: Int = 65_535
    /// QoS 1/2 messages in flight per client (`max_inflight_messages`; 0 = unlimited; nil = not written, mosquitto's
    /// default of 20). Larger windows need it raised.
    public var maxInflightMessages: Int? = 0
    /// Messages queued per offline or slow client (`max_queued_messages`; 0 = unlimited; nil = not written,
    /// mosquitto's default of 1000). That default drops messages silently under load tests, which would read as
    /// loss in our accounting, so it is lifted unless a benchmark wants the broker exactly as shipped.
    public var maxQueuedMessages: Int? = 0
    /// `set_tcp_nodelay true`: mosquitto then sends each small packet at once instead of letting Nagle's algorithm
    /// hold it until the previous one is acknowledged. Off by default, as mosquitto ships: the tool is measured
    /// against the broker people run. Only what is explicitly about the tuned broker turns it on.
    public var tcpNoDelay: Bool = false
    /// Keep sessions on disk across restarts (`persistence`). Off: a restarted broker forgets everything.
    public var persistence: Bool = false
    /// Log every client connect and disconnect (`connection_messages`). Useful in tests; benchmarks connecting
    /// tens of thousands of clients may turn it off so the broker's own logging does not weigh on the figures.
    public var connectionMessages: Bool = true
    /// Add a `protocol websockets` listener on its own free port.
    public var websocketsListener: Bool = false
    /// Add a TLS listener on its own free port.
    public var tlsListener: MosquittoTLSListener? = nil
    /// A mosquitto_passwd file: clients must then log in (anonymous connections are refused).
    public var passwordFile: String? = nil
    /// Raw lines appended at the end, for settings not modelled here.
    public var extraLines: [String] = []
    /// How long to wait for the broker to accept TCP connections after start (seconds).
    public var startTimeout: Double = 5
    /// How long stop() waits after SIGTERM before SIGKILL (seconds).
    public var stopTimeout: Double = 5
    /// Where to look for the executable; nil means $PATH, then /usr/sbin and /usr/local/sbin.
    public var searchDirectories: [String]? = nil

    public init() {}

    /// mosquitto as shipped as far as speed goes: no `set_tcp_nodelay`, mosquitto's own in-flight and queue
    /// limits. Logging, persistence location and the listener are still written.
    public static var stock: MosquittoConfiguration {
        var configuration = MosquittoConfiguration()
        configuration.maxInflightMessages = nil
        configuration.maxQueuedMessages = nil
        return configuration
    }
}
