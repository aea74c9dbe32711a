import Dispatch
import FleetMetrics
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession

/// Runs a fleet of simulated MQTT clients on a few lanes and returns what they measured.
///
/// Phases: connect every client (paced) and subscribe; once all are ready (or `readyTimeout` passed) every
/// publisher starts its schedule at once, so subscribers never miss the start of a stream and loss is exact;
/// publish for the given duration; drain what is still in flight; DISCONNECT and close; merge the lanes.
public final class Engine: @unchecked Sendable {
    public let configuration: EngineConfiguration
    let lanes: [Lane]
    let fleets: [FleetRuntime]
    /// Topic of every global stream id, and its QoS, for expected delivery counts.
    let streamTopics: [String]
    let streamQoS: [MQTTQoS]
    /// Filters of every subscriber, by global client index.
    let subscriberFilters: [(global: Int, filters: [MQTTSubscription])]
    private let readyGroup = DispatchGroup()

    public init(configuration: EngineConfiguration) throws {
        precondition(!configuration.brokers.isEmpty, "the engine needs at least one broker address")
        self.configuration = configuration
        let laneCount = configuration.lanes > 0 ? configuration.lanes : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        var fleets: [FleetRuntime] = []
        var firstStream = 0
        for (index, fleet) in configuration.fleets.enumerated() {
            fleets.append(FleetRuntime(index: index, configuration: fleet, firstStream: firstStream))
            firstStream += fleet.count * fleet.streams.count
        }
        self.fleets = fleets
        var perLane: [[SimulatedClient]] = Array(repeating: [], count: laneCount)
        var topics: [String] = Array(repeating: "", count: firstStream)
        var qos: [MQTTQoS] = Array(repeating: .atMostOnce, count: firstStream)
        var filters: [(Int, [MQTTSubscription])] = []
        var global = 0
        for fleet in fleets {
            let settings = fleet.configuration
            for index in 0..<settings.count {
                let clientID = settings.clientID(index)
                var streams: [StreamState] = []
                for (streamIndex, stream) in settings.streams.enumerated() {
                    let id = fleet.firstStream + index * settings.streams.count + streamIndex
                    let topic = stream.topic(index, clientID)
                    topics[id] = topic
                    qos[id] = stream.qos
                    streams.append(StreamState(
                        topic: try MQTTTopicName(topic), streamID: UInt32(id), qos: stream.qos, retain: stream.retain,
                        payloadSize: stream.payloadSize, schedule: nil, pending: nil))
                }
                let subscriptions = settings.subscriptions(index, clientID)
                if !subscriptions.isEmpty { filters.append((global, subscriptions)) }
                let brokers = configuration.brokers
                let sources = configuration.sourceAddresses
                perLane[global % laneCount].append(SimulatedClient(
                    fleet: fleet.index, indexInFleet: index, globalIndex: global,
                    broker: brokers[global % brokers.count],
                    source: sources.isEmpty ? nil : sources[global % sources.count],
                    session: MQTTClientSession(settings: settings.session, clientID: clientID),
                    subscriptions: subscriptions, streams: streams,
                    random: SeededRandom(seed: configuration.seed, stream: UInt64(global))))
                global += 1
            }
        }
        self.streamTopics = topics
        self.streamQoS = qos
        self.subscriberFilters = filters
        let start = MonotonicClock.now()
        self.lanes = try perLane.enumerated().map { index, clients in
            try Lane(index: index, fleets: fleets, clients: clients, configuration: configuration,
                     laneCount: laneCount, start: start)
        }
    }

    /// Connects everything, publishes for `duration` ns, drains and disconnects; blocks the calling thread
    /// (never call it from a lane). `shouldStop` is polled every 50 ms so a signal can end the run early.
    public func run(duration: UInt64, shouldStop: @escaping @Sendable () -> Bool = { false }) -> EngineResult {
        let streamCount = streamTopics.count
        for lane in lanes {
            readyGroup.enter()
            let group = readyGroup
            lane.onReady = { _ in group.leave() }
            lane.start(publishedStreams: streamCount)
        }
        let readyDeadline = MonotonicClock.now() &+ configuration.readyTimeout
        while readyGroup.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            if shouldStop() || MonotonicClock.now() >= readyDeadline { break }
        }
        for lane in lanes {
            lane.queue.async {
                lane.publishing = true
                for client in lane.clients.indices { lane.startPublishing(client) }
                lane.turn()
            }
        }
        let publishEnd = MonotonicClock.now() &+ duration
        while MonotonicClock.now() < publishEnd && !shouldStop() { usleep(50_000) }
        for lane in lanes { lane.queue.sync { lane.publishing = false } }
        drain()
        for lane in lanes { lane.queue.sync { lane.stop() } }
        return collect()
    }

    /// Waits until no QoS 1/2 message is in flight and deliveries stopped arriving (or the drain timeout).
    private func drain() {
        let deadline = MonotonicClock.now() &+ configuration.drainTimeout
        var lastReceived: UInt64 = .max
        while MonotonicClock.now() < deadline {
            var inFlight = 0
            var received: UInt64 = 0
            for lane in lanes {
                lane.queue.sync {
                    for client in lane.clients where client.phase == .connected {
                        inFlight += client.session.inFlightCount
                    }
                    received &+= lane.metrics.counters.received.total
                }
            }
            if inFlight == 0 && received == lastReceived { return }
            lastReceived = received
            usleep(100_000)
        }
    }

    private func collect() -> EngineResult {
        var result = EngineResult()
        var laneMetrics: [LaneMetrics] = []
        for lane in lanes { laneMetrics.append(lane.queue.sync { lane.metrics }) }
        var published = Array(repeating: UInt64(0), count: streamTopics.count)
        for metrics in laneMetrics {
            result.counters.add(metrics.counters)
            result.latency.add(metrics.latency)
            result.peakConnected += metrics.peakConnected
            result.foreignMessages += metrics.foreignMessages
            result.droppedSlots += metrics.droppedSlots
            result.abandonedPublishes += metrics.abandonedPublishes
            for (stream, count) in metrics.publishedPerStream.enumerated() { published[stream] += count }
        }
        // Expected deliveries: every (subscriber, stream) pair whose filters match the stream's topic expects
        // every message the stream published; a pair that received nothing still counts its loss.
        for (global, filters) in subscriberFilters {
            let lane = global % lanes.count
            let metrics = laneMetrics[lane]
            for stream in streamTopics.indices
            where filters.contains(where: { MQTTTopic.matches(filter: $0.filter, topic: streamTopics[stream]) }) {
                let key = UInt64(global) << 32 | UInt64(stream)
                let counts: DeliveryCounts
                if let dense = metrics.deliveryKeys[key] {
                    counts = metrics.delivery.counts(stream: dense, expected: published[stream])
                } else {
                    counts = DeliveryCounts(expected: published[stream])
                }
                result.delivery[Int(streamQoS[stream].rawValue)].add(counts)
            }
        }
        return result
    }
}

/// The merged measurements of a run.
public struct EngineResult: Sendable {
    public var counters = ClientCounters()
    public var latency = LatencyRecorder()
    /// Delivery accounting by the publishing stream's QoS (index 0, 1, 2).
    public var delivery = [DeliveryCounts(), DeliveryCounts(), DeliveryCounts()]
    public var peakConnected = 0
    public var foreignMessages: UInt64 = 0
    public var droppedSlots: UInt64 = 0
    public var abandonedPublishes: UInt64 = 0

    public init() {}
}

extension Lane {
    /// End of run: DISCONNECT every connected client, flush, close. Runs on the lane's queue.
    func stop() {
        stopping = true
        now = MonotonicClock.now()
        for client in clients.indices {
            wheel.cancelAll(client: client)
            if clients[client].phase == .connected {
                clients[client].session.disconnect(now: now, into: &scratch)
                stage(client)
                flush(client)
                metrics.counters.recordDisconnect(.clientInitiated)
                connected -= 1
            }
            closeSocket(client, abortive: false)
            clients[client].phase = .finished
        }
        dirty.removeAll()
    }
}
