import FleetMetrics
import FleetTestSupport
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// How a fake broker answers CONNECT, and the failure reason the engine must count for it.
struct ConnectFault: Sendable, CustomTestStringConvertible {
    let name: String
    let version: MQTTProtocolVersion
    let answer: [FakeBrokerAction]
    let reason: ConnectFailureReason
    var testDescription: String { name }

    static let all: [ConnectFault] = [
        // 3.1.1 §3.2.2.3 return code 5 (not authorized) arrives as the session's 5.0 reason code 0x87.
        ConnectFault(name: "3.1.1 CONNACK return code 5", version: .v3_1_1,
                     answer: [.sendBytes([0x20, 0x02, 0x00, 0x05])], reason: .connackRefused(code: 0x87)),
        ConnectFault(name: "5.0 CONNACK 0x87 not authorized", version: .v5,
                     answer: [.send(.connAck(MQTTConnAck(reasonCode: .notAuthorized)))],
                     reason: .connackRefused(code: 0x87)),
        ConnectFault(name: "5.0 CONNACK 0x89 server busy", version: .v5,
                     answer: [.send(.connAck(MQTTConnAck(reasonCode: .serverBusy)))],
                     reason: .connackRefused(code: 0x89)),
        ConnectFault(name: "closed with FIN before CONNACK", version: .v3_1_1, answer: [.close],
                     reason: .closedBeforeConnack),
        ConnectFault(name: "reset before CONNACK", version: .v3_1_1, answer: [.closeAbortively],
                     reason: .socketError(errno: ECONNRESET)),
        // §2.2.1: packet type 0 is reserved.
        ConnectFault(name: "malformed bytes before CONNACK", version: .v5, answer: [.sendBytes([0x00, 0x00])],
                     reason: .protocolError),
    ]
}

/// Connects that fail, counted by reason, with the reconnect policy's attempt limit honoured exactly.
@Suite("Engine connect failures against a fake broker", .serialized)
struct EngineConnectFailureTests {
    static let clients = 2
    /// Two immediate retries, then give up: 3 attempts per client.
    static let policy = ReconnectPolicy.immediateThenInterval(retries: 2, interval: 1_000_000, maxAttempts: 2)

    static func configuration(port: UInt16, version: MQTTProtocolVersion) throws -> EngineConfiguration {
        let fleet = EngineFleet(name: "unlucky", count: clients, clientID: { "unlucky-\($0)" },
                                session: MQTTSessionSettings(version: version, keepAliveSeconds: 30),
                                reconnect: policy)
        return EngineConfiguration(fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: port)],
                                   lanes: 2, readyTimeout: 3_000_000_000, drainTimeout: 0)
    }

    @Test("a failed connect is counted once per attempt under its reason", arguments: ConnectFault.all)
    func failedConnect(_ fault: ConnectFault) throws {
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .connect = packet { return fault.answer }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let result = try Engine(configuration: Self.configuration(port: broker.port, version: fault.version))
            .run(duration: 0)
        let counters = result.counters
        let attempts = UInt64(3 * Self.clients)
        #expect(counters.connectsAttempted == attempts)
        #expect(counters.connectsSucceeded == 0)
        #expect(counters.connectsFailed == attempts)
        #expect(counters.connectFailures == [fault.reason: attempts])
        // Retries of a client that never connected are not reconnects.
        #expect(counters.reconnects == 0)
        #expect(counters.disconnects.isEmpty)
        #expect(counters.ackTimeouts.total == 0)
        #expect(broker.connectionCount == Int(attempts))
    }

    @Test("nothing listening: every attempt is refused")
    func refused() throws {
        let broker = try FakeBroker()
        let port = broker.port
        broker.stop()
        let result = try Engine(configuration: Self.configuration(port: port, version: .v3_1_1)).run(duration: 0)
        let attempts = UInt64(3 * Self.clients)
        #expect(result.counters.connectsAttempted == attempts)
        #expect(result.counters.connectFailures == [.refused: attempts])
    }

    @Test("a 5.0 server DISCONNECT is counted by its reason code and the client reconnects")
    func serverDisconnect() throws {
        // The first two connections (one per client) are told "session taken over" (0x8E) in answer to their
        // SUBSCRIBE; the reconnected sessions subscribe again by themselves and are served normally.
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .subscribe = packet, connection < 2 {
                return [.send(.disconnect(MQTTDisconnect(reasonCode: .sessionTakenOver))), .close]
            }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let fleet = EngineFleet(
            name: "kicked", count: 2, clientID: { "kicked-\($0)" },
            session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30),
            subscriptions: { index, _ in [MQTTSubscription(filter: "kicked/\(index)", qos: .atLeastOnce)] },
            reconnect: .immediateThenInterval(retries: 1, interval: 1_000_000_000))
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 3_000_000_000, drainTimeout: 0)
        let result = try Engine(configuration: configuration).run(duration: 300_000_000)
        let counters = result.counters
        #expect(counters.connectsAttempted == 4)
        #expect(counters.connectsSucceeded == 4)
        #expect(counters.reconnects == 2)
        #expect(counters.disconnects == [.serverDisconnect(reasonCode: 0x8E): 2, .clientInitiated: 2])
        #expect(counters.ackTimeouts.total == 0)
    }
}
