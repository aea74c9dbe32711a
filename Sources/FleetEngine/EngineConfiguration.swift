import FleetVehicle
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession

/// What a stream's messages carry.
public enum EnginePayload: Sendable {
    /// `size` bytes: the 40-byte binary end-to-end header (run id and actual send time included), zeros after;
    /// sizes below 40 are raised to 40.
    case binary(size: Int)
    /// This text, byte for byte, with no end-to-end header (an app's fixed "online" notice, for example).
    /// Subscribers count these messages as received but foreign: no latency, no loss accounting.
    case text(String)
    /// A template rendered per message. A template that starts with a JSON object carries the text header as
    /// its first member, so the JSON stays valid; any other template gets the 40-byte binary header in front of
    /// the rendered text. Both carry the run id and the actual send time.
    case template(PayloadTemplate)
}

/// The requester side of request/response.
///
/// MQTT 5.0: each request carries a Response Topic (`replyTopic` of the requester, §3.3.2.3.5) and Correlation
/// Data (§3.3.2.3.6); the responder publishes its reply there and echoes the Correlation Data. MQTT 3.1.1 has
/// neither, so responders publish to their fleet's `EngineResponder.replyTopic` and `replyTopic` here is the
/// filter that catches those replies (it may hold wildcards then). Either way the requester subscribes to
/// `replyTopic` itself, and the reply's payload echoes the request's, end-to-end header included: that header
/// (stream id, sequence, intended time) correlates the reply and gives the round trip from the intended time.
/// Request streams have no delivery accounting (each responder gets only some of a stream's messages).
public struct EngineRequest: Sendable {
    public enum TargetSelection: Sendable, Equatable {
        /// Requester i's message k goes to target (i + k) mod n: every target in turn, requesters staggered.
        case roundRobin
        /// A uniformly random target per message, from the requester's seeded generator.
        case random
    }

    /// The responder fleet's name.
    public var targetFleet: String
    public var selection: TargetSelection
    /// Where requester `index` (with its client id) receives replies; see the type's description.
    public var replyTopic: @Sendable (_ index: Int, _ clientID: String) -> String
    /// A reply later than this (ns, from the request's intended time) counts as timed out, as does a request
    /// that got no reply by the end of the run. 0: only missing replies count.
    public var timeout: UInt64

    public init(targetFleet: String, selection: TargetSelection = .roundRobin, timeout: UInt64 = 0,
                replyTopic: @escaping @Sendable (Int, String) -> String) {
        self.targetFleet = targetFleet
        self.selection = selection
        self.timeout = timeout
        self.replyTopic = replyTopic
    }
}

/// The responder side: every client of the fleet answers each message on its command topic by publishing the
/// same payload back (5.0: to the request's Response Topic with its Correlation Data; otherwise, or when the
/// request has no Response Topic, to `replyTopic`; with neither the request is counted as unanswered).
public struct EngineResponder: Sendable {
    /// Command topic of client `index`, subscribed automatically at `qos`.
    public var commandTopic: @Sendable (_ index: Int, _ clientID: String) -> String
    /// Reply topic of client `index` for requests without a Response Topic (all 3.1.1 requests).
    public var replyTopic: (@Sendable (_ index: Int, _ clientID: String) -> String)?
    /// QoS of the command subscription and of the replies.
    public var qos: MQTTQoS

    public init(commandTopic: @escaping @Sendable (Int, String) -> String,
                replyTopic: (@Sendable (Int, String) -> String)? = nil, qos: MQTTQoS = .atLeastOnce) {
        self.commandTopic = commandTopic
        self.replyTopic = replyTopic
        self.qos = qos
    }
}

/// One publishing stream of every client of a fleet: what to send, how often, at which QoS.
public struct EngineStream: Sendable {
    /// Topic of client `index` (0-based within its fleet) with client id `clientID`.
    public var topic: @Sendable (_ index: Int, _ clientID: String) -> String
    public var qos: MQTTQoS
    public var retain: Bool
    /// `.onConnect` sends one message on every connection (first connect and each reconnect).
    public var plan: PublishPlan
    public var behind: BehindPolicy
    public var payload: EnginePayload
    /// Stop after this many messages per client (nil: until the run ends). For `.onConnect`: per connection.
    public var messageLimit: UInt64?
    /// Makes this a request stream: each message goes to one client of a responder fleet, on that client's
    /// command topic (`topic` is then unused), and its reply's round trip is measured.
    public var request: EngineRequest?
    /// Store-and-forward while the client is offline (nil: what came due while offline follows `behind`).
    public var offline: OfflineBuffer? = nil

    /// Payload size in bytes of a `.binary` payload (0 for the other kinds); setting it makes the payload
    /// binary. Every binary payload starts with the end-to-end header (24 bytes) and, from 32 bytes on, the
    /// actual send time, so subscribers measure latency from both the intended and the actual send.
    public var payloadSize: Int {
        get {
            if case .binary(let size) = payload { return size }
            return 0
        }
        set { payload = .binary(size: max(newValue, EndToEndHeader.binarySize)) }
    }

    public init(topic: @escaping @Sendable (Int, String) -> String, qos: MQTTQoS, retain: Bool = false,
                plan: PublishPlan, behind: BehindPolicy = .catchUp, payloadSize: Int = 64,
                messageLimit: UInt64? = nil) {
        self.init(topic: topic, qos: qos, retain: retain, plan: plan, behind: behind,
                  payload: .binary(size: payloadSize), messageLimit: messageLimit)
    }

    public init(topic: @escaping @Sendable (Int, String) -> String, qos: MQTTQoS, retain: Bool = false,
                plan: PublishPlan, behind: BehindPolicy = .catchUp, payload: EnginePayload,
                messageLimit: UInt64? = nil) {
        self.topic = topic
        self.qos = qos
        self.retain = retain
        self.plan = plan
        self.behind = behind
        if case .binary(let size) = payload {
            self.payload = .binary(size: max(size, EndToEndHeader.binarySize))
        } else {
            self.payload = payload
        }
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
    /// How long TCP connect, TLS handshake and WebSocket upgrade together may take (ns); the CONNACK deadline
    /// (`session.timeouts.connAck`) then counts from CONNECT sent.
    public var connectTimeout: UInt64 = 12_000_000_000
    /// The fleet's first connects begin this long (ns) after the run starts.
    public var startOffset: UInt64 = 0
    /// Makes every client of the fleet answer requests on its command topic.
    public var responder: EngineResponder?
    /// Per-client session settings, for what differs by client (a will topic with the client id): when set it
    /// replaces `session` for each client. Costs one settings object per client, so leave nil when not needed.
    public var sessionSettings: (@Sendable (_ index: Int, _ clientID: String) -> MQTTSessionSettings)?
    /// How the fleet's first connects are spread (nil: all at once, paced only by `connectRate` and
    /// `maxConnectsInFlight`). Reconnects are not ramped.
    public var ramp: ConnectRamp?
    /// Where the fleet's clients connect, round-robin, with their transport (TLS, WebSocket). Empty: the run's
    /// `EngineConfiguration.brokers` over plain TCP.
    public var endpoints: [EngineBrokerEndpoint] = []
    /// Simulated vehicles behind `{vehicle.*}` (client k drives vehicle k of the run's global numbering); their
    /// tunnels cut the link while a vehicle is inside (`Lane+Vehicle`).
    public var vehicle: VehicleModel? = nil
    /// Network conditions emulated for the fleet's clients (`Lane+Network`), each profile for its `fraction`
    /// of them (`EngineNetworkProfile.assignment`: by index within the fleet, so segments agree); fractions add
    /// up to at most 1, the rest has none. Empty: none, and no cost on any message path.
    public var networks: [EngineNetworkProfile] = []
    /// The fleet's only profile (the first of several); setting it replaces `networks`.
    public var network: EngineNetworkProfile? {
        get { networks.first }
        set { networks = newValue.map { [$0] } ?? [] }
    }

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

/// A configuration the engine cannot run.
public struct EngineConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    /// The fleet the problem belongs to, when it is one fleet's (for locating it in a scenario file).
    public var fleet: String? = nil
    public var description: String { message }
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
    /// Connects (TCP connect to CONNACK) in flight at once to one broker address, over every fleet, lane and
    /// segment of the run: keep it under the broker's listen backlog (mosquitto 2.0 listens with 100). Each lane
    /// holds a share (`Engine.connectWindowShare`) and halves it while connects need retransmissions
    /// (`ConnectWindow`). Applies on top of each fleet's `maxConnectsInFlight`.
    public var maxConnectsInFlightPerBroker: Int = 64
    /// Broker endpoints, spread over clients round-robin.
    public var brokers: [SocketAddress]
    /// Local source addresses (port 0), spread over clients round-robin; empty: the kernel chooses.
    public var sourceAddresses: [SocketAddress]
    /// Lanes (serial queues); 0: one per core, one fewer when the broker is on this machine
    /// (`Engine.defaultLaneCount`).
    public var lanes: Int
    public var seed: UInt64
    /// Timing wheel resolution; 0: chosen by the engine (`Engine.defaultTickNanoseconds`). Messages leave at
    /// the tick after their intended time, so the tick is most of the schedule lag of a lightly loaded lane.
    public var tickNanoseconds: UInt64
    /// Publishing starts once every client is connected and subscribed, or this long after the plan's last first
    /// connect was due (`Engine.plannedConnectSpan`: ramps, connect rates, start offsets).
    public var readyTimeout: UInt64
    /// After publishing ends, how long at most to wait for acks and deliveries still outstanding (the run goes on
    /// as soon as nothing is). 15 s by default, the default ack timeout: a message sent at the last moment
    /// gets its whole deadline. What is still awaited then is `EngineResult.unackedAtEnd`.
    public var drainTimeout: UInt64
    /// True: publishing starts for everyone at once when every client is ready (or `readyTimeout` passed), so
    /// subscribers never miss the start of a stream. False: each client starts its streams as soon as it is
    /// connected, and `run(duration:)` counts from the run's start (for ramps and timelines).
    public var waitForReady = true
    /// Whether the result keeps each second's latency histograms (`EngineResult.intervals` and the timeline's
    /// `latency`). Off for long runs whose per-second histograms are written out from `Engine.onSnapshot`.
    public var keepsIntervalLatencies = true
    /// Whether the result keeps the once-a-second snapshots (`EngineResult.timeline`). Off for long runs that
    /// stream each snapshot from `Engine.onSnapshot` to a file: the engine's memory then stays bounded however
    /// long the run (with `keepsIntervalLatencies` off too).
    public var keepsTimeline = true
    /// Whether each client's session keeps its own counters (`MQTTClientSession.statistics`). The engine counts
    /// every event in its lane totals and never reads them: off, 80 bytes less per client (88 inline, 8 for the empty storage). Tests that look at a
    /// single client's counts turn it on.
    public var keepsSessionStatistics = false
    /// How lanes wait for readiness (see `LaneDriver`).
    public var laneDriver = LaneDriver.thread
    /// While a lane receives 64,000 messages a second or more, it waits until this long after a turn began
    /// before it looks for more (0: never waits). Reading a heavy stream as it arrives costs a wakeup, a read
    /// and a TCP ACK every few messages, for the tool and the broker alike; pausing cuts both sides' CPU per
    /// message several-fold and raises throughput (figures in docs/performance.md). The price: under that load a
    /// receive time (end-to-end latency) may be up to this late, and timers may fire up to this late (it shows as
    /// schedule lag). Reports state it (`generator.receive_coalescing_us`). Lighter traffic is read at once.
    /// `.thread` driver only.
    public var receiveCoalescing: UInt64 = 1_000_000
    /// While a lane receives a steady stream of 4,000 messages a second or more (measured over 10 ms) that is not
    /// heavy enough for `receiveCoalescing` (each message then tends to wake its own turn: a fleet of vehicles each
    /// getting a command now and then), it waits until this long after a turn that received began before it looks
    /// for more, so one wakeup reads what arrived meanwhile (0: never waits). The wait ends at the lane's next
    /// timer at the latest, so publishers on the lane keep their schedule. Capped at `receiveCoalescing` (0 there
    /// turns this off too), which stays the bound on how late a receive time may be. `.thread` driver only.
    public var receiveBatching: UInt64 = 500_000
    /// How a connection whose acks batching fell back (`AckBatchingMachine.probeFired`) tries it again.
    public var ackBatchingRetry = AckBatchingRetry()
    /// Each lane hands its end-of-turn writes to the kernel in one io_uring submission (`SendRing`) when the
    /// kernel allows it; otherwise, or when false, one send(2) per connection. `EngineResult.sendPath` tells which.
    public var batchedSends = true
    /// Each lane reads its plain TCP connections with multishot io_uring receives into a ring of provided buffers,
    /// its thread waiting in io_uring_enter instead of epoll_wait (`.thread` driver only; TLS and WebSocket
    /// connections are still read with recv(2) after epoll). Falls back to epoll when the kernel has no io_uring,
    /// forbids it or is older than 6.0. `EngineResult.receivePath` tells which. The default comes from
    /// FLEETBENCH_RECEIVE_PATH (io_uring or epoll), else epoll.
    public var ringReceives = ReceivePath.environmentDefault ?? false
    /// With ring receives: the ring is set up with deferred task work (DEFER_TASKRUN and SINGLE_ISSUER, Linux 6.1 and
    /// later), owned by the lane's driver thread, so a batch of receives wakes it once instead of once per receive
    /// (docs/performance.md, "io_uring receives with deferred task work"). On by default; a kernel without it, or
    /// false, sets the ring up with COOP_TASKRUN instead. FLEETBENCH_RING_DEFER=1 or 0 sets the default.
    public var ringDeferredTaskRun = ReceivePath.deferredEnvironmentDefault ?? true
    /// Tests: every emulated link keeps a list of its cuts (`NetworkLink.events`), to compare runs per client.
    var recordsNetworkEvents = false
    /// With ring receives: after a turn that received, the lane's next wait, once a completion is ready, waits up
    /// to this long in all (ns) for more, so receives arriving close together share a turn (the kernel's
    /// min_wait_usec, Linux 6.12 and later; 0: every completion wakes the lane at once). The price: a receive time,
    /// and a timer due meanwhile, may be up to this late. Turns that received nothing wait as before.
    public var receiveBatchWait: UInt64 = 250_000
    /// The run's id, written into every end-to-end header: subscribers count only messages that carry it, so
    /// another run on the same broker (or a message it retained) is never taken for this run's. 0: the engine
    /// draws a random one (`Engine.runID` tells which). Every process of one run must use the same id.
    public var runID: UInt64 = 0
    /// Deterministic segments (`fleetbench run --segment K/N`): this process runs the clients whose global
    /// index i has i mod `segmentCount` == `segmentIndex` (striped: every fleet and broker shares out evenly).
    /// Client ids, topics, stream ids and every per-client random choice depend on the global index only, so
    /// the N segments together send exactly the traffic of one unsegmented run. 0 of 1: everything.
    public var segmentIndex = 0
    public var segmentCount = 1
    /// With segments: publishing starts no earlier than this long after the run's start (the segments' common
    /// start), so every segment's subscribers are subscribed before any segment publishes. A subscriber whose
    /// SUBACK comes later, or whose link is cut before the end, is entitled to other segments' streams only
    /// partly, and those pairs are counted as `SegmentDelivery.unverifiedPairs` (their loss cannot be known).
    public var publishNotBefore: UInt64 = 0

    /// True for a segmented run (more than one segment).
    public var isSegmented: Bool { segmentCount > 1 }

    /// Whether global client `global` belongs to this segment.
    public func inSegment(_ global: Int) -> Bool { global % max(segmentCount, 1) == segmentIndex }

    /// Every broker address clients may connect to: `brokers` and each fleet's own endpoints.
    var allBrokerAddresses: [SocketAddress] { brokers + fleets.flatMap { $0.endpoints.map(\.address) } }

    public init(fleets: [EngineFleet], brokers: [SocketAddress], sourceAddresses: [SocketAddress] = [],
                lanes: Int = 0, seed: UInt64 = 1, tickNanoseconds: UInt64 = 0,
                readyTimeout: UInt64 = 30_000_000_000, drainTimeout: UInt64 = 15_000_000_000) {
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

/// Retrying the batching of acks by SO_RCVLOWAT after a connection fell back from it (`AckBatchingMachine`).
///
/// A fallback is evidence, not proof, that the broker holds acks back: a busy broker on a loaded machine stalls
/// now and then too, and a connection that then stayed unbatched for the rest of the run paid a wakeup and a
/// recv per ack to the end. So the batching is re-armed after `first` window refills (in the fallback every ack
/// refills its slot: about one per ack), doubled at every fallback up to `limit`. A re-armed connection is on
/// probation: one round with acks found waiting below the mark at a probe falls back again; `probationRounds` rounds in a row without a stall end the
/// probation and the next fallback waits `first` again. Counted in refills, not time, so a retry costs the
/// same share of a connection's acks whatever the rate. Against a broker that really holds acks back (Nagle's
/// algorithm on), each retry costs one stalled round (5-10 ms of probes) per `limit` refills at most.
///
/// Which stalls count: after a probe read the connection acknowledges at once (TCP_QUICKACK) and looks at its
/// receive queue again (FIONREAD). A broker with Nagle's algorithm on sends the acks it held as soon as that
/// acknowledgement reaches it, which on loopback is before the ioctl returns: bytes there show the broker holds
/// acks back, and such stalls fall back after 3 rounds in a row (at once on probation). A stall after which
/// nothing came is a broker that was only slow (a loaded machine): it costs one read at a probe, and only
/// `unshownStallLimit` such rounds in a row fall back (a remote broker's held acks come a round trip later and
/// never show at once; this still catches it). Held acks that showed after 2 acks or more had come (off
/// probation) are the broker's congestion window, not Nagle's algorithm: they cap the mark, and the stall does not
/// count (`AckBatchingMachine.capAcks`).
public struct AckBatchingRetry: Sendable, Equatable {
    public var first: UInt32
    public var limit: UInt32
    public var probationRounds: UInt8
    /// Stalled rounds in a row after which a connection falls back when no held acks showed after its probe reads.
    public var unshownStallLimit: UInt8
    /// False: every stall counts as held acks shown (the engine before held acks were looked for; tests of the
    /// counting whose fake broker withholds acks in user space, where no acknowledgement releases them).
    public var looksForHeldAcks: Bool

    public init(first: UInt32 = 256, limit: UInt32 = 65_536, probationRounds: UInt8 = 4,
                unshownStallLimit: UInt8 = 8, looksForHeldAcks: Bool = true) {
        self.first = max(1, first)
        self.limit = max(self.first, limit)
        self.probationRounds = max(1, probationRounds)
        self.unshownStallLimit = max(1, unshownStallLimit)
        self.looksForHeldAcks = looksForHeldAcks
    }
}
