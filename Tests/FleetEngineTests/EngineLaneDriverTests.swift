import FleetBroker
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// The dispatch-source driver is the fallback when a lane's driver thread cannot start: it must count exactly
/// like the thread driver, with and without batched sends.
@Suite("Engine: the dispatch-source lane driver", .serialized)
struct EngineLaneDriverTests {
    @Test("delivers every message exactly once, like the thread driver",
          arguments: [true, false], [MQTTQoS.atLeastOnce, .exactlyOnce])
    func dispatchSourceDriver(batchedSends: Bool, qos: MQTTQoS) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var configuration = try EngineTests.roundTripConfiguration(broker, qos: qos, lanes: 2)
        configuration.laneDriver = .dispatchSource
        configuration.batchedSends = batchedSends
        let engine = try Engine(configuration: configuration)
        let result = engine.run(duration: 1_000_000_000)
        #expect(engine.lanes.allSatisfy { $0.threadDriver == nil })
        EngineTests.expectExactRoundTrip(result, qos: qos)
        #expect(result.counters.ackTimeouts.total == 0)
        #expect(result.counters.disconnects == [.clientInitiated: 5])
    }
}
