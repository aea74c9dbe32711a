import Dispatch
import FleetBroker
import FleetTestSupport
import FleetTransport
import MQTTCodec
@testable import MQTTSession
import Synchronization
import Testing
@testable import FleetEngine

/// What an idle vehicle keeps between its messages (docs/scaling.md, "Per GiB"): no outbound block (the lane
/// lends one per flush) and, with a clean start, no retransmission copy.
@Suite("Engine: what idle publishing vehicles keep between messages", .serialized)
struct EngineIdleMemoryTests {
    struct Held: Sendable, Equatable {
        var lent = 0
        var capacities: [Int] = []
        var storedCapacities: [Int] = []
        var pooled = 0
    }

    @Test("20 vehicles publishing QoS 1 every 300 ms: between messages none holds an outbound block or a stored copy")
    func nothingHeldBetweenMessages() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let clients = 20
        let stream = EngineStream(topic: { _, id in "vehicles/\(id)/telemetry" }, qos: .atLeastOnce,
                                  plan: .interval(period: 300_000_000), payloadSize: 200)
        let fleet = EngineFleet(
            name: "vehicles", count: clients, clientID: { "veh-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 60),
            subscriptions: { _, id in [MQTTSubscription(filter: "vehicles/\(id)/cmd", qos: .atLeastOnce)] },
            streams: [stream])
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: 10_000_000_000)
        let engine = try Engine(configuration: configuration)
        let lane = engine.lanes[0]
        #expect(lane.clients.allSatisfy { $0.outbound.pool === lane.outboundBlocks })
        let held = Mutex<Held?>(nil)
        engine.onPublishStart = {
            // Between two slots (0, 300, 600 ms after the start of publishing): every message so far is flushed.
            TestThread.after(.milliseconds(450)) {
                let seen = lane.queue.sync {
                    Held(lent: lane.outboundBlocks.lent, capacities: lane.clients.map(\.outbound.capacity),
                         storedCapacities: lane.clients.map { $0.session.outbound.storedBytes.capacity },
                         pooled: lane.outboundBlocks.freeCount)
                }
                held.withLock { $0 = seen }
            }
        }
        let result = engine.run(duration: 1_000_000_000)
        #expect(result.counters.ackTimeouts.total == 0)
        let seen = try #require(held.withLock { $0 })
        #expect(seen.lent == 0)
        #expect(seen.capacities == Array(repeating: 0, count: clients))
        #expect(seen.storedCapacities == Array(repeating: 0, count: clients))
        // Blocks went round: at most one per client was ever needed at once, and the pool keeps them for reuse.
        #expect((1...clients).contains(seen.pooled))
    }
}
