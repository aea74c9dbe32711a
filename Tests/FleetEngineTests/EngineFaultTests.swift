import Dispatch
import FleetBroker
import FleetMetrics
import FleetTestSupport
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession
import Synchronization
import Testing
@testable import FleetEngine

/// Tunnel and churn faults on running clients, against a real mosquitto: exact cut, reconnect and will counts.
@Suite("Engine faults against mosquitto", .serialized)
struct EngineFaultTests {
    static func configuration(version: MQTTProtocolVersion, port: UInt16) throws -> EngineConfiguration {
        let will = MQTTWill(topic: "wills/car", payload: Array("offline".utf8), qos: .atLeastOnce)
        let cars = EngineFleet(
            name: "cars", count: 10, clientID: { "car-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30, will: will),
            reconnect: .immediateThenInterval(retries: 5, interval: 4_000_000_000))
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30),
            subscriptions: { _, _ in [MQTTSubscription(filter: "wills/#", qos: .atLeastOnce)] })
        return EngineConfiguration(
            fleets: [cars, backend], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: port)],
            lanes: 2, seed: 7, readyTimeout: 5_000_000_000, drainTimeout: 1_000_000_000)
    }

    /// Runs the engine for `duration` ns and applies `fault` from another thread once everyone is ready.
    /// Runs `engine` and applies `fault` once every client is ready and the streams together have published at
    /// least `afterPublished` messages (`Engine.publishedSoFar`, polled every millisecond for at most 10 s): the
    /// fault lands at the same point of the run however loaded the machine is, where a sleep would not.
    static func run(
        _ engine: Engine, duration: UInt64, afterPublished: UInt64, fault: @escaping @Sendable (Engine) -> Void
    ) -> EngineResult {
        run(engine, duration: duration) { engine in
            let deadline = MonotonicClock.now() + 10_000_000_000
            while engine.publishedSoFar < afterPublished && MonotonicClock.now() < deadline { usleep(1_000) }
            fault(engine)
        }
    }

    static func run(_ engine: Engine, duration: UInt64, fault: @escaping @Sendable (Engine) -> Void) -> EngineResult {
        let faulted = DispatchGroup()
        faulted.enter()
        TestThread.start {
            if EngineWillTests.waitUntilReady(engine) { fault(engine) }
            faulted.leave()
        }
        let result = engine.run(duration: duration)
        _ = faulted.wait(timeout: .now() + .seconds(10))
        return result
    }

    @Test("a tunnel over half of 10 clients cuts exactly 5, each reconnects once, and 5 wills arrive",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func tunnelHalf(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let engine = try Engine(configuration: try Self.configuration(version: version, port: broker.port))
        let cut = SharedCount()
        let result = Self.run(engine, duration: 1_500_000_000) { engine in
            cut.set((try? engine.tunnel(fleet: "cars", fraction: 0.5, outage: 100_000_000...300_000_000)) ?? -1)
        }
        #expect(cut.value == 5)
        let cars = try #require(result.fleets["cars"])
        let backend = try #require(result.fleets["backend"])
        #expect(cars.counters.disconnects == [.tunnel: 5, .clientInitiated: 10])
        #expect(cars.counters.reconnects == 5)
        #expect(cars.counters.connectsSucceeded == 15)
        #expect(cars.counters.connectsFailed == 0)
        #expect(backend.counters.arrived[.atLeastOnce] == 5)
        #expect(backend.counters.received.total == 0)
        #expect(backend.counters.foreignMessages == 5)
        #expect(backend.counters.disconnects == [.clientInitiated: 1])
    }

    @Test("churn at 10/s for 0.5 s disconnects exactly 5 clients cleanly: 5 reconnects, no will")
    func churnCleanly() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let engine = try Engine(configuration: try Self.configuration(version: .v5, port: broker.port))
        let planned = SharedCount()
        let result = Self.run(engine, duration: 1_500_000_000) { engine in
            planned.set((try? engine.churn(fleet: "cars", ratePerSecond: 10, duration: 500_000_000)) ?? -1)
        }
        #expect(planned.value == 5)
        let cars = try #require(result.fleets["cars"])
        #expect(cars.counters.disconnects == [.churn: 5, .clientInitiated: 10])
        #expect(cars.counters.reconnects == 5)
        #expect(cars.counters.connectsSucceeded == 15)
        #expect(cars.counters.churnSkipped == 0)
        #expect(result.fleets["backend"]?.counters.received.total == 0)
    }

    @Test("fault calls name the problem: unknown fleet, fraction out of range, rate not positive")
    func faultErrors() throws {
        let configuration = try Self.configuration(version: .v5, port: 1)
        let engine = try Engine(configuration: configuration)
        #expect(throws: EngineFaultError(message: "no fleet named 'trucks' (fleets: 'cars', 'backend')")) {
            try engine.tunnel(fleet: "trucks", fraction: 0.5, outage: 0...1)
        }
        #expect(throws: EngineFaultError(message: "tunnel fraction must be in 0...1, got 1.5")) {
            try engine.tunnel(fleet: "cars", fraction: 1.5, outage: 0...1)
        }
        #expect(throws: EngineFaultError(message: "churn rate must be greater than 0, got 0.0")) {
            try engine.churn(fleet: "cars", ratePerSecond: 0, duration: 1_000_000_000)
        }
    }
}

/// An integer set on one thread and read on another.
final class SharedCount: Sendable {
    private let storage = Synchronization.Mutex(0)
    func set(_ value: Int) { storage.withLock { $0 = value } }
    var value: Int { storage.withLock { $0 } }
}
