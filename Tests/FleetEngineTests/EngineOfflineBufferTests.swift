import FleetBroker
import FleetMetrics
import FleetTestSupport
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Store and forward while offline (`EngineStream.offline`), against a real mosquitto with the link cut by the
/// engine's tunnel fault: what came due offline is buffered up to the capacity, the rest overflows, the backlog
/// goes out after the reconnect with its intended times, and the delivery accounting stays exact.
@Suite("Engine: offline store-and-forward against mosquitto", .serialized)
struct EngineOfflineBufferTests {
    static let cars = 4
    static let perCar = 60
    static let capacity = 5

    static func configuration(port: UInt16, overflow: OfflineBuffer.Overflow) throws -> EngineConfiguration {
        // Persistent sessions: a QoS 1 message in flight at the cut is retransmitted, so nothing is lost to the
        // cut itself and every count below is exact.
        var telemetry = EngineStream(topic: { _, id in "cars/\(id)" }, qos: .atLeastOnce,
                                     plan: .interval(period: 50_000_000), payloadSize: 64,
                                     messageLimit: UInt64(perCar))
        telemetry.offline = OfflineBuffer(capacity: capacity, overflow: overflow)
        let cars = EngineFleet(
            name: "cars", count: cars, clientID: { "car-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, cleanStart: false, keepAliveSeconds: 30),
            streams: [telemetry], reconnect: .immediateThenInterval(retries: 5, interval: 1_000_000_000))
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30),
            subscriptions: { _, _ in [MQTTSubscription(filter: "cars/+", qos: .atLeastOnce)] })
        return EngineConfiguration(
            fleets: [cars, backend], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: port)],
            lanes: 2, seed: 5, readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
    }

    @Test("a 1 s outage at 20 messages/s: each car buffers what came due, keeps 5, flushes them; published and delivered agree exactly",
          arguments: [OfflineBuffer.Overflow.dropOldest, .dropNewest])
    func bufferAndFlush(overflow: OfflineBuffer.Overflow) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let engine = try Engine(configuration: try Self.configuration(port: broker.port, overflow: overflow))
        let cut = SharedCount()
        // Once the cars published 10 messages each (half a second at 20/s), every car loses its link for exactly one second.
        let result = EngineFaultTests.run(engine, duration: 4_500_000_000, afterPublished: UInt64(Self.cars * 10)) { engine in
            cut.set((try? engine.tunnel(fleet: "cars", fraction: 1, outage: 1_000_000_000...1_000_000_000)) ?? -1)
        }
        #expect(cut.value == Self.cars)
        let cars = try #require(result.fleets["cars"])
        let backend = try #require(result.fleets["backend"])
        let offline = cars.counters.offline
        // One second at 20 a second: about 20 slots per car came due while it was offline.
        #expect(offline.buffered >= UInt64(Self.cars * 18), "buffered \(offline.buffered)")
        #expect(offline.buffered <= UInt64(Self.cars * 24), "buffered \(offline.buffered)")
        // Each car keeps its 5 and sends them; the rest overflowed.
        #expect(offline.flushed == UInt64(Self.cars * Self.capacity))
        #expect(offline.overflowed == offline.buffered - UInt64(Self.cars * Self.capacity))
        // Overflowed slots are never published; everything else is, and arrives exactly once as owed.
        let published = UInt64(Self.cars * Self.perCar) - offline.overflowed
        #expect(cars.counters.published == PerQoSCounts(qos0: 0, qos1: published))
        #expect(cars.counters.unsentAtEnd == 0)
        #expect(cars.counters.droppedSlots == 0)
        let delivery = backend.delivery[1]
        #expect(delivery.expected == published)
        #expect(delivery.unique == published)
        #expect(delivery.lost == 0)
        // The messages keep their intended time: with drop_newest the oldest survive, a second old at the flush.
        let worst = backend.latency.histogram(.endToEnd, from: .intended).max
        if overflow == .dropNewest {
            #expect(worst >= 900_000, "max end-to-end \(worst) µs")
        }
        #expect(cars.counters.disconnects[.tunnel] == UInt64(Self.cars))
    }
}
