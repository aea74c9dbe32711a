import FleetMetrics
import FleetTestSupport
import FleetTransport
import Foundation
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// A fake broker that holds every CONNACK until `bound` CONNECTs wait (or every client has sent one), then answers
/// the oldest 100 ms later: long enough for a connect beyond the bound to arrive and be seen.
private final class SlowAcceptor: @unchecked Sendable {
    let bound: Int
    let clients: Int
    private let lock = NSLock()
    private var pending: [Int] = []
    private var received = 0
    private var answering = false
    private(set) var maxPending = 0
    weak var broker: FakeBroker?

    init(bound: Int, clients: Int) {
        self.bound = bound
        self.clients = clients
    }

    var peak: Int { lock.withLock { maxPending } }

    func connected(_ connection: Int) {
        lock.withLock {
            pending.append(connection)
            received += 1
            maxPending = max(maxPending, pending.count)
            answerLaterIfDue()
        }
    }

    /// Under the lock.
    private func answerLaterIfDue() {
        guard !answering, !pending.isEmpty, pending.count >= bound || received == clients else { return }
        answering = true
        TestThread.after(.milliseconds(100)) { [self] in
            let connection: Int = lock.withLock {
                answering = false
                return pending.removeFirst()
            }
            _ = broker?.send(.send(.connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success))),
                             toConnection: connection)
            lock.withLock { answerLaterIfDue() }
        }
    }
}

@Suite("Engine connects in flight per broker address", .serialized)
struct EngineConnectWindowTests {
    @Test("never more connects in flight to one broker than max_connects_in_flight_per_broker, and every client connects")
    func boundHeld() throws {
        let clients = 10
        let acceptor = SlowAcceptor(bound: 3, clients: clients)
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .connect = packet {
                acceptor.connected(connection)
                return []
            }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        acceptor.broker = broker
        defer { broker.stop() }
        // The fleet's own cap (64) is far above: the per-broker bound is what holds.
        let fleet = EngineFleet(name: "held", count: clients, clientID: { "held-\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30))
        var configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: 20_000_000_000, drainTimeout: 0)
        configuration.maxConnectsInFlightPerBroker = 3
        let result = try Engine(configuration: configuration).run(duration: 0)
        #expect(acceptor.peak == 3)
        #expect(result.counters.connectsAttempted == UInt64(clients))
        #expect(result.counters.connectsSucceeded == UInt64(clients))
        #expect(result.counters.connectsFailed == 0)
        // Loopback with a broker that accepts at once: nothing was sent again, the bound never halved.
        #expect(result.counters.connectsRetransmitted == 0)
        #expect(result.counters.connectWindowDecreases == 0)
        #expect(broker.connectionCount == clients)
    }
}
