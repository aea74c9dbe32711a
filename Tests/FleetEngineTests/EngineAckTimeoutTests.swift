import FleetMetrics
import FleetTestSupport
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// One acknowledgement a fake broker never sends, and the fleet that waits for it.
struct WithheldAckCase: Sendable, CustomTestStringConvertible {
    /// The ack kind the broker withholds, as the metrics count it.
    let kind: AckKind
    let clients: Int
    /// Messages each client publishes (one burst, so every message shares one deadline).
    let messagesPerClient: UInt64
    let qos: MQTTQoS
    let policy: MQTTAckTimeoutPolicy
    /// Publishing time after every client is ready (long enough for every deadline to pass).
    let duration: UInt64

    var testDescription: String { "\(kind.reportName) withheld, \(clients) clients, \(policy)" }

    /// Timeouts of 200 ms for every kind; a 1 s keepalive only when PINGRESP is the one withheld.
    var settings: MQTTSessionSettings {
        let short: UInt64 = 200_000_000
        return MQTTSessionSettings(
            version: .v3_1_1, keepAliveSeconds: kind == .pingresp ? 1 : 0,
            timeouts: MQTTAckTimeouts(connAck: short, subAck: short, unsubAck: short, pubAck: short,
                                      pubRec: short, pubComp: short, pingResp: short),
            onAckTimeout: policy)
    }

    /// The standard broker answer, except for the one acknowledgement withheld.
    ///
    /// When PUBCOMP is withheld, the PUBRECs of a burst go out together in one write, in answer to its last
    /// PUBLISH: the client then sends every PUBREL in the same turn, so all PUBCOMP deadlines fall at one time.
    /// (PUBRECs written one by one may arrive in separate reads, a tick apart; under `.close` the first deadline
    /// would close the connection before the later ones pass, and the count would depend on timing.)
    var behaviour: FakeBroker.Behaviour {
        let kind = self.kind
        let burst = UInt16(messagesPerClient)
        return { connection, packet, version in
            switch (kind, packet) {
            case (.pubcomp, .publish(let publish)) where publish.qos == .exactlyOnce:
                guard publish.packetID == burst else { return [] }
                let pubRecs = (1...burst).flatMap { MQTTPacket.pubRec(MQTTPubRec(packetID: $0)).encoded(version: version) }
                return [.sendBytes(pubRecs)]
            case (.connack, .connect), (.suback, .subscribe), (.pubcomp, .pubRel), (.pingresp, .pingReq):
                return []
            case (.puback, .publish(let publish)) where publish.qos == .atLeastOnce:
                return []
            case (.pubrec, .publish(let publish)) where publish.qos == .exactlyOnce:
                return []
            default:
                return FakeBroker.standardResponse(connection, packet, version)
            }
        }
    }

    var fleet: EngineFleet {
        let streams: [EngineStream] = messagesPerClient == 0 ? [] : [EngineStream(
            topic: { index, _ in "fault/\(index)" }, qos: qos,
            plan: .bursts(count: Int(messagesPerClient), every: 50_000_000), messageLimit: messagesPerClient)]
        let subscribes = kind == .suback
        return EngineFleet(
            name: "faulty", count: clients, clientID: { "fault-\($0)" }, session: settings,
            subscriptions: { index, _ in
                subscribes ? [MQTTSubscription(filter: "fault/in/\(index)", qos: .atLeastOnce)] : []
            },
            streams: streams)
    }
}

/// Acks a broker never sends: every missed deadline is counted once, by kind, and nothing else is.
@Suite("Engine ack timeouts against a fake broker", .serialized)
struct EngineAckTimeoutTests {
    static let cases: [WithheldAckCase] = [
        WithheldAckCase(kind: .connack, clients: 3, messagesPerClient: 0, qos: .atMostOnce, policy: .close,
                        duration: 100_000_000),
        WithheldAckCase(kind: .suback, clients: 3, messagesPerClient: 0, qos: .atMostOnce, policy: .close,
                        duration: 100_000_000),
        WithheldAckCase(kind: .puback, clients: 2, messagesPerClient: 5, qos: .atLeastOnce, policy: .close,
                        duration: 600_000_000),
        WithheldAckCase(kind: .puback, clients: 2, messagesPerClient: 5, qos: .atLeastOnce, policy: .keepWaiting,
                        duration: 600_000_000),
        WithheldAckCase(kind: .pubrec, clients: 2, messagesPerClient: 4, qos: .exactlyOnce, policy: .close,
                        duration: 600_000_000),
        WithheldAckCase(kind: .pubrec, clients: 2, messagesPerClient: 4, qos: .exactlyOnce, policy: .keepWaiting,
                        duration: 600_000_000),
        WithheldAckCase(kind: .pubcomp, clients: 2, messagesPerClient: 3, qos: .exactlyOnce, policy: .close,
                        duration: 600_000_000),
        WithheldAckCase(kind: .pubcomp, clients: 2, messagesPerClient: 3, qos: .exactlyOnce, policy: .keepWaiting,
                        duration: 600_000_000),
        // Keepalive 1 s: PINGREQ about 1 s after CONNECT, its deadline 200 ms later; closing ends the pings.
        WithheldAckCase(kind: .pingresp, clients: 2, messagesPerClient: 0, qos: .atMostOnce, policy: .close,
                        duration: 1_600_000_000),
    ]

    @Test("a withheld ack is counted exactly once per awaited packet, under its own kind", arguments: cases)
    func withheldAck(_ fault: WithheldAckCase) throws {
        let broker = try FakeBroker(behaviour: fault.behaviour)
        defer { broker.stop() }
        let configuration = EngineConfiguration(
            fleets: [fault.fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            lanes: 2, readyTimeout: 2_000_000_000, drainTimeout: 400_000_000)
        let result = try Engine(configuration: configuration).run(duration: fault.duration)
        let counters = result.counters
        let clients = UInt64(fault.clients)
        let messages = clients * fault.messagesPerClient

        var expected = AckTimeoutCounts()
        switch fault.kind {
        case .connack, .suback, .pingresp: expected[fault.kind] = clients
        default: expected[fault.kind] = messages
        }
        #expect(counters.ackTimeouts == expected)
        #expect(counters.connectsAttempted == clients)

        if fault.kind == .connack {
            #expect(counters.connectsSucceeded == 0)
            #expect(counters.connectsFailed == clients)
            #expect(counters.connectFailures == [.connackTimeout: clients])
            #expect(counters.disconnects.isEmpty)
            return
        }
        #expect(counters.connectsSucceeded == clients)
        #expect(counters.connectsFailed == 0)
        if messages > 0 {
            let level = fault.qos
            #expect(counters.published[level] == messages)
            #expect(counters.acked[level] == 0)
        }
        if fault.policy == .close {
            // One close per client, named after the ack that was missed; no DISCONNECT at the end of the run.
            #expect(counters.disconnects == [.ackTimeout(fault.kind): clients])
        } else {
            // Still waiting, still connected: the run ends them with DISCONNECT.
            #expect(counters.disconnects == [.clientInitiated: clients])
        }
    }
}
