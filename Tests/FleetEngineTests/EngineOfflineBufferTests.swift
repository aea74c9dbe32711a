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

    /// A car still in its tunnel when publishing stops (city-commute: cars inside the Richard-Strauss tunnel at the
    /// end of the plan): what came due since the cut stays in its buffer and is unsent at end, nothing is flushed
    /// after the end, and the drain waits for the car to come out and reconnect, because the QoS 1 messages in
    /// flight at the cut (200 ms each way on the emulated link) are resent then and acknowledged.
    @Test("a car offline when publishing ends: its backlog is unsent at end, every slot published or unsent; the drain waits for its reconnect and the acks of what was in flight at the cut")
    func offlineAtTheEnd() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let perCar = 60
        var configuration = try Self.configuration(port: broker.port, overflow: .dropOldest)
        configuration.fleets[0].streams[0].offline = OfflineBuffer(capacity: 100, overflow: .dropOldest)
        var link = EngineNetworkProfile()
        link.latencyUp = .fixed(200_000_000)
        link.latencyDown = .fixed(200_000_000)
        configuration.fleets[0].network = link
        configuration.drainTimeout = 10_000_000_000
        let engine = try Engine(configuration: configuration)
        let cutAt = SharedCount()
        // After 10 messages a car (of 60 due over 3 s), every car loses its link for 4 s: publishing ends at 3.5 s,
        // inside every outage, so the last slots all come due while the cars are offline.
        let outage: UInt64 = 4_000_000_000
        let result = EngineFaultTests.run(engine, duration: 3_500_000_000, afterPublished: UInt64(Self.cars * 10)) { engine in
            cutAt.set(Int(MonotonicClock.now()))
            if (try? engine.tunnel(fleet: "cars", fraction: 1, outage: outage...outage)) != Self.cars { cutAt.set(-1) }
        }
        #expect(cutAt.value > 0, "the tunnel did not cut every car")
        let cars = try #require(result.fleets["cars"])
        let backend = try #require(result.fleets["backend"])
        let counters = cars.counters
        let offline = counters.offline
        // Every slot is either published (before the cut) or still buffered at the end: no flush after the end.
        let published = counters.published[.atLeastOnce]
        #expect(published + counters.unsentAtEnd == UInt64(Self.cars * perCar),
                "published \(published), unsent at end \(counters.unsentAtEnd)")
        #expect(offline.buffered == counters.unsentAtEnd)
        #expect(offline.flushed == 0)
        #expect(offline.overflowed == 0)
        // The cut came after 10 of 60 per car and long before the schedule's 3 s were over.
        #expect(counters.unsentAtEnd >= UInt64(Self.cars * 20) && published >= UInt64(Self.cars * 10),
                "published \(published), unsent at end \(counters.unsentAtEnd)")
        // What was in flight at the cut was resent after the reconnect, in the drain, and acknowledged.
        #expect(counters.acked[.atLeastOnce] == published)
        #expect(counters.unackedAtEnd == PerQoSCounts())
        #expect(counters.ackTimeouts.total == 0)
        #expect(counters.abandonedPublishes == 0)
        #expect(counters.reconnects == UInt64(Self.cars))
        #expect(counters.disconnects == [.tunnel: UInt64(Self.cars), .clientInitiated: UInt64(Self.cars)])
        let puback = cars.latency.histogram(.puback, from: .intended)
        #expect(puback.totalCount == published)
        #expect(puback.max >= outage / 1_000, "no PUBACK waited through the outage: max \(puback.max) µs")
        // The drain lasted at least until the cars came back (4 s after the cut, 0.5 s or more after the end).
        let reconnected = UInt64(cutAt.value) + outage
        #expect(result.phases.publishEnd < reconnected)
        #expect(result.phases.drainEnd >= reconnected, "drain ended \(Int64(reconnected) - Int64(result.phases.drainEnd)) ns before the reconnect")
        // The backend is owed exactly what was published, and got it.
        let delivery = backend.delivery[1]
        #expect(delivery.expected == published)
        #expect(delivery.unique == published)
        #expect(delivery.lost == 0)
    }
}
