import FleetMetrics
import FleetTestSupport
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Bytes no well-behaved broker sends, named for the rule they break.
struct MalformedInput: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    var testDescription: String { name }

    static let all: [MalformedInput] = [
        // MQTT 3.1.1 §3.3.1.2: QoS bits 11 are reserved; a PUBLISH carrying them is malformed.
        MalformedInput(name: "PUBLISH with QoS 3", bytes: [0x36, 0x05, 0x00, 0x01, 0x61, 0x00, 0x01]),
        // §2.2.3: the remaining length takes at most 4 bytes; a fifth continuation is malformed.
        MalformedInput(name: "remaining length over 4 bytes", bytes: [0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),
        // §2.2.1: packet type 0 is reserved.
        MalformedInput(name: "reserved packet type 0", bytes: [0x00, 0x00]),
        // §3.2: CONNACK is the first packet from the server and only that; a second one violates the protocol.
        MalformedInput(name: "second CONNACK", bytes: [0x20, 0x02, 0x00, 0x00]),
    ]
}

/// Malformed or unfinished input from the broker: only the client that got it is affected, with a clear reason.
@Suite("Engine against malformed and unfinished broker input", .serialized)
struct EngineMalformedInputTests {
    static let clients = 4
    static let victim = 2
    static let messagesPerClient: UInt64 = 10

    /// The standard answer, except that the victim's third PUBLISH is answered with `bytes` instead of PUBACK.
    static func behaviour(sending bytes: [UInt8]) -> FakeBroker.Behaviour {
        { connection, packet, version in
            if case .publish(let publish) = packet, publish.topic == "faults/\(victim)", publish.packetID == 3 {
                return [.sendBytes(bytes)]
            }
            return FakeBroker.standardResponse(connection, packet, version)
        }
    }

    static func configuration(port: UInt16, timeouts: MQTTAckTimeouts = MQTTAckTimeouts(),
                              clients: Int = clients, messages: UInt64 = messagesPerClient) throws
        -> EngineConfiguration {
        // Window 1: a client sends its next PUBLISH only after the previous PUBACK, so the victim has sent
        // exactly 3 messages when the bad bytes arrive, whatever the timing.
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 0, inFlightWindow: 1,
                                           timeouts: timeouts, onAckTimeout: .close)
        let stream = EngineStream(topic: { index, _ in "faults/\(index)" }, qos: .atLeastOnce,
                                  plan: .rate(perSecond: 200), messageLimit: messages)
        let fleet = EngineFleet(name: "clients", count: clients, clientID: { "faults-\($0)" }, session: settings,
                                streams: [stream])
        return EngineConfiguration(fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: port)],
                                   lanes: 2, readyTimeout: 2_000_000_000, drainTimeout: 1_000_000_000)
    }

    @Test("malformed bytes close only the client that received them, as a protocol error",
          arguments: MalformedInput.all)
    func malformedClosesOnlyThatClient(_ input: MalformedInput) throws {
        let broker = try FakeBroker(behaviour: Self.behaviour(sending: input.bytes))
        defer { broker.stop() }
        let result = try Engine(configuration: Self.configuration(port: broker.port)).run(duration: 500_000_000)
        let counters = result.counters
        let others = UInt64(Self.clients - 1)
        #expect(counters.connectsSucceeded == UInt64(Self.clients))
        #expect(counters.connectsFailed == 0)
        #expect(counters.disconnects == [.protocolError: 1, .clientInitiated: others])
        // The others publish all their messages and see every PUBACK; the victim got two PUBACKs before the bytes.
        #expect(counters.published[.atLeastOnce] == others * Self.messagesPerClient + 3)
        #expect(counters.acked[.atLeastOnce] == others * Self.messagesPerClient + 2)
        #expect(counters.ackTimeouts.total == 0)
        #expect(result.latency.histogram(.puback, from: .sent).totalCount == others * Self.messagesPerClient + 2)
    }

    /// A packet cut short after `bytes`, then nothing: the client must time out on the ack it still awaits.
    @Test("a half-written PUBACK then silence: the PUBACK deadline is counted and the run ends", arguments: [
        [UInt8]([0x40]),  // PUBACK fixed header only
        [0x40, 0x02, 0x00],  // PUBACK with one of its two packet-identifier bytes
    ])
    func halfWrittenPubAck(_ bytes: [UInt8]) throws {
        let broker = try FakeBroker(behaviour: Self.behaviour(sending: bytes))
        defer { broker.stop() }
        let timeouts = MQTTAckTimeouts(pubAck: 200_000_000)
        let result = try Engine(configuration: Self.configuration(port: broker.port, timeouts: timeouts))
            .run(duration: 600_000_000)
        let counters = result.counters
        let others = UInt64(Self.clients - 1)
        var expected = AckTimeoutCounts()
        expected.puback = 1
        #expect(counters.ackTimeouts == expected)
        #expect(counters.disconnects == [.ackTimeout(.puback): 1, .clientInitiated: others])
        #expect(counters.published[.atLeastOnce] == others * Self.messagesPerClient + 3)
        #expect(counters.acked[.atLeastOnce] == others * Self.messagesPerClient + 2)
    }

    @Test("a half-written CONNACK then silence: the CONNACK deadline is counted once and the connect fails")
    func halfWrittenConnAck() throws {
        let broker = try FakeBroker(behaviour: { connection, packet, version in
            if case .connect = packet { return [.sendBytes([0x20, 0x02, 0x00])] }
            return FakeBroker.standardResponse(connection, packet, version)
        })
        defer { broker.stop() }
        let configuration = try Self.configuration(port: broker.port, timeouts: MQTTAckTimeouts(connAck: 200_000_000),
                                                   clients: 2)
        let result = try Engine(configuration: configuration).run(duration: 100_000_000)
        let counters = result.counters
        var expected = AckTimeoutCounts()
        expected.connack = 2
        #expect(counters.ackTimeouts == expected)
        #expect(counters.connectsAttempted == 2)
        #expect(counters.connectsSucceeded == 0)
        #expect(counters.connectFailures == [.connackTimeout: 2])
        #expect(counters.published.total == 0)
    }
}
