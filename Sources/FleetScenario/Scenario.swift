import MQTTCodec

/// A decoded, validated scenario: who connects where, what they do, on which timeline, and what must hold.
/// Protocol version and QoS are the codec's own types (`MQTTProtocolVersion`, `MQTTQoS`): one vocabulary from the
/// scenario file to the wire, nothing to translate.
public struct Scenario: Equatable, Sendable {
    /// The scenario's name (`name` key, else the file name without `.json`).
    public var name: String
    /// One line saying what the scenario shows.
    public var description: String
    /// Broker endpoints; empty means fleetbench starts an embedded mosquitto.
    public var brokers: [BrokerEndpoint]
    public var fleets: [Fleet]
    public var stages: [Stage]
    public var thresholds: [Threshold]
    /// Total run time (the `duration` key, else the sum of the stages).
    public var duration: TimeSpan
    /// Seed for every random choice; nil lets the runner pick one and record it.
    public var seed: UInt64?
    /// The `drain` key: after publishing, how long at most to wait for acks and deliveries still outstanding;
    /// nil: `drainDuration`'s default.
    public var drain: TimeSpan? = nil
    /// The `ready_timeout` key: how long, after the plan's last first connect was due (start offsets, ramps,
    /// connect rates), publishing waits for clients still connecting or subscribing; nil: 30 s.
    public var readyTimeout: TimeSpan? = nil
    /// The `max_connects_in_flight_per_broker` key: connects (TCP connect to CONNACK) in flight at once to one broker
    /// address, over every fleet and segment of the run; keep it under the broker's listen backlog (mosquitto 2.0:
    /// 100). The engine halves it while connects need retransmissions (`ConnectWindow`).
    public var maxConnectsInFlightPerBroker: Int = Scenario.defaultMaxConnectsInFlightPerBroker
    public static let defaultMaxConnectsInFlightPerBroker = 64

    /// The ready timeout when the scenario gives none.
    public static let defaultReadyTimeout = TimeSpan(nanoseconds: 30_000_000_000)

    /// The ready timeout of a run: `ready_timeout`, or 30 s.
    public var readyTimeoutDuration: TimeSpan { readyTimeout ?? Self.defaultReadyTimeout }

    /// The end-of-run drain: `drain` when given, else the longest PUBACK/PUBREC/PUBCOMP timeout of the fleets
    /// (15 s by default), so a message sent at the last moment gets its whole deadline before it counts as
    /// unacknowledged at the end.
    public var drainDuration: TimeSpan {
        if let drain { return drain }
        let longest = fleets.map { max($0.ackTimeouts.puback, $0.ackTimeouts.pubrec, $0.ackTimeouts.pubcomp) }.max()
        return longest ?? AckTimeouts().puback
    }

    public var usesEmbeddedBroker: Bool { brokers.isEmpty }
}

extension MQTTProtocolVersion {
    /// The version as the scenario format spells it: "3.1", "3.1.1" or "5".
    public var scenarioName: String {
        switch self {
        case .v3_1: return "3.1"
        case .v3_1_1: return "3.1.1"
        case .v5: return "5"
        }
    }

    /// The version the scenario format's name stands for.
    public init?(scenarioName: String) {
        guard let version = Self.allCases.first(where: { $0.scenarioName == scenarioName }) else { return nil }
        self = version
    }
}

public enum BrokerTransport: String, Equatable, Hashable, Sendable, CaseIterable {
    case tcp = "mqtt"
    case tls = "mqtts"
    case webSocket = "ws"
    case secureWebSocket = "wss"

    public var usesTLS: Bool { self == .tls || self == .secureWebSocket }
    public var usesWebSocket: Bool { self == .webSocket || self == .secureWebSocket }
    public var defaultPort: Int {
        switch self {
        case .tcp: return 1883
        case .tls: return 8883
        case .webSocket: return 80
        case .secureWebSocket: return 443
        }
    }
}

public struct BrokerEndpoint: Equatable, Sendable {
    /// The URL as written.
    public var url: String
    public var transport: BrokerTransport
    public var host: String
    public var port: Int
    /// TLS settings for mqtts/wss (nil otherwise).
    public var tls: TLSOptions?
    /// WebSocket settings for ws/wss (nil otherwise).
    public var webSocket: WebSocketOptions?
}

public struct TLSOptions: Equatable, Sendable {
    /// CA bundle to verify the broker with; nil uses the system store.
    public var caFile: String?
    /// Skip certificate verification (reported as such).
    public var insecureSkipVerify: Bool = false
    /// Client certificate and key file patterns (`certs/{client_id}.pem`); a fleet's own take precedence.
    public var clientCertificate: NamePattern?
    public var clientKey: NamePattern?
    public var alpn: [String] = []
    /// SNI name; nil sends the URL's host when it is a name (not an IP literal).
    public var serverName: String?
}

public struct WebSocketOptions: Equatable, Sendable {
    /// Request path (from the URL; `/mqtt` when the URL has none).
    public var path: String
    /// `mqtt` (MQTT 3.1.1 and 5) or `mqttv3.1`.
    public var subprotocol: String = "mqtt"
    /// Extra HTTP headers for the upgrade request, in order.
    public var headers: [HTTPHeader] = []
}

public struct HTTPHeader: Equatable, Sendable {
    public var name: String
    public var value: String
}

/// A group of identical clients.
public struct Fleet: Equatable, Sendable {
    public var name: String
    public var count: Int
    /// Default `{fleet}-{i}`.
    public var clientID: NamePattern
    public var protocolVersion: MQTTProtocolVersion = .v3_1_1
    /// Restricts the fleet to brokers of this transport (with the embedded broker: which listener to use).
    public var transport: BrokerTransport?
    public var keepalive: TimeSpan = .seconds(60)
    /// MQTT 3.1.1 §3.1.2.4 Clean Session, MQTT 5.0 §3.1.2.4 Clean Start (`clean_session` or `clean_start`).
    public var cleanStart: Bool = true
    /// MQTT 5.0 §3.2.2.3.2 Session Expiry Interval; nil leaves it out (0: session ends with the connection).
    public var sessionExpiry: TimeSpan?
    public var will: Will?
    public var credentials: Credentials?
    /// Client certificate and key for TLS brokers (override the broker's).
    public var clientCertificate: NamePattern?
    public var clientKey: NamePattern?
    /// Local addresses to bind, spread round-robin (ranges like `127.0.0.2-127.0.0.9` expanded).
    public var sourceAddresses: [String] = []
    /// New connections per second; nil connects as fast as `maxConnectsInFlight` allows.
    public var connectRate: Double?
    public var maxConnectsInFlight: Int = 100
    public var reconnect: ReconnectPolicy = .none
    public var ackTimeouts: AckTimeouts = AckTimeouts()
    /// Unacknowledged outgoing QoS 1/2 messages per client (MQTT 5 Receive Maximum of the broker also applies).
    public var inflightWindow: Int = 32
    public var subscriptions: [Subscription] = []
    public var publishes: [PublishStream] = []
    public var requests: [RequestStream] = []
    public var responder: Responder?
    public var heartbeat: Heartbeat?
    /// Network conditions emulated for the fleet's vehicles: one profile, or several (`network` as an array),
    /// each for its `fraction` of the fleet (fractions add up to at most 1; the rest has none).
    public var networks: [NetworkConditions] = []
    /// The fleet's only profile (the first of several); setting it replaces `networks`.
    public var network: NetworkConditions? {
        get { networks.first }
        set { networks = newValue.map { [$0] } ?? [] }
    }
    /// Simulated vehicles behind `{vehicle.*}` (`vehicle`).
    public var vehicle: VehicleSetting?
    /// Client ids and credentials per client, by index (`identities`).
    public var identities: IdentityTable?
    /// Mint each client's TLS certificate at start from a test CA (`tls.mint`).
    public var mint: CertificateMinting?
}

/// `tls.mint`: EC P-256 client certificates minted at start, one per client, named by its client id.
public struct CertificateMinting: Equatable, Sendable {
    public var caCertificate: String
    public var caKey: String
}

public struct Will: Equatable, Sendable {
    public var topic: NamePattern
    public var payload: PayloadTemplate
    public var qos: MQTTQoS = .atMostOnce
    public var retain: Bool = false
    /// MQTT 5.0 §3.1.3.2.2 Will Delay Interval.
    public var delay: TimeSpan?
    public var properties: WillProperties = WillProperties()
}

/// MQTT 5.0 §3.1.3.2 will properties.
public struct WillProperties: Equatable, Sendable {
    public var contentType: String?
    public var messageExpiry: TimeSpan?
    public var payloadIsUTF8: Bool?
    public var responseTopic: String?
    public var userProperties: [HTTPHeader] = []
}

/// A user name and password. Values may hold `${ENV_VAR}`: the resolved text is used to connect, the redacted
/// text (variables unexpanded, a literal password masked) is what reports and messages show.
public struct Credentials: Equatable, Sendable {
    public var username: SecretText?
    public var password: SecretText?
}

public struct SecretText: Equatable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public var resolved: String
    public var redacted: String
    /// Never the resolved value, so string interpolation cannot leak it.
    public var description: String { redacted }
    public var debugDescription: String { redacted }
}

public enum ReconnectPolicy: Equatable, Sendable {
    /// A lost client stays down.
    case none
    /// `immediate` retries at once, then one every `interval` (a mobile app's "5 retries, then every 4 s").
    case immediateThenInterval(immediate: Int, interval: TimeSpan, maxAttempts: Int?)
    /// Wait uniform(0, min(cap, base * 2^attempt)) before each attempt ("full jitter").
    case exponential(base: TimeSpan, cap: TimeSpan, maxAttempts: Int?)
}

/// How long to wait for each awaited packet before counting a timeout of that kind.
public struct AckTimeouts: Equatable, Sendable {
    /// TCP connect plus TLS handshake and WebSocket upgrade.
    public var connect: TimeSpan = .seconds(12)
    public var connack: TimeSpan = .seconds(12)
    public var suback: TimeSpan = .seconds(15)
    public var unsuback: TimeSpan = .seconds(15)
    public var puback: TimeSpan = .seconds(15)
    public var pubrec: TimeSpan = .seconds(15)
    public var pubcomp: TimeSpan = .seconds(15)
    public var pingresp: TimeSpan = .seconds(15)

    public init() {}

    static let keys = ["connect", "connack", "suback", "unsuback", "puback", "pubrec", "pubcomp", "pingresp"]
}

public struct Subscription: Equatable, Sendable {
    /// A topic filter; placeholders expanded per client.
    public var filter: NamePattern
    public var qos: MQTTQoS = .atMostOnce
    /// MQTT 5.0 §3.8.3.1 subscription options.
    public var noLocal: Bool = false
    public var retainAsPublished: Bool = false
    public var retainHandling: Int = 0
}

public enum BehindSchedulePolicy: String, Equatable, Sendable {
    /// Send the missed messages as fast as possible (their latency still counts from the intended time).
    case catchUp = "catch_up"
    /// Skip missed slots and count them as dropped.
    case drop = "drop"
}

/// When a client publishes.
public enum PublishSchedule: Equatable, Sendable {
    /// Every `every`, each send shifted by uniform(-jitter, +jitter).
    case interval(every: TimeSpan, jitter: TimeSpan)
    /// A fixed rate per client per second.
    case rate(perSecond: Double)
    /// Poisson arrivals with this mean rate per client per second.
    case poisson(perSecond: Double)
    /// `count` messages back to back every `every`.
    case burst(count: Int, every: TimeSpan)
    /// `count` messages each time the client connects.
    case onConnect(count: Int)
    /// Closed model (`{"type": "max"}`): each client publishes as fast as its in-flight window (QoS 1/2) or its
    /// socket (QoS 0) allows. Latency counts from the actual send; there is no intended time and no schedule lag.
    case max

    /// Whether this is the closed-model `max` schedule.
    public var isClosedModel: Bool {
        if case .max = self { return true }
        return false
    }

    /// Mean messages per client per second (0 for on-connect and for `max`, which has no planned rate).
    public var messagesPerSecond: Double {
        switch self {
        case .interval(let every, _): return every.nanoseconds == 0 ? 0 : 1 / every.seconds
        case .rate(let perSecond), .poisson(let perSecond): return perSecond
        case .burst(let count, let every): return every.nanoseconds == 0 ? 0 : Double(count) / every.seconds
        case .onConnect, .max: return 0
        }
    }
}

public enum Payload: Equatable, Sendable {
    /// Text or JSON with generators.
    case template(PayloadTemplate)
    /// `size` bytes of filler (the end-to-end header counts towards it).
    case filler(size: Int)
}

public struct PublishStream: Equatable, Sendable {
    /// Unique within the scenario: the `name` key, else `<fleet>.publish[<index>]`.
    public var name: String
    public var topic: NamePattern
    public var qos: MQTTQoS = .atMostOnce
    public var retain: Bool = false
    public var schedule: PublishSchedule
    public var payload: Payload
    public var behindSchedule: BehindSchedulePolicy = .catchUp
    /// Stop after this many messages per client.
    public var limit: Int?
    /// Store and forward while the client is offline (`offline`); nil: the backlog follows `behindSchedule`.
    public var offline: OfflineBuffering?
}

/// Commands from this fleet to clients of another fleet, answered by that fleet's responder.
public struct RequestStream: Equatable, Sendable {
    public var name: String
    public var targetFleet: String
    /// Topic of the target client, e.g. `vehicles/{target_client_id}/cmd`.
    public var topic: NamePattern
    public var qos: MQTTQoS = .atLeastOnce
    public var schedule: PublishSchedule
    public var payload: Payload
    /// MQTT 5: the Response Topic property sent with each request (with Correlation Data); the requester
    /// subscribes to it. For 3.1.1: a filter matching the responder's `reply_topic`.
    public var responseTopic: NamePattern
    /// A request with no answer after this long counts as a request timeout.
    public var timeout: TimeSpan = .seconds(15)
}

/// How a fleet answers requests sent to it.
public struct Responder: Equatable, Sendable {
    /// The per-client request topic the client subscribes to, e.g. `vehicles/{client_id}/cmd`.
    public var topic: NamePattern
    public var qos: MQTTQoS = .atLeastOnce
    /// For MQTT 3.1.1 requesters (no Response Topic): where the answer is published.
    public var replyTopic: NamePattern?
    public var payload: Payload
}

/// An "I am online" message on a timer (an app telling its server the vehicle is online).
public struct Heartbeat: Equatable, Sendable {
    public var topic: NamePattern
    public var interval: TimeSpan
    public var qos: MQTTQoS = .atMostOnce
    public var retain: Bool = false
    public var payload: Payload
}

/// One step of the timeline. Stages run one after another.
public struct Stage: Equatable, Sendable {
    public var kind: StageKind
    /// How long the stage lasts.
    public var duration: TimeSpan
}

public enum StageKind: Equatable, Sendable {
    /// Connect a fleet (nil: all fleets not ramped elsewhere) over the stage's duration.
    case rampUp(fleet: String?, rate: Double?)
    case steady
    case soak
    /// A fraction of a fleet loses its connection abruptly (no DISCONNECT) at the start of the stage, each for an
    /// outage drawn uniformly from the range, then reconnects by its policy.
    case tunnel(fleet: String, fraction: Double, outage: ClosedRange<TimeSpan>)
    /// Clients of a fleet disconnect and reconnect at `rate` per second through the stage.
    case churn(fleet: String, rate: Double)
    /// The embedded broker is stopped and started again after `downtime`.
    case brokerRestart(downtime: TimeSpan)

    public var name: String {
        switch self {
        case .rampUp: return "ramp_up"
        case .steady: return "steady"
        case .soak: return "soak"
        case .tunnel: return "tunnel"
        case .churn: return "churn"
        case .brokerRestart: return "restart"
        }
    }
}
