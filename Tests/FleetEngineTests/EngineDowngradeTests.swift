import FleetBroker
import FleetMetrics
import FleetTestSupport
import FleetTransport
import Foundation
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// A broker granting less than asked is counted per kind, never passed silently: SUBACK with a lower QoS or a
/// refusal, PUBACK where a PUBREC was due, CONNACK refusing credentials or the protocol version, and the clients
/// that never got connected at all. mosquitto where it can do it (credentials, `max_qos`); the fake broker for
/// what mosquitto never does (a PUBACK to QoS 2, a refused protocol version, a refused filter).
@Suite("Engine: downgrades and refusals counted per kind", .serialized)
struct EngineDowngradeTests {
    static func address(_ port: UInt16) throws -> SocketAddress { try SocketAddress(ipAddress: "127.0.0.1", port: port) }

    /// Runs `fleets` against `port` for `duration` and returns the merged result.
    static func run(_ fleets: [EngineFleet], port: UInt16, duration: UInt64) throws -> EngineResult {
        let configuration = EngineConfiguration(fleets: fleets, brokers: [try address(port)], lanes: 1,
                                                readyTimeout: 3_000_000_000, drainTimeout: 1_000_000_000)
        return try Engine(configuration: configuration).run(duration: duration)
    }

    /// mosquitto with one user (`alice` / `secret`) and no anonymous access.
    static func brokerWithPasswords() throws -> (MosquittoBroker, String) {
        var template = Array("/tmp/fleetbench-passwords-XXXXXX".utf8CString)
        let directory = try template.withUnsafeMutableBufferPointer { buffer -> String in
            guard let made = mkdtemp(buffer.baseAddress!) else { throw SystemError(call: "mkdtemp", errno: errno) }
            return String(cString: made)
        }
        let file = directory + "/passwords"
        try MosquittoPasswordFile.create(at: file, user: "alice", password: "secret")
        var configuration = MosquittoConfiguration()
        configuration.passwordFile = file
        return (try MosquittoBroker(configuration: configuration), directory)
    }

    @Test("mosquitto refusing a wrong password: 3 clients refused under one CONNACK code, never connected; 2 accepted",
          arguments: [MQTTProtocolVersion.v3_1_1, .v5])
    func wrongPassword(_ version: MQTTProtocolVersion) throws {
        let (broker, directory) = try Self.brokerWithPasswords()
        defer {
            broker.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        func fleet(_ name: String, count: Int, password: String) -> EngineFleet {
            EngineFleet(name: name, count: count, clientID: { "\(name)-\($0)" },
                        session: MQTTSessionSettings(version: version, keepAliveSeconds: 30, username: "alice",
                                                     password: Array(password.utf8)))
        }
        let result = try Self.run([fleet("wrong", count: 3, password: "guess"), fleet("right", count: 2, password: "secret")],
                                  port: broker.port, duration: 200_000_000)
        // mosquitto 2.0 answers a wrong password with "not authorized" in both versions: 3.1.1 return code 5
        // and 5.0 reason code 0x87, both reported as 0x87.
        #expect(result.counters.connectFailures == [.connackRefused(code: 0x87): 3])
        #expect(result.counters.connectsSucceeded == 2)
        #expect(result.counters.neverConnected == 3)
        #expect(result.fleets["wrong"]?.counters.neverConnected == 3)
        #expect(result.fleets["right"]?.counters.neverConnected == 0)
    }

    @Test("mosquitto with max_qos 1: every filter asked at QoS 2 is counted as granted lower, none refused")
    func maxQoSOne() throws {
        var configuration = MosquittoConfiguration()
        configuration.extraLines = ["max_qos 1"]
        let broker = try MosquittoBroker(configuration: configuration)
        defer { broker.stop() }
        let fleet = EngineFleet(
            name: "listeners", count: 3, clientID: { "listener-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30),
            subscriptions: { index, _ in
                [MQTTSubscription(filter: "a/\(index)", options: MQTTSubscriptionOptions(qos: .exactlyOnce)),
                 MQTTSubscription(filter: "b/\(index)", options: MQTTSubscriptionOptions(qos: .atLeastOnce)),
                 MQTTSubscription(filter: "c/\(index)", options: MQTTSubscriptionOptions(qos: .exactlyOnce))]
            })
        let result = try Self.run([fleet], port: broker.port, duration: 100_000_000)
        #expect(result.counters.connectsSucceeded == 3)
        #expect(result.counters.subscriptionsDowngraded == 6)
        #expect(result.counters.subscriptionsRefused == 0)
        #expect(result.counters.neverConnected == 0)
    }

    @Test("a fake broker refusing one filter of two (0x80) and granting the other QoS 0 of 1")
    func refusedFilter() throws {
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .subscribe(let subscribe) = packet {
                return [.send(.subAck(MQTTSubAck(packetID: subscribe.packetID, reasonCodes: [.unspecifiedError, .success])))]
            }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let fleet = EngineFleet(
            name: "listeners", count: 2, clientID: { "listener-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30),
            subscriptions: { _, _ in
                [MQTTSubscription(filter: "x", options: MQTTSubscriptionOptions(qos: .atLeastOnce)),
                 MQTTSubscription(filter: "y", options: MQTTSubscriptionOptions(qos: .atLeastOnce))]
            })
        let result = try Self.run([fleet], port: broker.port, duration: 100_000_000)
        #expect(result.counters.subscriptionsRefused == 2)
        #expect(result.counters.subscriptionsDowngraded == 2)
    }

    @Test("QoS 2 PUBLISH answered with PUBACK (run as QoS 1): counted per message, not acked at QoS 2, window freed")
    func pubAckForQoS2() throws {
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .publish(let publish) = packet, publish.qos == .exactlyOnce {
                return [.send(.pubAck(MQTTPubAck(packetID: publish.packetID)))]
            }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        // 12 messages through a window of 4: a PUBACK that did not free the slot would stall after 4.
        let stream = EngineStream(topic: { _, _ in "q2" }, qos: .exactlyOnce, plan: .rate(perSecond: 1_000),
                                  messageLimit: 12)
        let fleet = EngineFleet(name: "publishers", count: 1, clientID: { "pub-\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30, inFlightWindow: 4),
                                streams: [stream])
        let result = try Self.run([fleet], port: broker.port, duration: 300_000_000)
        #expect(result.counters.published[.exactlyOnce] == 12)
        #expect(result.counters.qos2AckedAsQoS1 == 12)
        #expect(result.counters.acked[.exactlyOnce] == 0)
        #expect(result.counters.ackTimeouts.total == 0)
        #expect(result.counters.abandonedPublishes == 0)
    }

    @Test("3.1.1 CONNACK return code 1 (unacceptable protocol version): reported as 0x84, both clients never connected")
    func protocolVersionRefused() throws {
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .connect = packet { return [.sendBytes([0x20, 0x02, 0x00, 0x01])] }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let fleet = EngineFleet(name: "old", count: 2, clientID: { "old-\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30))
        let result = try Self.run([fleet], port: broker.port, duration: 0)
        #expect(result.counters.connectFailures == [.connackRefused(code: 0x84): 2])
        #expect(result.counters.neverConnected == 2)
    }
}
