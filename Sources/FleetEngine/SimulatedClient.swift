import FleetTransport
import MQTTCodec
import MQTTSession
import FleetVehicle

/// Immutable per-fleet data shared by the fleet's clients on a lane.
final class FleetRuntime: @unchecked Sendable {
    let index: Int
    let configuration: EngineFleet
    /// Global id of stream 0 of client 0 of this fleet; client k's stream s is `firstStream + k * streams + s`.
    let firstStream: Int
    /// UTF-8 of each `.text` stream's payload (empty for the other kinds), one array shared by every client.
    let texts: [[UInt8]]
    /// Per stream index: whether it is a request stream (its replies come back to the requester).
    let isRequestStream: [Bool]
    let hasRequestStreams: Bool
    let requestTimeouts: [UInt64]
    /// Responder fleets: each client's command topic and 3.1.1 reply topic (empty arrays otherwise).
    let commandTopics: [MQTTTopicName]
    let replyTopics: [MQTTTopicName]
    /// The fleet's vehicle model (`EngineFleet.vehicle`): roads and settings shared by its clients' vehicles.
    let vehicleModel: VehicleModel?
    /// Per stream index: the schedule's part every client of the fleet shares (`PublishSchedule.shape`).
    let scheduleShapes: [PublishShape]
    /// Per stream index: its offline buffer (`EngineStream.offline`); empty when no stream of the fleet has one.
    let offlineBuffers: [OfflineBuffer?]
    var streamCount: Int { configuration.count * configuration.streams.count }

    /// Client `index`'s subscriptions as the engine makes them, in this order: its fleet's own
    /// (`EngineFleet.subscriptions`), a responder's command topic, a requester's reply filters. Made when the
    /// engine starts and again whenever the client subscribes, instead of kept by each client: a vehicle on its
    /// command topic kept 176 bytes for it (the filter, its array, the session's copy of the group).
    func subscriptions(of index: Int, clientID: String? = nil) -> [MQTTSubscription] {
        let clientID = clientID ?? configuration.clientID(index)
        var subscriptions = configuration.subscriptions(index, clientID)
        if let responder = configuration.responder {
            subscriptions.append(MQTTSubscription(filter: commandTopics[index].name, qos: responder.qos))
        }
        for stream in configuration.streams {
            if let target = stream.request {
                subscriptions.append(MQTTSubscription(filter: target.replyTopic(index, clientID), qos: stream.qos))
            }
        }
        return subscriptions
    }

    init(index: Int, configuration: EngineFleet, firstStream: Int) throws {
        self.index = index
        self.configuration = configuration
        self.firstStream = firstStream
        vehicleModel = configuration.vehicle
        texts = configuration.streams.map { stream in
            if case .text(let text) = stream.payload { return Array(text.utf8) }
            return []
        }
        isRequestStream = configuration.streams.map { $0.request != nil }
        scheduleShapes = configuration.streams.map { stream in
            PublishShape(plan: stream.plan, behind: stream.behind, maxPerTurn: 256, slotLimit: stream.messageLimit)
        }
        offlineBuffers = configuration.streams.contains { $0.offline != nil } ? configuration.streams.map(\.offline) : []
        requestTimeouts = configuration.streams.map { $0.request?.timeout ?? 0 }
        hasRequestStreams = isRequestStream.contains(true)
        if let responder = configuration.responder {
            var commands: [MQTTTopicName] = []
            var replies: [MQTTTopicName] = []
            commands.reserveCapacity(configuration.count)
            for client in 0..<configuration.count {
                let clientID = configuration.clientID(client)
                commands.append(try MQTTTopicName(responder.commandTopic(client, clientID)))
                if let replyTopic = responder.replyTopic { replies.append(try MQTTTopicName(replyTopic(client, clientID))) }
            }
            commandTopics = commands
            replyTopics = replies
        } else {
            commandTopics = []
            replyTopics = []
        }
    }
}

/// Where a client is in its connection's life.
enum ClientPhase: UInt8 {
    /// Not connected; a connect timer may be pending (first connect or reconnect delay).
    case idle
    /// TCP connect in progress.
    case connecting
    /// TLS handshake or WebSocket upgrade in progress (`ClientTransport.stage` says which).
    case handshaking
    /// CONNECT written, CONNACK awaited.
    case awaitingConnAck
    case connected
    /// Gave up (reconnect policy exhausted) or the run is over.
    case finished
}

/// A stream's payload as one client sends it (arrays shared with the fleet's configuration, not copied).
enum StreamPayload {
    case binary(size: Int)
    case text([UInt8])
    /// The template and the client id's bytes for `{client_id}`. Indirect: the template is several words, which
    /// every client's streams carried inline, templated or not.
    indirect case template(PayloadTemplate, clientID: [UInt8])
}

/// Where a request stream's messages go, and the 5.0 properties every request of the stream carries. A class:
/// 8 bytes in each stream instead of its fields inline in streams that make no requests.
final class RequestState {
    let targetFleet: Int
    let targetCount: Int
    let random: Bool
    /// Response Topic and Correlation Data (the stream id), encoded once; empty before 5.0.
    let properties: MQTTEncodedProperties

    init(targetFleet: Int, targetCount: Int, random: Bool, properties: MQTTEncodedProperties) {
        self.targetFleet = targetFleet
        self.targetCount = targetCount
        self.random = random
        self.properties = properties
    }
}

/// One publishing stream of one client. Fields in the order that packs them (Swift lays a struct out in
/// declaration order): 160 bytes instead of 232 with the schedule's shared part out of it.
struct StreamState {
    let topic: MQTTTopicName
    let payload: StreamPayload
    let streamID: UInt32
    /// The stream's slot in the run's `StreamProgress` (this segment's streams, numbered densely).
    let progressSlot: UInt32
    var schedule: PublishSchedule?
    /// Set for request streams.
    var request: RequestState?
    /// A message the in-flight window refused; sent first when the window opens.
    var pending: ScheduledSend?
    let qos: MQTTQoS
    let retain: Bool
    /// Closed-model plan (`PublishPlan.closed`): latency from the actual send, no lag, nothing owed at the end.
    var closed: Bool

    init(topic: MQTTTopicName, streamID: UInt32, progressSlot: UInt32, qos: MQTTQoS, retain: Bool,
         payload: StreamPayload, closed: Bool = false, schedule: PublishSchedule? = nil, pending: ScheduledSend? = nil,
         request: RequestState? = nil) {
        self.topic = topic
        self.payload = payload
        self.streamID = streamID
        self.progressSlot = progressSlot
        self.schedule = schedule
        self.request = request
        self.pending = pending
        self.qos = qos
        self.retain = retain
        self.closed = closed
    }
}

/// One simulated MQTT client, owned by its lane.
struct SimulatedClient {
    /// The fleet, the index in it and the index across every fleet of the run (used to key delivery accounting
    /// per subscriber), 32 bits each (`fleet`, `indexInFleet`, `globalIndex`); with the small fields after them,
    /// 16 bytes where three `Int`s and the small fields' padding took 40.
    let fleet32: Int32
    let indexInFleet32: Int32
    let globalIndex32: Int32
    var subscribePacketID: UInt16 = 0
    /// Segmented runs: false once the client's entitlement to other segments' streams stopped being the whole
    /// run (its SUBACK came after the segments' common publishing start, or its link was cut before the end).
    var remoteEntitlementWhole = true
    var fleet: Int { Int(fleet32) }
    var indexInFleet: Int { Int(indexInFleet32) }
    var globalIndex: Int { Int(globalIndex32) }
    /// What only some clients have (`ClientExtras`): nil for a plain-TCP client without a network profile,
    /// delivery routes or vehicle model. Made when the first of them is set.
    var extras: ClientExtras?
    /// TLS/WebSocket layers of the client's endpoint; nil for plain TCP.
    var endpoint: TransportEndpoint? { extras?.endpoint }
    /// The run's addresses; the client keeps its broker's and its source's slots (`brokerSlot`, `sourceSlot`).
    let addressBook: ClientAddresses
    var session: MQTTClientSession
    /// Emulated network conditions (`Lane+Network`); nil for clients without a profile.
    var network: NetworkLink? {
        get { extras?.network }
        set { if let extras = extrasToSet(newValue != nil) { extras.network = newValue } }
    }
    /// Where the connection is in its life, its attempt count and its connect times (`ClientConnectionMachine`).
    var connection = ClientConnectionMachine()
    var phase: ClientPhase { connection.phase }
    /// Connected and subscribed once (or given up): counts toward the start-of-publishing barrier.
    var isReady: Bool { connection.isReady }
    var hasConnectedBefore: Bool { connection.hasConnectedBefore }
    var socket: TCPSocket?
    /// Layer state of the current connection (TLS/WebSocket endpoints only).
    var transport: ClientTransport? {
        get { extras?.transport }
        set { if let extras = extrasToSet(newValue != nil) { extras.transport = newValue } }
    }
    var wantsWritable = false
    var isDirty = false
    /// It subscribes to something: its subscriptions themselves are made again from its fleet's patterns when it
    /// subscribes (`FleetRuntime.subscriptions(of:)`), not kept by every client. Beside the other flags: they
    /// fill the padding before `ackBatching`.
    let hasSubscriptions: Bool
    /// Some subscription asks for Retain As Published (the RETAIN flag then no longer says "on subscribe").
    let retainAsPublished: Bool
    /// The in-flight window's wait and the SO_RCVLOWAT batching of its acks (`AckBatchingMachine`).
    var ackBatching = AckBatchingMachine()
    var awaitingWindow: Bool { ackBatching.awaitingWindow }
    /// Slots in `addressBook` of the broker address and of the source address (`ClientAddresses.none`: the
    /// kernel picks): 4 bytes instead of two socket addresses (29 and 30 bytes) inline in every client.
    let brokerSlot: UInt16
    let sourceSlot: UInt16
    var broker: SocketAddress { addressBook.addresses[Int(brokerSlot)] }
    var source: SocketAddress? { sourceSlot == ClientAddresses.none ? nil : addressBook.addresses[Int(sourceSlot)] }
    /// Bytes to write. Its 2 KiB block is lent by the lane's `outboundBlocks` while bytes wait, so an idle client
    /// holds none (`Lane.init` lends it the pool).
    let outbound = OutboundBuffer(initialCapacity: Lane.outboundBlockSize)
    /// Bytes of a packet not yet whole. Empty (no storage) for most clients most of the time.
    var inbound: [UInt8] = []
    /// High 32 bits of the keys its deliveries are recorded under (`LaneMetrics.deliveryKeys`): its own global
    /// index, or its shared-subscription group's tagged index (`Engine.groupDeliveryKey`). For a client with
    /// `deliveryRoutes`, the key of arrivals no route matches.
    let deliveryKey: UInt64
    /// Set only for a client mixing shared and plain subscriptions (or subscribed to several groups): picks the
    /// key per arrival from its topic. Nil for every other client, whose arrivals all go to `deliveryKey`.
    var deliveryRoutes: DeliveryRoutes? { extras?.deliveryRoutes }
    /// Its publishing streams, their schedules and offline backlog (`ClientPublisher`).
    var publisher: ClientPublisher
    var random: SeededRandom
    /// The client's vehicle (fleets with a vehicle model), made at its first sample (`Lane+Vehicle`), and the
    /// lane time its run time counts from: when it first started publishing.
    var vehicle: VehicleBox? {
        get { extras?.vehicle }
        set { if let extras = extrasToSet(newValue != nil) { extras.vehicle = newValue } }
    }
    var vehicleOrigin: UInt64 {
        get { extras?.vehicleOrigin ?? 0 }
        set { if let extras = extrasToSet(newValue != 0) { extras.vehicleOrigin = newValue } }
    }
    /// The client's extras to set a field in: made when `needed` (a value other than the default), nil when
    /// there are none and the value is the default (nothing to store).
    @inline(__always)
    mutating func extrasToSet(_ needed: Bool) -> ClientExtras? {
        if let extras { return extras }
        guard needed else { return nil }
        let made = ClientExtras()
        extras = made
        return made
    }
    /// Streams (global ids) its subscriptions match, for the entitlement windows (`Lane+Entitlement`), whether
    /// each outlives a disconnect (persistent session, QoS ≥ 1 both ways), and the key its windows are kept under
    /// (high 32 bits: its own index for a plain filter, its group's tagged index for a shared subscription, so a
    /// group's windows from every member meet under one key). Per entitled stream: where the current window
    /// starts, where a persistent window's link was cut, and whether a window is open.
    var entitlement: EntitlementState?
    var entitledStreams: [UInt32] { entitlement?.streams ?? [] }
    var entitledKeys: [UInt64] { entitlement?.keys ?? [] }

    mutating func setEntitledStreams(_ streams: [UInt32], persistent: [Bool], keys: [UInt64]) {
        entitlement = streams.isEmpty ? nil : EntitlementState(streams: streams, persistent: persistent, keys: keys)
    }
}

/// What only some clients have, kept apart from `SimulatedClient` (8 bytes in each client instead of 48): a TLS or
/// WebSocket endpoint and its connection's layers, an emulated network link, delivery routes by topic and a
/// simulated vehicle. Touched on the client's lane only; every field's default is "none", and a
/// client gets its extras when the first field is set to something else. The per-message path reads `network`
/// and `transport` through it: one nil check when the client has none, as before.
final class ClientExtras {
    var endpoint: TransportEndpoint?
    var network: NetworkLink?
    var transport: ClientTransport?
    var deliveryRoutes: DeliveryRoutes?
    var vehicle: VehicleBox?
    var vehicleOrigin: UInt64 = 0

    init(endpoint: TransportEndpoint? = nil, deliveryRoutes: DeliveryRoutes? = nil) {
        self.endpoint = endpoint
        self.deliveryRoutes = deliveryRoutes
    }
}

/// A subscriber's entitlement windows (`SimulatedClient.entitlement`), kept apart from the client: most clients
/// (a vehicle on its own command topic) are owed no stream, and six empty arrays inline cost them 48 bytes each.
/// Touched only on the client's lane, when a window opens or closes (never per message).
final class EntitlementState {
    /// Streams (global ids) its subscriptions match, whether each outlives a disconnect (persistent session, QoS
    /// ≥ 1 both ways), and the key its windows are kept under (high 32 bits: its own index for a plain filter, its
    /// group's tagged index for a shared subscription, so a group's windows from every member meet under one key).
    let streams: [UInt32]
    let persistent: [Bool]
    let keys: [UInt64]
    /// Per entitled stream: where the current window starts, where a persistent window's link was cut, and whether
    /// a window is open.
    var windowStart: [UInt64]
    var windowCut: [UInt64]
    var windowOpen: [Bool]

    init(streams: [UInt32], persistent: [Bool], keys: [UInt64]) {
        self.streams = streams
        self.persistent = persistent
        self.keys = keys
        windowStart = Array(repeating: 0, count: streams.count)
        windowCut = windowStart
        windowOpen = Array(repeating: false, count: streams.count)
    }
}

/// The broker and source addresses of a run, each once; clients keep their slots (`SimulatedClient.brokerSlot`).
final class ClientAddresses: Sendable {
    /// The source slot of a client bound to no source address.
    static let none = UInt16.max
    let addresses: [SocketAddress]

    init(_ addresses: [SocketAddress]) {
        precondition(addresses.count < Int(Self.none), "more distinct addresses than a slot can name")
        self.addresses = addresses
    }
}

/// Delivery keys by topic for a client whose subscriptions mix plain filters and shared subscriptions
/// (`Engine.sharedGroup(of:)` describes the accounting). Arrivals do not say which subscription brought them,
/// so the topic decides: its plain filters first, then its shared filters in subscription order.
final class DeliveryRoutes: Sendable {
    /// UTF-8 filter (for shared subscriptions the part after `$share/{group}/`) and the key of arrivals it
    /// matches: every plain filter with the client's own key, then every shared filter with its group's key.
    let routes: [(filter: [UInt8], key: UInt64)]
    /// For topics no filter matches (a broker should send none): the client's own key.
    let fallback: UInt64

    init(plainFilters: [String], sharedFilters: [(filter: String, key: UInt64)], ownKey: UInt64) {
        routes = plainFilters.map { (Array($0.utf8), ownKey) } + sharedFilters.map { (Array($0.filter.utf8), $0.key) }
        fallback = ownKey
    }

    /// The key of the first route whose filter matches `topic` (matched in place, no allocation).
    func key(topic: UnsafeRawBufferPointer) -> UInt64 {
        let name = topic.assumingMemoryBound(to: UInt8.self)
        for route in routes {
            let matched = route.filter.withUnsafeBufferPointer { MQTTTopic.matches(filter: $0, topic: name) }
            if matched { return route.key }
        }
        return fallback
    }
}
