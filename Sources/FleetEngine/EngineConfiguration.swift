import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession

/// One publishing stream of every client of a fleet: what to send, how often, at which QoS.
public struct EngineStream: Sendable {
    /// Topic of client `index` (0-based within its fleet) with client id `clientID`.
    public var topic: @Sendable (_ index: Int, _ clientID: String) -> String
    public var qos: MQTTQoS
    public var retain: Bool
    public var plan: PublishPlan
    public var behind: BehindPolicy
    /// Payload size in bytes. Every payload starts with the end-to-end header (24 bytes) and, from 32 bytes
    /// on, the actual send time, so subscribers measure latency from both the intended and the actual send.
    public var payloadSize: Int
    /// Stop after this many messages per client (nil: until the run ends).
    public var messageLimit: UInt64?

    public init(topic: @escaping @Sendable (Int, String) -> String, qos: MQTTQoS, retain: Bool = false,
                plan: PublishPlan, behind: BehindPolicy = .catchUp, payloadSize: Int = 64,
                messageLimit: UInt64? = nil) {
        self.topic = topic
        self.qos = qos
        self.retain = retain
        self.plan = plan
        self.behind = behind
        self.payloadSize = max(payloadSize, EndToEndHeader.binarySize)
        self.messageLimit = messageLimit
    }
}

/// A group of identical simulated clients.
public struct EngineFleet: Sendable {
    public var name: String
    public var count: Int
    /// Client id of client `index` (0-based within the fleet).
    public var clientID: @Sendable (_ index: Int) -> String
    /// Session settings shared by every client of the fleet (version, clean start, keepalive, will, timeouts).
    public var session: MQTTSessionSettings
    /// Topic filters client `index` subscribes to right after CONNACK.
    public var subscriptions: @Sendable (_ index: Int, _ clientID: String) -> [MQTTSubscription]
    public var streams: [EngineStream]
    public var reconnect: ReconnectPolicy
    /// Connects per second for this fleet (nil: as fast as the in-flight cap allows).
    public var connectRate: Double?
    /// Connects (TCP connect to CONNACK) in flight at once for this fleet.
    public var maxConnectsInFlight: Int
    /// The fleet's first connects begin this long (ns) after the run starts.
    public var startOffset: UInt64 = 0
    /// How the fleet's first connects are spread (nil: all at once, paced only by `connectRate` and
    /// `maxConnectsInFlight`). Reconnects are not ramped.
    public var ramp: ConnectRamp?

    public init(name: String, count: Int, clientID: @escaping @Sendable (Int) -> String,
                session: MQTTSessionSettings,
                subscriptions: @escaping @Sendable (Int, String) -> [MQTTSubscription] = { _, _ in [] },
                streams: [EngineStream] = [], reconnect: ReconnectPolicy = .none, connectRate: Double? = nil,
                maxConnectsInFlight: Int = 64) {
        self.name = name
        self.count = count
        self.clientID = clientID
        self.session = session
        self.subscriptions = subscriptions
        self.streams = streams
        self.reconnect = reconnect
        self.connectRate = connectRate
        self.maxConnectsInFlight = maxConnectsInFlight
    }
}

/// How a fleet's first connects are spread over time, from its start offset on.
public enum ConnectRamp: Sendable, Equatable {
    /// Client i of n starts connecting at i * duration / n ns (rate n / duration).
    case over(duration: UInt64)
    /// Client i starts connecting at i / perSecond seconds.
    case rate(perSecond: Double)

    public var validationError: String? {
        switch self {
        case .over: return nil
        case .rate(let perSecond):
            return perSecond > 0 && perSecond.isFinite ? nil : "ramp rate must be greater than 0, got \(perSecond)"
        }
    }
}

/// Everything a run needs.
public struct EngineConfiguration: Sendable {
    public var fleets: [EngineFleet]
    /// Broker endpoints, spread over clients round-robin.
    public var brokers: [SocketAddress]
    /// Local source addresses (port 0), spread over clients round-robin; empty: the kernel chooses.
    public var sourceAddresses: [SocketAddress]
    /// Lanes (serial queues); default one per core.
    public var lanes: Int
    public var seed: UInt64
    /// Timing wheel resolution. 1 ms keeps schedule lag well under the 2 ms p99 target.
    public var tickNanoseconds: UInt64
    /// Publishing starts once every client is connected and subscribed, or after this long.
    public var readyTimeout: UInt64
    /// After publishing ends, how long to wait for acks and deliveries still in flight.
    public var drainTimeout: UInt64
    /// True: publishing starts for everyone at once when every client is ready (or `readyTimeout` passed), so
    /// subscribers never miss the start of a stream. False: each client starts its streams as soon as it is
    /// connected, and `run(duration:)` counts from the run's start (for ramps and timelines).
    public var waitForReady = true

    public init(fleets: [EngineFleet], brokers: [SocketAddress], sourceAddresses: [SocketAddress] = [],
                lanes: Int = 0, seed: UInt64 = 1, tickNanoseconds: UInt64 = 1_000_000,
                readyTimeout: UInt64 = 30_000_000_000, drainTimeout: UInt64 = 5_000_000_000) {
        self.fleets = fleets
        self.brokers = brokers
        self.sourceAddresses = sourceAddresses
        self.lanes = lanes
        self.seed = seed
        self.tickNanoseconds = tickNanoseconds
        self.readyTimeout = readyTimeout
        self.drainTimeout = drainTimeout
    }
}
