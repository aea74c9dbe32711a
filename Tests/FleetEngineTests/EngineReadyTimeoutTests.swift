import FleetBroker
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// The start barrier's deadline follows the plan: the ready timeout counts from the moment the plan's last first
/// connect was due (start offsets, ramps, connect rates), not from the start of the run, so a long ramp is never
/// cut short and its late subscribers are not owed (or counted lost for) what was published before they could be.
@Suite("Engine ready timeout after the planned connects", .serialized)
struct EngineReadyTimeoutTests {
    static let second: UInt64 = 1_000_000_000
    static let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0)

    static func fleet(_ name: String, count: Int, ramp: ConnectRamp? = nil, connectRate: Double? = nil,
                      startOffset: UInt64 = 0) -> EngineFleet {
        var fleet = EngineFleet(name: name, count: count, clientID: { "\(name)-\($0)" }, session: settings,
                                connectRate: connectRate)
        fleet.ramp = ramp
        fleet.startOffset = startOffset
        return fleet
    }

    static func span(_ fleets: [EngineFleet]) throws -> UInt64 {
        Engine.plannedConnectSpan(EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1883)]))
    }

    @Test("the planned connect span: start offset plus the ramp or count / connect rate, the latest over the fleets")
    func plannedSpan() throws {
        // Nothing planned: every client connects at once at the start.
        #expect(try Self.span([Self.fleet("now", count: 1_000)]) == 0)
        // A ramp over 2 s, begun 1 s into the run.
        let over = Self.fleet("over", count: 10, ramp: .over(duration: 2 * Self.second), startOffset: Self.second)
        #expect(try Self.span([over]) == 3 * Self.second)
        // 100 clients at 25 a second: 4 s.
        let rated = Self.fleet("rated", count: 100, ramp: .rate(perSecond: 25))
        #expect(try Self.span([rated]) == 4 * Self.second)
        // 50 clients paced at 10 connects a second take 5 s, longer than their 1 s ramp.
        let paced = Self.fleet("paced", count: 50, ramp: .over(duration: Self.second), connectRate: 10)
        #expect(try Self.span([paced]) == 5 * Self.second)
        // A connect rate alone, after a start offset.
        let late = Self.fleet("late", count: 30, connectRate: 20, startOffset: 500_000_000)
        #expect(try Self.span([late]) == 2 * Self.second)
        // The latest fleet decides.
        #expect(try Self.span([over, rated, paced, late]) == 5 * Self.second)
        #expect(try Self.span([late, over]) == 3 * Self.second)
    }

    @Test("a client that never gets ready: publishing starts the ready timeout after the ramp's last connect, not after the start")
    func readyDeadlineAfterRamp() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        // Client 1 connects to a peer that accepts TCP and never answers CONNECT, so the barrier waits for its
        // deadline. The ramp spreads 2 clients over 800 ms (client 1 starts at 400 ms); the plan's connects end
        // at 800 ms and the ready timeout of 300 ms counts from there: publishing starts at 1.1 s, not 0.3 s.
        let silent = try TCPListener.listen(on: try SocketAddress(ipAddress: "127.0.0.1", port: 0), backlog: 4)
        defer { try? silent.close() }
        var fleet = Self.fleet("ramped", count: 2, ramp: .over(duration: 800_000_000))
        fleet.streams = [EngineStream(topic: { index, _ in "ready/\(index)" }, qos: .atMostOnce,
                                      plan: .rate(perSecond: 100), payloadSize: 64, messageLimit: 1)]
        let configuration = EngineConfiguration(
            fleets: [fleet],
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port),
                      try SocketAddress(ipAddress: "127.0.0.1", port: try silent.localAddress().port)],
            lanes: 1, readyTimeout: 300_000_000, drainTimeout: 100_000_000)
        let result = try Engine(configuration: configuration).run(duration: 100_000_000)
        let waited = result.phases.publishStart - result.phases.connectStart
        #expect(result.phases.allReady == nil)
        #expect(waited >= 1_100_000_000)
        #expect(waited < 2_100_000_000)
        // Client 0 published its one message once publishing began.
        #expect(result.counters.published.qos0 == 1)
    }
}
