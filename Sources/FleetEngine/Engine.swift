import Dispatch
import FleetMetrics
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession
import Synchronization

/// Runs a fleet of simulated MQTT clients on a few lanes and returns what they measured.
///
/// Phases: connect every client (paced) and subscribe; once all are ready (or `readyTimeout` passed) every
/// publisher starts its schedule at once, so subscribers never miss the start of a stream and loss is exact;
/// publish for the given duration; drain what is still in flight; DISCONNECT and close; merge the lanes.
public final class Engine: @unchecked Sendable {
    public let configuration: EngineConfiguration
    let lanes: [Lane]
    let fleets: [FleetRuntime]
    /// QoS of every global stream id, for expected delivery counts (topics are made when asked: `streamTopic`).
    let streamQoS: [MQTTQoS]
    /// False for streams without an end-to-end header (fixed text): no delivery expectations for them.
    let streamTracked: [Bool]
    /// True for streams whose publisher is in this segment (every stream without segments).
    let streamLocal: [Bool]
    /// Every subscriber with plain filters, accounted on its own, by global client index (members whose
    /// subscriptions are all shared are not here: shared subscriptions are accounted in `shareGroups`). Indexes
    /// only: the filters themselves are made again where needed (`FleetRuntime.subscriptions(of:)`); keeping
    /// every subscriber's filters for the run cost a vehicle on its command topic 120 bytes.
    let plainSubscribers: [Int32]
    /// Per subscriber in `plainSubscribers` (by global index): the streams its plain filters match; absent when none.
    let entitledStreams: [Int: [UInt32]]
    /// The run's shared-subscription groups, by group index (order of first appearance in the configuration).
    let shareGroups: [ShareGroup]
    /// Clients connected at once across the lanes (exact peaks for the result).
    let gauges: ConnectedGauges
    /// Every stream's published count, shared by the lanes: the one count of what each stream sent.
    let progress: StreamProgress

    /// Messages every stream has handed to a connection so far (QoS 0 written, QoS 1/2 sent at least once), read
    /// from any thread while the engine runs: what a caller waits for to act at a point of the run given in
    /// messages rather than in time (a fault after N publishes lands at the same place on a loaded machine).
    public var publishedSoFar: UInt64 {
        progress.total
    }
    private let readyGroup = DispatchGroup()
    /// Merges the lanes' snapshots; `onSnapshot` is called on it.
    let mergeQueue = DispatchQueue(label: "fleetbench.engine.merge")
    private let readyLanes = ReadyTracker()
    let faultSequence = FaultSequence()
    /// Called once a second, on the engine's merge queue, with the merged snapshot. Set it before `run`; it
    /// must return quickly (copy what it needs, hand it to another queue).
    public var onSnapshot: (@Sendable (EngineSnapshot) -> Void)?
    /// Called once on `run`'s thread when the start barrier opened and publishing begins (every client
    /// connected and subscribed, or `readyTimeout` passed), before the first `shouldStop` poll of that phase.
    public var onPublishStart: (@Sendable () -> Void)?
    /// Called once on `run`'s thread when publishing has stopped on every lane, before the drain.
    public var onPublishEnd: (@Sendable () -> Void)?
    /// Segmented runs: the segments' common publishing start on the monotonic clock (from the run's wall-clock
    /// start, so a segment that started late is late against it). Nil: `configuration.publishNotBefore` after
    /// this process's own start. Set before `run`.
    public var publishStartAt: UInt64?

    struct ReadyState {
        var count = 0
        var allReadyAt: UInt64?
    }

    /// When the last lane reported every client ready (lanes report from their own queues).
    final class ReadyTracker: Sendable {
        let state = Mutex(ReadyState())
    }

    /// One lane per core, but one core is left to a broker on this machine (every address on loopback): it
    /// competes for the same cores, and a lane more than the cores left costs more than it brings: less CPU and
    /// far less schedule lag at the same throughput, the broker's one thread being the limit either way (figures
    /// in docs/performance.md, "Figures behind engine defaults").
    public static func defaultLaneCount(cores: Int, configuration: EngineConfiguration) -> Int {
        let addresses = configuration.allBrokerAddresses
        let brokerIsLocal = !addresses.isEmpty && addresses.allSatisfy(\.isLoopback)
        return max(1, brokerIsLocal ? cores - 1 : cores)
    }

    /// Source addresses for a local IPv4 broker when the configuration names none. Connections from one source
    /// address to one broker address take their ports from net.ipv4.ip_local_port_range, and connect() looks
    /// among the even ports first (the kernel keeps the odd ones for bind()): once that half (~14,000 of 28,232
    /// by default) is in use, every further connect scans all of it (`__inet_hash_connect`), which costs CPU and
    /// connect latency (figures in docs/performance.md). So clients are spread over as many of 127.0.0.1,
    /// 127.0.0.2, ... as keep each below 70 % of the even half (all of 127/8 is loopback on Linux). Beyond
    /// loopback the network decides which source addresses exist: the scenario must name them.
    public static func defaultSourceAddresses(configuration: EngineConfiguration, ephemeralPorts: Int) -> [SocketAddress] {
        guard configuration.sourceAddresses.isEmpty else { return configuration.sourceAddresses }
        let addresses = configuration.allBrokerAddresses
        guard !addresses.isEmpty, addresses.allSatisfy({ $0.family == AF_INET && $0.isLoopback }) else { return [] }
        let clients = configuration.fleets.reduce(0) { $0 + $1.count }
        let perSource = clientsPerSourceAddress(ephemeralPorts: ephemeralPorts)
        guard clients > perSource else { return [] }
        let count = min(254, (clients + perSource - 1) / perSource)
        return (1...count).compactMap { try? SocketAddress(ipAddress: "127.0.0.\($0)", port: 0) }
    }

    /// The size of net.ipv4.ip_local_port_range (Linux's default 32768-60999, 28,232 ports, when unreadable).
    public static func ephemeralPortCount() -> Int {
        let fallback = 28_232
        let descriptor = open("/proc/sys/net/ipv4/ip_local_port_range", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return fallback }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return fallback }
        let numbers = String(decoding: bytes[0..<count], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
            .compactMap { Int($0) }
        guard numbers.count == 2, numbers[1] >= numbers[0] else { return fallback }
        return numbers[1] - numbers[0] + 1
    }

    /// 100 µs while the lane's scheduled publishes come at 2,000 a second or fewer, else 1 ms. A lane runs a turn
    /// when a tick has something due, so with few events a finer tick costs nothing and cuts the schedule lag it
    /// adds to every message; with many events it multiplies turns and CPU (figures in docs/performance.md).
    public static func defaultTickNanoseconds(configuration: EngineConfiguration, laneCount: Int) -> UInt64 {
        var perSecond = 0.0
        for fleet in configuration.fleets {
            // A closed-model stream sends as fast as it can: a busy lane.
            for stream in fleet.streams {
                perSecond += stream.plan.isClosed ? .infinity : Double(fleet.count) * stream.plan.messagesPerSecond
            }
        }
        return perSecond / Double(max(laneCount, 1)) <= 2_000 ? 100_000 : 1_000_000
    }

    public init(configuration: EngineConfiguration) throws {
        precondition(!configuration.brokers.isEmpty || configuration.fleets.allSatisfy({ !$0.endpoints.isEmpty }),
                     "the engine needs at least one broker address")
        var configuration = configuration
        let laneCount = configuration.lanes > 0
            ? configuration.lanes
            : Self.defaultLaneCount(cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), configuration: configuration)
        configuration.sourceAddresses = Self.defaultSourceAddresses(configuration: configuration,
                                                                    ephemeralPorts: Self.ephemeralPortCount())
        if configuration.tickNanoseconds == 0 {
            configuration.tickNanoseconds = Self.defaultTickNanoseconds(configuration: configuration, laneCount: laneCount)
        }
        if configuration.runID == 0 { configuration.runID = Self.randomRunID() }
        if configuration.isSegmented {
            // Every segment paces its share: together they connect at the scenario's rate.
            let segments = Double(configuration.segmentCount)
            for index in configuration.fleets.indices {
                configuration.fleets[index].connectRate = configuration.fleets[index].connectRate.map { $0 / segments }
                configuration.fleets[index].maxConnectsInFlight =
                    max(1, configuration.fleets[index].maxConnectsInFlight / configuration.segmentCount)
            }
        }
        self.configuration = configuration
        var fleets: [FleetRuntime] = []
        var firstStream = 0
        for (index, fleet) in configuration.fleets.enumerated() {
            fleets.append(try FleetRuntime(index: index, configuration: fleet, firstStream: firstStream))
            firstStream += fleet.count * fleet.streams.count
        }
        self.fleets = fleets
        try Self.refuseAmbiguousRoutes(fleets: fleets, streamCount: firstStream)
        var perLane: [[SimulatedClient]] = Array(repeating: [], count: laneCount)
        // Each lane's array made at its final size: grown by doubling, the copies of the old arrays raised the
        // start's peak memory (VmHWM) by up to one more array of clients.
        let totalClients = fleets.reduce(0) { $0 + $1.configuration.count }
        // Clients keep their indexes in 32 bits (`SimulatedClient.globalIndex32`).
        guard totalClients <= Int(Int32.max) else {
            throw EngineConfigurationError(message: "\(totalClients) clients in one run: at most \(Int32.max)")
        }
        var laneSizes = Array(repeating: 0, count: laneCount)
        for global in 0..<totalClients where configuration.inSegment(global) {
            laneSizes[Self.location(global, segments: configuration.segmentCount, lanes: laneCount).lane] += 1
        }
        for lane in perLane.indices { perLane[lane].reserveCapacity(laneSizes[lane]) }
        // Each lane's sessions borrow their in-flight slot arrays from the lane's pool, at most one idle array per
        // client and 1,024 in all (as the outbound blocks).
        let windowStorage = laneSizes.map { MQTTWindowStoragePool(maximumFree: min($0, 1024)) }
        var qos: [MQTTQoS] = Array(repeating: .atMostOnce, count: firstStream)
        var tracked: [Bool] = Array(repeating: true, count: firstStream)
        var plainSubscribers: [Int] = []
        plainSubscribers.reserveCapacity(laneSizes.reduce(0, +))  // at most one entry per client of this segment
        var groups: [ShareGroup] = []
        var groupIndices: [String: Int] = [:]
        var streamLocal: [Bool] = Array(repeating: false, count: firstStream)
        var sharedFilters: [Int: [(filter: String, qos: MQTTQoS, key: UInt64)]] = [:]
        // Every broker, endpoint and source address once; clients keep slots into the list.
        var addressList: [SocketAddress] = []
        var addressSlots: [SocketAddress: UInt16] = [:]
        for address in configuration.brokers + configuration.fleets.flatMap({ $0.endpoints.map(\.address) })
            + configuration.sourceAddresses where addressSlots[address] == nil {
            addressSlots[address] = UInt16(truncatingIfNeeded: addressList.count)
            addressList.append(address)
        }
        let addressBook = ClientAddresses(addressList)
        var global = 0
        // Slots of this segment's streams in `StreamProgress`, in the same order (fleet by fleet, client order).
        var nextProgressSlot = 0
        for fleet in fleets {
            let settings = fleet.configuration
            var shapes: [NetworkShape] = []
            for profile in settings.networks {
                if let problem = profile.validationError {
                    throw EngineConfigurationError(message: problem, fleet: settings.name)
                }
                shapes.append(NetworkShape(profile))
            }
            let fractions = settings.networks.reduce(0.0) { $0 + $1.fraction }
            if fractions > 1 + 1e-9 {
                throw EngineConfigurationError(
                    message: "network fractions add up to \(fractions), more than 1 (the whole fleet)", fleet: settings.name)
            }
            let endpoints = settings.endpoints.map { endpoint in
                (endpoint.address, endpoint.transport.tls == nil && endpoint.transport.webSocket == nil
                    ? nil : TransportEndpoint(endpoint))
            }
            for index in 0..<settings.count {
                defer { global += 1 }
                // Every client of the run is named and its streams numbered (stream ids, topics and share groups
                // are the same in every segment); only this segment's clients are built.
                let local = configuration.inSegment(global)
                let clientID = settings.clientID(index)
                var streams: [StreamState] = []
                for (streamIndex, stream) in settings.streams.enumerated() {
                    let id = fleet.firstStream + index * settings.streams.count + streamIndex
                    qos[id] = stream.qos
                    streamLocal[id] = local
                    if case .text = stream.payload { tracked[id] = false }
                    if stream.request != nil { tracked[id] = false }
                    guard local else { continue }
                    let topic = stream.topic(index, clientID)
                    var request: RequestState?
                    if let target = stream.request {
                        let replyTopic = target.replyTopic(index, clientID)
                        request = try Self.requestState(target, replyTopic: replyTopic, stream: id, fleets: fleets,
                                                        version: settings.session.version)
                    }
                    let progressSlot = nextProgressSlot
                    nextProgressSlot += 1
                    let payload: StreamPayload
                    switch stream.payload {
                    case .binary(let size): payload = .binary(size: size)
                    case .text: payload = .text(fleet.texts[streamIndex])
                    case .template(let template): payload = .template(template, clientID: Array(clientID.utf8))
                    }
                    streams.append(StreamState(
                        topic: try MQTTTopicName(topic), streamID: UInt32(id), progressSlot: UInt32(progressSlot),
                        qos: stream.qos, retain: stream.retain,
                        payload: payload, closed: stream.plan.isClosed, schedule: nil, pending: nil, request: request))
                }
                let subscriptions = fleet.subscriptions(of: index, clientID: clientID)
                // The group's index, created on its first member (clients are numbered fleet by fleet, so the
                // first member's fleet is the group's first fleet in configuration order), with `filter` joined.
                func joinGroup(_ name: String, filter: String) -> Int {
                    let group: Int
                    if let known = groupIndices[name] {
                        group = known
                    } else {
                        group = groups.count
                        groupIndices[name] = group
                        groups.append(ShareGroup(name: name, filters: [], fleet: fleet.index))
                    }
                    if !groups[group].filters.contains(filter) { groups[group].filters.append(filter) }
                    return group
                }
                if !local {
                    // Share groups are numbered in client order over the whole run, so every segment agrees.
                    for shared in Self.splitSharedSubscriptions(subscriptions).shared {
                        _ = joinGroup(shared.group, filter: shared.filter)
                    }
                    continue
                }
                var deliveryKey = Self.subscriberDeliveryKey(global)
                var deliveryRoutes: DeliveryRoutes?
                let split = Self.splitSharedSubscriptions(subscriptions)
                if !split.plain.isEmpty { plainSubscribers.append(global) }
                let routed = split.shared.map { shared in
                    (filter: shared.filter, key: Self.groupDeliveryKey(joinGroup(shared.group, filter: shared.filter)))
                }
                if !routed.isEmpty {
                    // The granted QoS of each shared subscription, for whether its windows outlive a disconnect.
                    let qosOfShared = subscriptions.compactMap { subscription -> MQTTQoS? in
                        guard let parsed = try? MQTTTopicFilter(subscription.filter), parsed.shareGroup != nil else { return nil }
                        return subscription.options.qos
                    }
                    sharedFilters[global] = (zip(routed, qosOfShared).map { ($0.filter, $1, $0.key) })
                }
                if Self.onlyGroup(split) != nil, let group = routed.first {
                    deliveryKey = group.key  // every arrival is the group's: no matching per message
                } else if !routed.isEmpty {
                    deliveryRoutes = DeliveryRoutes(plainFilters: split.plain.map(\.filter), sharedFilters: routed,
                                                    ownKey: deliveryKey)
                }
                let brokers = configuration.brokers
                let sources = configuration.sourceAddresses
                let endpoint = endpoints.isEmpty ? nil : endpoints[index % endpoints.count]
                // Sources turn once per round of destinations, so every (source, destination) pair gets its share
                // of clients: with `global % sources.count`, 2 sources and 2 brokers paired source 0 with broker 0
                // only, putting half the clients on each pair's ports instead of a quarter.
                let round = endpoint == nil ? global / brokers.count : index / endpoints.count
                let broker = endpoint?.0 ?? brokers[global % brokers.count]
                perLane[Self.location(global, segments: configuration.segmentCount, lanes: laneCount).lane].append(SimulatedClient(
                    fleet32: Int32(fleet.index), indexInFleet32: Int32(index), globalIndex32: Int32(global),
                    extras: endpoint?.1 == nil && deliveryRoutes == nil
                        ? nil : ClientExtras(endpoint: endpoint?.1, deliveryRoutes: deliveryRoutes),
                    addressBook: addressBook,
                    session: MQTTClientSession(settings: settings.sessionSettings?(index, clientID) ?? settings.session, clientID: clientID,
                                               keepsStatistics: configuration.keepsSessionStatistics,
                                               keepsSubscriptions: false,
                                               windowStorage: windowStorage[Self.location(global, segments: configuration.segmentCount, lanes: laneCount).lane]),
                    hasSubscriptions: !subscriptions.isEmpty,
                    retainAsPublished: subscriptions.contains { $0.options.retainAsPublished },
                    brokerSlot: addressSlots[broker]!,
                    sourceSlot: sources.isEmpty ? ClientAddresses.none : addressSlots[sources[round % sources.count]]!,
                    deliveryKey: deliveryKey,
                    publisher: ClientPublisher(streams: streams),
                    random: SeededRandom(seed: configuration.seed, stream: UInt64(global))))
                if !shapes.isEmpty,
                   let profile = EngineNetworkProfile.assignment(of: index, count: settings.count, profiles: settings.networks) {
                    let lane = Self.location(global, segments: configuration.segmentCount, lanes: laneCount).lane
                    perLane[lane][perLane[lane].count - 1].network = NetworkLink(
                        shape: shapes[profile], seed: configuration.seed, globalIndex: global,
                        tracksAcks: settings.streams.contains { $0.qos == .atLeastOnce } || settings.responder?.qos == .atLeastOnce,
                        profile: profile)
                    if configuration.recordsNetworkEvents { perLane[lane][perLane[lane].count - 1].network?.events = [] }
                }
            }
        }
        // What each subscriber is owed: the tracked streams its plain filters match (under its own key) and those
        // its shared subscriptions match (under its group's key: a group is owed what any member was entitled to,
        // see `collect`), and whether each outlives a disconnect. `refuseAmbiguousRoutes` made sure no stream is
        // matched by two routes of one client.
        // A filter without wildcards matches only streams of exactly its topic: those are looked up, not found by
        // matching every stream (a fleet where each client subscribes to its own command topic was quadratic:
        // 8,000 vehicles took 28 s to start). Only subscribers with a wildcard filter scan every stream.
        var entitledStreams: [Int: [UInt32]] = [:]
        func hasWildcard(_ filter: String) -> Bool { filter.contains("+") || filter.contains("#") }
        // A subscriber's plain filters, made again from its fleet's patterns: no list of every subscriber's filters
        // is held while the engine starts (it set the start's peak memory, VmHWM, by about 120 bytes a vehicle).
        func plainFilters(_ global: Int) -> [MQTTSubscription] {
            let (lane, position) = Self.location(global, segments: configuration.segmentCount, lanes: laneCount)
            let client = perLane[lane][position]
            return Self.splitSharedSubscriptions(fleets[client.fleet].subscriptions(of: client.indexInFleet)).plain
        }
        let plainSet = Set(plainSubscribers)
        var subscribers = plainSet
        subscribers.formUnion(sharedFilters.keys)
        // Topics are made again here, one at a time, and kept only where this segment's subscribers need them:
        // the streams of each exact filter they hold, or every topic only when one of them has a wildcard. Keeping
        // every stream's topic string and a topic index over the whole run (100,000 vehicles: ~18 MB in each of 7
        // workers, freed after the start) set each worker's peak RSS, whatever its share of the fleet.
        let exactTopics = Self.tracedTopics(
            fleets: fleets, tracked: tracked,
            filters: [AnySequence(plainSubscribers.lazy.flatMap { plainFilters($0).map(\.filter) }),
                      AnySequence(sharedFilters.values.lazy.flatMap { $0.map(\.filter) })].joined(),
            hasWildcard: hasWildcard)
        for global in subscribers.sorted() {
            let (lane, position) = Self.location(global, segments: configuration.segmentCount, lanes: laneCount)
            let settings = perLane[lane][position].session.settings
            let keepsSession = !settings.cleanStart && (!settings.version.hasProperties || settings.sessionExpiryInterval > 0)
            let ownKey = Self.subscriberDeliveryKey(global)
            let plain = plainSet.contains(global) ? plainFilters(global) : []
            let shared = sharedFilters[global] ?? []
            var streams: [UInt32] = []
            var persistent: [Bool] = []
            var keys: [UInt64] = []
            var plainStreams: [UInt32] = []
            let exactFilters = plain.map(\.filter) + shared.map(\.filter)
            let candidates: [(stream: Int, topic: String)]
            if let all = exactTopics.all, exactFilters.contains(where: hasWildcard) {
                candidates = all.indices.map { ($0, all[$0]) }
            } else {
                var seen = Set<Int>()
                var found: [(stream: Int, topic: String)] = []
                for filter in exactFilters {
                    for stream in exactTopics.byFilter[filter] ?? [] where seen.insert(stream).inserted { found.append((stream, filter)) }
                }
                candidates = found.sorted { $0.stream < $1.stream }
            }
            for (stream, topic) in candidates where tracked[stream] {
                var granted = plain.filter { MQTTTopic.matches(filter: $0.filter, topic: topic) }.map(\.options.qos.rawValue).max()
                var key = ownKey
                if granted != nil {
                    plainStreams.append(UInt32(stream))
                } else if let route = shared.first(where: { MQTTTopic.matches(filter: $0.filter, topic: topic) }) {
                    granted = route.qos.rawValue
                    key = route.key
                }
                guard let granted else { continue }
                streams.append(UInt32(stream))
                persistent.append(keepsSession && granted >= 1 && qos[stream] != .atMostOnce)
                keys.append(key)
            }
            perLane[lane][position].setEntitledStreams(streams, persistent: persistent, keys: keys)
            // Only subscribers owed something are kept (a vehicle on its own command topic is owed nothing).
            if plainSet.contains(global), !plainStreams.isEmpty { entitledStreams[global] = plainStreams }
        }
        self.entitledStreams = entitledStreams
        self.streamQoS = qos
        self.streamTracked = tracked
        self.streamLocal = streamLocal
        self.plainSubscribers = plainSubscribers.map { Int32($0) }
        self.shareGroups = groups
        let start = MonotonicClock.now()
        let gauges = ConnectedGauges(fleetCount: fleets.count)
        self.gauges = gauges
        self.lanes = try perLane.enumerated().map { index, clients in
            try Lane(index: index, fleets: fleets, clients: clients, windowStorage: windowStorage[index], configuration: configuration,
                     laneCount: laneCount, start: start, gauges: gauges)
        }
        let progress = StreamProgress(
            fleets: fleets.map { ($0.firstStream, $0.configuration.streams.count, $0.configuration.count) },
            segmentIndex: configuration.segmentIndex, segmentCount: configuration.segmentCount)
        precondition(progress.count == nextProgressSlot, "stream slots numbered differently from StreamProgress")
        self.progress = progress
        for lane in lanes {
            lane.streamTracked = tracked
            lane.progress = progress
        }
    }

    /// The tracked streams each exact filter of `filters` names (its topic), made by rendering every stream's
    /// topic once and keeping only those; with a wildcard among `filters`, every stream's topic instead (`all`,
    /// indexed by global stream id; empty strings for untracked streams). A filter that names no tracked stream
    /// has no entry. The filters are read once and only their hashes kept (a set of 8-byte values, not every
    /// filter's string): a topic whose hash is among them gets its entry, so a hash collision at most adds an
    /// entry that no filter looks up.
    static func tracedTopics(fleets: [FleetRuntime], tracked: [Bool], filters: some Sequence<String>,
                             hasWildcard: (String) -> Bool) -> (byFilter: [String: [Int]], all: [String]?) {
        var byFilter: [String: [Int]] = [:]
        var hashes = Set<Int>()
        var wildcard = false
        for filter in filters {
            if hasWildcard(filter) { wildcard = true } else { hashes.insert(filter.hashValue) }
        }
        guard wildcard || !hashes.isEmpty else { return ([:], nil) }
        var all: [String]? = wildcard ? Array(repeating: "", count: tracked.count) : nil
        for fleet in fleets {
            let settings = fleet.configuration
            guard !settings.streams.isEmpty else { continue }
            for index in 0..<settings.count {
                let base = fleet.firstStream + index * settings.streams.count
                guard (base..<base + settings.streams.count).contains(where: { tracked[$0] }) else { continue }
                let clientID = settings.clientID(index)
                for (streamIndex, stream) in settings.streams.enumerated() where tracked[base + streamIndex] {
                    let topic = stream.topic(index, clientID)
                    if all != nil { all![base + streamIndex] = topic }
                    if hashes.contains(topic.hashValue) { byFilter[topic, default: []].append(base + streamIndex) }
                }
            }
        }
        return (byFilter, all)
    }

    /// Connects everything, publishes for `duration` ns, drains and disconnects; blocks the calling thread
    /// (never call it from a lane). `shouldStop` is polled every 50 ms so a signal can end the run early.
    /// With `waitForReady` the duration counts from the start barrier, otherwise from the run's start.
    public func run(duration: UInt64, shouldStop: @escaping @Sendable () -> Bool = { false }) -> EngineResult {
        var phases = EnginePhaseTimes()
        let origin = MonotonicClock.now()
        phases.connectStart = origin
        let merger = SnapshotMerger(laneCount: lanes.count, fleetNames: fleets.map(\.configuration.name),
                                    origin: origin, keepsIntervalLatencies: configuration.keepsIntervalLatencies,
                                    keepsTimeline: configuration.keepsTimeline, onSnapshot: onSnapshot)
        let mergeQueue = self.mergeQueue
        let readyLanes = self.readyLanes
        let laneCount = lanes.count
        for lane in lanes {
            readyGroup.enter()
            let group = readyGroup
            lane.onReady = { _ in
                let now = MonotonicClock.now()
                readyLanes.state.withLock { state in
                    state.count += 1
                    if state.count == laneCount { state.allReadyAt = now }
                }
                group.leave()
            }
            lane.onSnapshot = { snapshot in mergeQueue.async { merger.add(snapshot) } }
            if configuration.isSegmented { lane.remoteEntitlementDeadline = publishStartAt ?? origin &+ configuration.publishNotBefore }
            lane.start(origin: origin)
        }
        if configuration.waitForReady {
            let readyDeadline = MonotonicClock.now() &+ Self.plannedConnectSpan(configuration) &+ configuration.readyTimeout
            while readyGroup.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
                if shouldStop() || MonotonicClock.now() >= readyDeadline { break }
            }
        }
        if configuration.isSegmented {
            // The segments' common publishing start: no segment publishes before every segment's subscribers
            // had their planned time to subscribe.
            let notBefore = publishStartAt ?? origin &+ configuration.publishNotBefore
            while MonotonicClock.now() < notBefore && !shouldStop() {
                usleep(UInt32(min(50_000, max(100, (notBefore &- MonotonicClock.now()) / 1_000))))
            }
        }
        phases.publishStart = MonotonicClock.now()
        onPublishStart?()
        for lane in lanes { lane.queue.async { lane.beginPublishing() } }
        let publishEnd = (configuration.waitForReady ? phases.publishStart : origin) &+ duration
        while MonotonicClock.now() < publishEnd && !shouldStop() { usleep(50_000) }
        for lane in lanes { lane.queue.sync { lane.endPublishing() } }
        phases.publishEnd = MonotonicClock.now()
        onPublishEnd?()
        drain()
        phases.drainEnd = MonotonicClock.now()
        for lane in lanes {
            lane.queue.sync {
                lane.countUnackedAtEnd()
                lane.stop()
            }
            // The driver thread may run one more turn after `stop()` (and count a receive pause in it): the final
            // snapshot comes after it is joined, so the timeline's last counters are the result's.
            lane.stopThreadDriver()
            lane.queue.sync {
                lane.emitDueSnapshots()
                lane.emitSnapshot(end: lane.now, isFinal: true)
                lane.onSnapshot = nil
            }
        }
        phases.disconnectEnd = MonotonicClock.now()
        phases.allReady = readyLanes.state.withLock { $0.allReadyAt }
        // Every lane's snapshots were enqueued before its final one; this waits until all are merged.
        mergeQueue.sync {}
        return collect(merger: merger, phases: phases)
    }

    /// The end of a run: waits while anything is outstanding, up to `drainTimeout`. It ends as soon as
    /// - no QoS 1/2 message awaits its ack within its deadline on a client that may still get it (connected, or
    ///   offline with a reconnect to come), and
    /// - every message owed to a connected subscriber has arrived (its open entitlement windows,
    ///   `Lane.owedDeliveries`), every shared-subscription group with a connected member has every message from
    ///   its members' earliest open window on (`Lane.openGroupWindows`, `Lane.groupArrivals`: the lanes' distinct
    ///   arrivals summed, as a message reaches one member), and every request has its response: exact, no
    ///   waiting for quiet.
    /// While acks are in but owed messages are missing, it waits for them as long as this run's messages go on arriving
    /// (`received`; other runs' traffic does not keep it waiting): it gives up
    /// once nothing arrived for `owedQuiet` (they are lost: QoS 0 dropped, or a broker that lost them).
    /// Acks whose deadline passes during the drain are ack timeouts of their kind; what is still awaited when
    /// it ends is `unackedAtEnd`.
    private func drain() {
        let deadline = MonotonicClock.now() &+ configuration.drainTimeout
        var lastReceived: UInt64 = .max
        var lastArrival = MonotonicClock.now()
        while true {
            var outstanding = 0
            var owed: UInt64 = 0
            var received: UInt64 = 0
            for lane in lanes {
                lane.queue.sync {
                    for client in lane.clients where client.phase != .finished {
                        let awaiting = client.session.awaitingWithinDeadline
                        outstanding += awaiting.qos1 + awaiting.qos2
                    }
                    for fleet in lane.metrics.fleets { received &+= fleet.counters.received.total }
                    owed &+= lane.owedDeliveries()
                }
            }
            if !shareGroups.isEmpty { owed &+= owedToGroups() }
            let now = MonotonicClock.now()
            if received != lastReceived {
                lastReceived = received
                lastArrival = now
            }
            let quiet = now &- lastArrival
            if outstanding == 0 && (owed == 0 || quiet >= Self.owedQuiet) { return }
            guard now < deadline else { return }
            usleep(UInt32(min(Self.drainPoll, max(1_000, (deadline - now) / 1_000))))
        }
    }

    /// Messages owed to shared-subscription groups with a connected member that no member has received: from
    /// the earliest open window of a connected member to the stream's published count. A duplicate across
    /// members could hide a missing message here (the lanes' counts are summed); it is counted at the end.
    private func owedToGroups() -> UInt64 {
        var starts: [UInt64: UInt64] = [:]
        for lane in lanes { lane.queue.sync { lane.openGroupWindows(into: &starts) } }
        guard !starts.isEmpty else { return 0 }
        var arrived: [UInt64: UInt64] = [:]
        for lane in lanes { lane.queue.sync { lane.groupArrivals(starts, into: &arrived) } }
        var owed: UInt64 = 0
        for (key, start) in starts {
            let published = progress.published(Int(key & 0xFFFF_FFFF))
            guard published > start else { continue }
            owed &+= (published - start) &- min(arrived[key] ?? 0, published - start)
        }
        return owed
    }

    /// How long the drain waits without an arrival for messages owed but missing before it counts them lost (ns).
    static let owedQuiet: UInt64 = 1_000_000_000
    /// The drain's polling interval (µs).
    static let drainPoll: UInt64 = 10_000

    private func collect(merger: SnapshotMerger, phases: EnginePhaseTimes) -> EngineResult {
        var result = EngineResult()
        result.origin = phases.connectStart
        result.phases = phases
        var laneMetrics: [LaneMetrics] = []
        for lane in lanes {
            laneMetrics.append(lane.queue.sync {
                var metrics = lane.metrics
                for client in lane.clients where !client.hasConnectedBefore {
                    metrics.fleets[client.fleet].counters.neverConnected += 1
                }
                return metrics
            })
        }
        var fleetResults = fleets.map { fleet in
            var values = EngineFleetResult()
            values.networkProfiles = Array(repeating: (0, NetworkCounters()), count: fleet.configuration.networks.count)
            return values
        }
        var segment = SegmentDelivery(fleetCount: fleets.count)
        segment.index = configuration.segmentIndex
        segment.count = configuration.segmentCount
        // This segment's streams only (a count per stream of the whole run, made here, was 8 bytes per stream of
        // the run in each worker at the end of the run).
        segment.published.reserveCapacity(progress.count)
        for stream in streamTracked.indices where streamLocal[stream] && streamTracked[stream] {
            let published = progress.published(stream)
            if published > 0 { segment.published.append((stream, published)) }
        }
        let paths = lanes.map { lane in lane.queue.sync { lane.sendPath } }
        result.sendPath = SendPath.combined(paths)
        result.sendRingUnavailable = lanes.lazy.compactMap(\.sendRingError).first?.description
        result.receivePath = ReceivePath.combined(lanes.map { lane in lane.queue.sync { lane.receivePath } })
        result.receiveRingUnavailable = configuration.ringReceivesDeclined
            ?? lanes.lazy.compactMap(\.receiveRingError).first?.description
        for metrics in laneMetrics {
            result.counters.add(metrics.lane)
            for (fleet, values) in metrics.fleets.enumerated() where fleet < fleetResults.count {
                fleetResults[fleet].counters.add(values.counters)
                fleetResults[fleet].generatorLag.add(values.generatorLag)
                fleetResults[fleet].network.add(values.network)
            }
        }
        for (fleet, latency) in merger.fleetLatency.enumerated() where fleet < fleetResults.count {
            fleetResults[fleet].latency = latency
        }
        // Expected deliveries: every (subscriber, stream) pair whose filters match the stream's topic expects what
        // the stream published while the subscriber was entitled to it (`Lane+Entitlement`): inside each window,
        // everything from its SUBACK to its end, plus what arrived of what was numbered since the previous window. The rest of what
        // the stream published is missed while offline. A pair that received nothing still counts its loss.
        // Counted for the subscriber's fleet. Shared subscriptions are not in `plainSubscribers` (see below).
        for global32 in plainSubscribers {
            let global = Int(global32)
            let lane = Self.location(global, segments: configuration.segmentCount, lanes: lanes.count).lane
            let metrics = laneMetrics[lane]
            let fleet = fleetOfGlobal(global)
            let (_, position) = Self.location(global, segments: configuration.segmentCount, lanes: lanes.count)
            let whole = lanes[lane].queue.sync { lanes[lane].clients[position].remoteEntitlementWhole }
            for stream in entitledStreams[global] ?? [] {
                let key = UInt64(global) << 32 | UInt64(stream)
                let dense = metrics.deliveryKeys[key] ?? -1
                if !streamLocal[Int(stream)] {
                    // Another segment publishes it: its count is known at merge. Here, what arrived is what is
                    // expected (nothing is called lost before the merge).
                    let seen = metrics.delivery.counts(stream: dense, expected: 0)
                    segment.remotePairs.append(SegmentRemotePair(
                        fleet: fleet, subscriber: global, stream: Int(stream), qos: Int(streamQoS[Int(stream)].rawValue),
                        whole: whole, counts: seen))
                    fleetResults[fleet].delivery[streamQoS[Int(stream)]]
                        .add(metrics.delivery.counts(stream: dense, expected: seen.unique &+ seen.untracked))
                    continue
                }
                var expected: UInt64 = 0
                // Below a window's start, what arrived is owed too, down to the previous window's end: a message
                // is counted as published before its bytes leave the publisher's lane, so one numbered just before
                // the SUBSCRIBE can still reach the broker after it, and its arrival proves the entitlement.
                var previousEnd: UInt64 = 0
                for window in metrics.entitlement[key] ?? [] {
                    expected &+= window.end &- window.start
                    if previousEnd < window.start {
                        expected &+= metrics.delivery.uniqueCount(stream: dense, in: previousEnd..<window.start)
                    }
                    previousEnd = window.end
                }
                var counts = metrics.delivery.counts(stream: dense, expected: expected)
                let published = progress.published(Int(stream))
                counts.missedWhileOffline = published > expected ? published - expected : 0
                fleetResults[fleet].delivery[streamQoS[Int(stream)]].add(counts)
                // Publisher and subscriber both here: final (remote pairs and share groups are settled at merge).
                segment.local[fleet][streamQoS[Int(stream)]].add(counts)
            }
        }
        // Shared-subscription groups: the broker hands each message to one member, so a group is one
        // subscriber. Its members' states and entitlement windows (recorded under the group's key, on whichever
        // lanes they sit) are merged per stream; every stream a group filter matches expects each message
        // published while at least one member was entitled to it, once; a message that reached two members is a
        // duplicate, one published while no member was entitled is missed while offline. Counted once, for the fleet of the group's first
        // member in configuration order (a group whose members span fleets is not split between them).
        let topics = shareGroups.isEmpty ? [] : streamTopics
        for (index, group) in shareGroups.enumerated() {
            for stream in streamTracked.indices
            where streamTracked[stream] && group.filters.contains(where: { MQTTTopic.matches(filter: $0, topic: topics[stream]) }) {
                let key = Self.groupDeliveryKey(index) | UInt64(stream)
                var merged = DeliveryTracker()
                var windows: [EntitlementWindow] = []
                for metrics in laneMetrics {
                    if let dense = metrics.deliveryKeys[key] { merged.merge(stream: 0, from: metrics.delivery, stream: dense) }
                    windows += metrics.entitlement[key] ?? []
                }
                segment.groupStreams.append(SegmentGroupStream(
                    group: index, stream: stream, fleet: group.fleet, qos: Int(streamQoS[stream].rawValue),
                    ranges: merged.ranges(stream: 0), counts: merged.counts(stream: 0, expected: 0)))
                if configuration.isSegmented {
                    // The group's members elsewhere may have the rest, and its windows on other segments' streams
                    // are not known here: what arrived is what is expected until `fleetbench merge`.
                    let arrived = merged.counts(stream: 0, expected: 0)
                    fleetResults[group.fleet].delivery[streamQoS[stream]]
                        .add(merged.counts(stream: 0, expected: arrived.unique &+ arrived.untracked))
                    continue
                }
                // Owed once while at least one member was entitled: the union of the members' windows, plus
                // what arrived of what was numbered between them (as for a single subscriber above).
                var expected: UInt64 = 0
                var previousEnd: UInt64 = 0
                for window in Self.union(windows) {
                    expected &+= window.end &- window.start
                    if previousEnd < window.start {
                        expected &+= merged.uniqueCount(stream: 0, in: previousEnd..<window.start)
                    }
                    previousEnd = window.end
                }
                var counts = merged.counts(stream: 0, expected: expected)
                let published = progress.published(stream)
                counts.missedWhileOffline = published > expected ? published - expected : 0
                fleetResults[group.fleet].delivery[streamQoS[stream]].add(counts)
            }
        }
        result.peakConnected = gauges.total.peak
        for fleet in fleetResults.indices { fleetResults[fleet].peakConnected = gauges.fleets[fleet].peak }
        for lane in lanes {
            lane.queue.sync {
                for client in lane.clients {
                    guard let link = client.network else { continue }
                    fleetResults[client.fleet].addNetwork(link.counters, profile: link.profile,
                                                          profiles: fleets[client.fleet].configuration.networks.count)
                }
            }
        }
        for (fleet, values) in fleetResults.enumerated() {
            result.counters.add(values.counters)
            result.latency.add(values.latency)
            result.generatorLag.add(values.generatorLag)
            result.network.add(values.network)
            result.delivery.add(values.delivery)
            result.fleets[fleets[fleet].configuration.name] = values
        }
        result.timeline = merger.timeline
        result.intervals = merger.intervals
        result.segment = segment
        return result
    }

    /// Windows merged where they overlap or touch, in sequence order, empty ones dropped.
    static func union(_ windows: [EntitlementWindow]) -> [EntitlementWindow] {
        var merged: [EntitlementWindow] = []
        for window in windows.sorted(by: { $0.start < $1.start }) where window.end > window.start {
            if let last = merged.last, window.start <= last.end {
                merged[merged.count - 1] = EntitlementWindow(start: last.start, end: max(last.end, window.end))
            } else {
                merged.append(window)
            }
        }
        return merged
    }

    static func requestState(_ request: EngineRequest, replyTopic: String, stream: Int, fleets: [FleetRuntime],
                             version: MQTTProtocolVersion) throws -> RequestState {
        guard let target = fleets.first(where: { $0.configuration.name == request.targetFleet }) else {
            throw EngineConfigurationError(message: "request stream targets fleet '\(request.targetFleet)', which does not exist")
        }
        guard target.configuration.responder != nil, target.configuration.count > 0 else {
            throw EngineConfigurationError(
                message: "request stream targets fleet '\(request.targetFleet)', which has no responder")
        }
        var properties = MQTTEncodedProperties.empty
        if version.hasProperties {
            // The reply topic is where the requester listens; as a 5.0 Response Topic it must be a topic name
            // (§3.3.2.3.5: no wildcards).
            guard (try? MQTTTopicName(replyTopic)) != nil else {
                throw EngineConfigurationError(
                    message: "MQTT 5 reply topic '\(replyTopic)' must be a topic name without wildcards")
            }
            properties = MQTTEncodedProperties([
                .responseTopic(replyTopic), .correlationData(Self.bigEndianBytes(UInt32(stream))),
            ])
        }
        return RequestState(targetFleet: target.index, targetCount: target.configuration.count,
                            random: request.selection == .random, properties: properties)
    }

    static func bigEndianBytes(_ value: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
         UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    /// A subscriber's own delivery key (the stream id goes in the low 32 bits).
    static func subscriberDeliveryKey(_ global: Int) -> UInt64 { UInt64(global) << 32 }

    /// Top bit set: a shared group's key can never equal a client's (global indices stay far below 2^31).
    static let groupKeyTag: UInt64 = 1 << 63

    static func groupDeliveryKey(_ group: Int) -> UInt64 { groupKeyTag | UInt64(group) << 32 }

    /// The group and plain filters of a client whose subscriptions are all shared subscriptions of one group
    /// (`$share/{group}/{filter}`, 5.0 §4.8.2); nil otherwise. Such a client records every arrival under its
    /// group's key, with no per-message matching.
    ///
    /// A client that mixes shared and plain subscriptions, or subscribes to several groups
    /// (`splitSharedSubscriptions`), gets `DeliveryRoutes`: arrivals do not say which subscription brought them,
    /// so each arrival's topic is matched, plain filters first, then shared filters in subscription order. An
    /// arrival one of its plain filters matches goes to the client's own key; any other to the key of the first
    /// group whose filter matches, merged with that group's other members on every lane. Expected counts follow
    /// the same split: the plain filters per client, the shared filters joined to their group's filters,
    /// expected once per group. Clients without `DeliveryRoutes` match nothing per message.
    ///
    /// A stream one client matches with both a plain and a shared filter, or with filters of two groups, would
    /// reach it through either subscription and the topic cannot tell which: such a configuration is refused
    /// (`refuseAmbiguousRoutes`). MQTT 5 Subscription Identifiers would tell the copies apart; the engine does
    /// not set them.
    ///
    /// Group identity is the name alone; the broker identifies a shared subscription by name and filter, so
    /// members of one name with different filters that match the same stream would show duplicates.
    static func sharedGroup(of subscriptions: [MQTTSubscription]) -> (group: String, filters: [String])? {
        let split = splitSharedSubscriptions(subscriptions)
        guard let group = onlyGroup(split) else { return nil }
        return (group, split.shared.map(\.filter))
    }

    /// `refuseAmbiguousRoutes` for a configuration, without building anything else: what `fleetbench validate`
    /// checks so that a scenario the engine would refuse is refused before a run, with the same message.
    public static func refuseAmbiguousRoutes(_ configuration: EngineConfiguration) throws {
        var fleets: [FleetRuntime] = []
        var firstStream = 0
        for (index, fleet) in configuration.fleets.enumerated() {
            fleets.append(try FleetRuntime(index: index, configuration: fleet, firstStream: firstStream))
            firstStream += fleet.count * fleet.streams.count
        }
        try refuseAmbiguousRoutes(fleets: fleets, streamCount: firstStream)
    }

    /// Every client's subscriptions as the engine makes them (its own, a responder's command topic, a requester's
    /// reply filters) and every stream's topic, checked by `refuseAmbiguousRoutes`. Topics are rendered only when
    /// some client mixes plain and shared subscriptions or subscribes to several groups.
    static func refuseAmbiguousRoutes(fleets: [FleetRuntime], streamCount: Int) throws {
        var mixed: [(clientID: String, fleet: String, plain: [String], shared: [(group: String, filter: String)])] = []
        for fleet in fleets {
            let settings = fleet.configuration
            for index in 0..<settings.count {
                let clientID = settings.clientID(index)
                let split = splitSharedSubscriptions(fleet.subscriptions(of: index, clientID: clientID))
                if !split.shared.isEmpty, onlyGroup(split) == nil {
                    mixed.append((clientID, settings.name, split.plain.map(\.filter), split.shared))
                }
            }
        }
        guard !mixed.isEmpty else { return }
        var topics: [String] = Array(repeating: "", count: streamCount)
        var tracked: [Bool] = Array(repeating: true, count: streamCount)
        for fleet in fleets {
            let settings = fleet.configuration
            for index in 0..<settings.count {
                let clientID = settings.clientID(index)
                for (streamIndex, stream) in settings.streams.enumerated() {
                    let id = fleet.firstStream + index * settings.streams.count + streamIndex
                    topics[id] = stream.topic(index, clientID)
                    if case .text = stream.payload { tracked[id] = false }
                    if stream.request != nil { tracked[id] = false }
                }
            }
        }
        try refuseAmbiguousRoutes(mixed, topics: topics, tracked: tracked)
    }

    /// Refuses a client that would receive one accounted stream through two of its subscriptions: a plain filter
    /// and a shared one, or shared filters of two groups. The broker sends such a client a copy per subscription
    /// (mosquitto: 5.0 clients) or one copy (3.1.1), and nothing in the message says which subscription brought
    /// it, so the copies would be counted under the wrong subscriber (duplicates for one, losses for the other).
    /// MQTT 5 Subscription Identifiers could tell them apart; until the engine sets them, the run is refused
    /// with the client, the stream's topic and the two filters, before anything connects.
    static func refuseAmbiguousRoutes(
        _ clients: [(clientID: String, fleet: String, plain: [String], shared: [(group: String, filter: String)])],
        topics: [String], tracked: [Bool]
    ) throws {
        for client in clients {
            for (stream, topic) in topics.enumerated() where tracked[stream] {
                var routes: [String] = []
                if let plain = client.plain.first(where: { MQTTTopic.matches(filter: $0, topic: topic) }) {
                    routes.append("its filter '\(plain)'")
                }
                var groups: Set<String> = []
                for shared in client.shared where !groups.contains(shared.group)
                    && MQTTTopic.matches(filter: shared.filter, topic: topic) {
                    groups.insert(shared.group)
                    routes.append("its shared subscription '$share/\(shared.group)/\(shared.filter)'")
                }
                guard routes.count >= 2 else { continue }
                throw EngineConfigurationError(message: "client '\(client.clientID)' of fleet '\(client.fleet)' would receive "
                    + "topic '\(topic)' through both \(routes[0]) and \(routes[1]): the copies cannot be told apart, so "
                    + "its deliveries would be mis-counted; make each published topic match one subscription per client "
                    + "(narrow the plain filter, or subscribe the group from other clients)", fleet: client.fleet)
            }
        }
    }

    /// The group when every subscription is a shared one of the same group.
    static func onlyGroup(_ split: (plain: [MQTTSubscription], shared: [(group: String, filter: String)])) -> String? {
        guard split.plain.isEmpty, let group = split.shared.first?.group,
              split.shared.allSatisfy({ $0.group == group }) else { return nil }
        return group
    }

    /// A client's plain subscriptions, and its shared ones as (group, filter after `$share/{group}/`) in
    /// subscription order. A filter that does not parse as a shared subscription (`$share//a`) is plain, as the
    /// engine treats it everywhere else.
    static func splitSharedSubscriptions(_ subscriptions: [MQTTSubscription])
        -> (plain: [MQTTSubscription], shared: [(group: String, filter: String)]) {
        var plain: [MQTTSubscription] = []
        var shared: [(group: String, filter: String)] = []
        for subscription in subscriptions {
            if let parsed = try? MQTTTopicFilter(subscription.filter), let group = parsed.shareGroup {
                shared.append((group, parsed.filter))
            } else {
                plain.append(subscription)
            }
        }
        // Nothing shared: the plain filters are the input, kept as the same array (the engine keeps them for
        // every subscriber; a copy cost each vehicle a heap block).
        return (shared.isEmpty ? subscriptions : plain, shared)
    }

    /// How long after the start the plan itself starts its last first connect: a fleet's start offset plus its
    /// ramp (`over`, or count / rate) or, without a ramp, count / connect rate. The ready timeout counts from
    /// there, so a long ramp is not cut short and its late subscribers do not count the start as lost.
    public static func plannedConnectSpan(_ configuration: EngineConfiguration) -> UInt64 {
        var span: UInt64 = 0
        for fleet in configuration.fleets {
            var spread: Double = 0
            switch fleet.ramp {
            case .over(let duration)?: spread = Double(duration)
            case .rate(let perSecond)?: spread = Double(fleet.count) / perSecond * 1e9
            case nil: break
            }
            if let rate = fleet.connectRate, rate > 0 { spread = max(spread, Double(fleet.count) / rate * 1e9) }
            let end = fleet.startOffset &+ (spread.isFinite && spread > 0 ? UInt64(min(spread, 1e18)) : 0)
            span = max(span, end)
        }
        return span
    }

    /// The id written into this run's headers (the configuration's, or a random one when it gave none).
    public var runID: UInt64 { configuration.runID }

    /// A random, non-zero run id from the system's entropy source (0 marks a header without run id).
    public static func randomRunID() -> UInt64 {
        var value: UInt64 = 0
        while value == 0 {
            value = UInt64.random(in: 1...UInt64.max)
        }
        return value
    }

    /// Where a client of this segment sits: its lane and its position on the lane. A segment's clients are
    /// numbered in global order (global / segments) and dealt to lanes round-robin.
    /// Each lane's share of `maxConnectsInFlightPerBroker` for an address: the bound divided by the lanes and by
    /// the segments that connect to it. Clients are striped over segments (global index mod segments) and over
    /// the run's brokers (global index mod brokers), so segments / gcd(segments, brokers) segments share each
    /// of those (one each with as many workers as brokers); a fleet's own endpoints are counted as shared by
    /// every segment. At least 1.
    static func connectWindowShare(configuration: EngineConfiguration, laneCount: Int)
        -> (_ address: SocketAddress, _ viaEndpoint: Bool) -> Int {
        let bound = max(configuration.maxConnectsInFlightPerBroker, 1)
        let segments = max(configuration.segmentCount, 1)
        let brokers = max(configuration.brokers.count, 1)
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        let sharingBroker = segments / gcd(segments, brokers)
        let lanes = max(laneCount, 1)
        return { _, viaEndpoint in max(1, bound / (lanes * (viaEndpoint ? segments : sharingBroker))) }
    }

    static func location(_ global: Int, segments: Int, lanes: Int) -> (lane: Int, position: Int) {
        let local = global / max(segments, 1)
        return (local % lanes, local / lanes)
    }

    /// The topic of global stream `id`, made again from its fleet's configuration: keeping every stream's topic
    /// for the whole run cost each vehicle a string it is asked for only in rare reports.
    func streamTopic(_ id: Int) -> String {
        for fleet in fleets where id >= fleet.firstStream && id < fleet.firstStream + fleet.streamCount {
            let perClient = fleet.configuration.streams.count
            let client = (id - fleet.firstStream) / perClient
            return fleet.configuration.streams[(id - fleet.firstStream) % perClient]
                .topic(client, fleet.configuration.clientID(client))
        }
        return ""
    }

    /// Every global stream's topic, in stream id order.
    var streamTopics: [String] { streamTracked.indices.map(streamTopic) }

    /// The fleet of a global client index (clients are numbered fleet by fleet).
    func fleetOfGlobal(_ global: Int) -> Int {
        var first = 0
        for fleet in fleets {
            if global < first + fleet.configuration.count { return fleet.index }
            first += fleet.configuration.count
        }
        return max(fleets.count - 1, 0)
    }
}

/// A shared-subscription group: every client with a `$share/{name}/...` subscription (all-shared members and
/// members that also have plain filters or other groups alike).
struct ShareGroup {
    let name: String
    /// The filters (after `$share/{name}/`) of every member's `$share/{name}/` subscriptions, each once.
    var filters: [String]
    /// The fleet its delivery counts go to: the first member's.
    let fleet: Int
}

/// How a run's writes reached the kernel (`EngineConfiguration.batchedSends`).
public enum SendPath: String, Sendable, Equatable {
    /// One io_uring submission per lane turn for every connection written to.
    case ioUring = "io_uring"
    /// One send(2) per connection per turn.
    case send
    /// Some lanes (or part of the run) each way.
    case mixed = "io_uring+send"

    static func combined(_ paths: [SendPath]) -> SendPath {
        if paths.allSatisfy({ $0 == .ioUring }) && !paths.isEmpty { return .ioUring }
        if paths.allSatisfy({ $0 == .send }) { return .send }
        return .mixed
    }
}

/// The measurements a run and each of its fleets share: counters, latencies, delivery accounting, the
/// generator's lateness and the emulated network, each merged with its own `add`.
public struct EngineMeasurements: Sendable {
    /// Everything counted, from the lanes' `FleetLaneMetrics.counters` added up (report.json's connections,
    /// messages, ack timeouts, requests, offline, churn and transport errors, the generator's counts).
    public var counters = ClientCounters()
    public var latency = LatencyRecorder()
    /// Delivery accounting by the publishing stream's QoS: what the subscribers received (shared-subscription
    /// groups count once, for the fleet of their first member).
    public var delivery = PerQoS(repeating: DeliveryCounts())
    /// The most clients connected at once, across every lane.
    public var peakConnected = 0
    /// The generator's own lateness per message, µs (`FleetLaneMetrics.generatorLag`).
    public var generatorLag = HDRHistogram()
    /// Emulated network conditions (`Lane+Network`); zero without a `network` profile.
    public var network = NetworkCounters()

    public init() {}
}

/// The merged measurements of a run.
@dynamicMemberLookup
public struct EngineResult: Sendable {
    /// Over every fleet.
    public var total = EngineMeasurements()
    /// How the lanes' writes went out: one io_uring submission per turn, one send(2) per connection, or both
    /// (a lane's ring failed during the run and it fell back).
    public var sendPath = SendPath.send
    /// Why io_uring was not used although `EngineConfiguration.batchedSends` asked for it, e.g.
    /// "io_uring_setup failed: Operation not permitted (errno 1)" (a container's seccomp profile).
    public var sendRingUnavailable: String?
    /// How the lanes read (`EngineConfiguration.ringReceives`), and why the receive ring could not be used if asked for.
    public var receivePath = ReceivePath.epoll
    public var receiveRingUnavailable: String?
    /// Per fleet, by name: the same measurements restricted to that fleet's clients (delivery: what the fleet's
    /// subscribers received).
    public var fleets: [String: EngineFleetResult] = [:]
    /// One merged snapshot per second of the run (the last one may cover less than a second). Empty when the
    /// configuration's `keepsTimeline` is false (the snapshots went to `Engine.onSnapshot` only).
    public var timeline: [EngineSnapshot] = []
    /// The latencies of each second, merged over lanes and fleets (for latency.hlog); same seconds as `timeline`.
    /// Compacted histograms: roughly 10-30 KB per latency kind with samples per second. Empty when the
    /// configuration's `keepsIntervalLatencies` is false (long runs: encode each `EngineSnapshot.latency` as it
    /// arrives in `onSnapshot` instead).
    public var intervals: [LatencyInterval] = []
    /// The run's start (monotonic ns); interval and phase times are on the same clock.
    public var origin: UInt64 = 0
    public var phases = EnginePhaseTimes()
    /// Segmented runs: the delivery data `fleetbench merge` needs to settle accounting across segments.
    public var segment: SegmentDelivery?

    public init() {}

    /// `result.counters`, `result.latency`, ...: the run's total measurements.
    public subscript<Value>(dynamicMember path: WritableKeyPath<EngineMeasurements, Value>) -> Value {
        get { total[keyPath: path] }
        set { total[keyPath: path] = newValue }
    }
}

/// One fleet's share of a run.
@dynamicMemberLookup
public struct EngineFleetResult: Sendable {
    public var measurements = EngineMeasurements()
    /// The fleet's clients with a profile (⌊count × fraction⌋ for a single one).
    public var networkClients = 0
    /// Per profile of `EngineFleet.networks`, in its order: its clients and what their links did.
    public var networkProfiles: [(clients: Int, counters: NetworkCounters)] = []

    mutating func addNetwork(_ counters: NetworkCounters, profile: Int, profiles: Int) {
        if networkProfiles.count < profiles {
            networkProfiles += Array(repeating: (0, NetworkCounters()), count: profiles - networkProfiles.count)
        }
        networkProfiles[profile].clients += 1
        networkProfiles[profile].counters.add(counters)
        networkClients += 1
        measurements.network.add(counters)
    }

    public init() {}

    /// `fleet.counters`, `fleet.latency`, ...: the fleet's measurements.
    public subscript<Value>(dynamicMember path: WritableKeyPath<EngineMeasurements, Value>) -> Value {
        get { measurements[keyPath: path] }
        set { measurements[keyPath: path] = newValue }
    }
}

extension Lane {
    /// End of run: DISCONNECT every connected client, flush, close. Runs on the lane's queue.
    func stop() {
        stopping = true
        now = MonotonicClock.now()
        for client in clients.indices {
            wheel.cancelAll(client: client)
            if clients[client].phase == .connected { sayGoodbye(client) }
            // A client whose DISCONNECT could not be flushed was torn down by that failure already (finished:
            // the run is stopping); this one then only closes what is left.
            tearDown(client, clients[client].connection.runEnded())
            entitlementFinish(client)
        }
        dirty.removeAll()
    }
}
