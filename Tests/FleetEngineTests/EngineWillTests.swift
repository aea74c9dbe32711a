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

/// Wills against a real mosquitto: published when a connection is cut, not when a client says goodbye.
@Suite("Engine wills against mosquitto", .serialized)
struct EngineWillTests {
    /// The engine has no public way to cut one client's connection, so the test reaches into the lane (the
    /// test target imports FleetEngine with @testable) and does on the lane's queue what a reset does: close
    /// the socket with RST (SO_LINGER 0) and hand the loss to the lane. mosquitto sees a reset without
    /// DISCONNECT and must publish the will.
    static func cutAbortively(_ engine: Engine, globalClient: Int) {
        let lane = engine.lanes[globalClient % engine.lanes.count]
        let client = globalClient / engine.lanes.count
        lane.queue.sync {
            lane.now = MonotonicClock.now()
            lane.closeSocket(client, abortive: true)
            lane.connectionLost(client, reason: .socketError(errno: ECONNRESET))
        }
    }

    /// Polls (every 20 ms, at most 5 s) until every client of every lane is connected and ready.
    static func waitUntilReady(_ engine: Engine) -> Bool {
        for _ in 0..<250 {
            let ready = engine.lanes.allSatisfy { lane in
                lane.queue.sync { lane.clients.allSatisfy { $0.phase == .connected && $0.isReady } }
            }
            if ready { return true }
            usleep(20_000)
        }
        return false
    }

    @Test("a cut connection's will reaches the subscriber; a client that disconnects normally leaves none",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func willOnAbortiveCut(version: MQTTProtocolVersion) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let will = MQTTWill(topic: "wills/car", payload: Array("car lost".utf8), qos: .atLeastOnce)
        let cars = EngineFleet(name: "cars", count: 2, clientID: { "car-\($0)" },
                               session: MQTTSessionSettings(version: version, keepAliveSeconds: 30, will: will))
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" },
            session: MQTTSessionSettings(version: version, keepAliveSeconds: 30),
            subscriptions: { _, _ in [MQTTSubscription(filter: "wills/#", qos: .atLeastOnce)] })
        // Global clients: 0 and 1 are the cars, 2 is the backend. Car 0 is cut once everyone is subscribed.
        let configuration = EngineConfiguration(
            fleets: [cars, backend], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 2, readyTimeout: 5_000_000_000, drainTimeout: 1_000_000_000)
        let engine = try Engine(configuration: configuration)
        let cutter = DispatchGroup()
        cutter.enter()
        let readyBeforeCut = SharedFlag()
        TestThread.start {
            if Self.waitUntilReady(engine) {
                readyBeforeCut.set()
                Self.cutAbortively(engine, globalClient: 0)
            }
            cutter.leave()
        }
        let result = engine.run(duration: 1_000_000_000)
        #expect(cutter.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(readyBeforeCut.value)

        let counters = result.counters
        #expect(counters.connectsSucceeded == 3)
        #expect(counters.disconnects == [.socketError(errno: ECONNRESET): 1, .clientInitiated: 2])
        // Exactly one will: car 0's. It carries no end-to-end header, so it is counted as a foreign message.
        #expect(counters.arrived[.atLeastOnce] == 1)
        #expect(counters.arrived.total == 1)
        #expect(counters.received.total == 0)
        #expect(result.counters.foreignMessages == 1)
    }
}

/// A flag set on one thread and read on another.
final class SharedFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var value: Bool { flag.withLock { $0 } }
}
