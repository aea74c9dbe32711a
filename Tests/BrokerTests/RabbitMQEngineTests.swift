import FleetBroker
import FleetEngine
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing

/// The engine against the suite's RabbitMQ node: exact counts through a multi-threaded broker, and RabbitMQ's
/// QoS 2 and MQTT 5 answers counted by kind, not passed silently.
extension RabbitMQTests {
    /// `publishers` clients × `messages` at `qos` on `prefix/<i>/data`, `subscribers` clients on `prefix/+/data`
    /// asking `subscribeQoS`, over 3.1.1 (`version` for every client).
    static func engineRun(
        prefix: String, qos: MQTTQoS, subscribeQoS: MQTTQoS, publishers: Int = 3, messages: UInt64 = 200,
        subscribers: Int = 2, version: MQTTProtocolVersion = .v3_1_1, duration: UInt64 = 1_000_000_000,
        readyTimeout: UInt64 = 10_000_000_000
    ) throws -> EngineResult {
        let broker = try RabbitMQNode.broker()
        let settings = MQTTSessionSettings(version: version, keepAliveSeconds: 30, inFlightWindow: 16)
        let subscriberFleet = EngineFleet(
            name: "subscribers", count: subscribers, clientID: { "\(prefix)-sub-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "\(prefix)/+/data", qos: subscribeQoS)] })
        let stream = EngineStream(topic: { index, _ in "\(prefix)/\(index)/data" }, qos: qos,
                                  plan: .rate(perSecond: 1_000), payloadSize: 64, messageLimit: messages)
        let publisherFleet = EngineFleet(name: "publishers", count: publishers, clientID: { "\(prefix)-pub-\($0)" },
                                         session: settings, streams: [stream])
        let configuration = EngineConfiguration(
            fleets: [subscriberFleet, publisherFleet],
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: readyTimeout, drainTimeout: 5_000_000_000)
        return try Engine(configuration: configuration).run(duration: duration)
    }

    @Test("engine QoS 0 and 1 through RabbitMQ: 600 published (and acked at QoS 1), 1,200 received, none lost or doubled",
          arguments: [MQTTQoS.atMostOnce, .atLeastOnce])
    func engineRoundTrip(qos: MQTTQoS) throws {
        let result = try Self.engineRun(prefix: "engine-q\(qos.rawValue)", qos: qos, subscribeQoS: qos)
        let level = qos
        #expect(result.counters.connectsSucceeded == 5)
        #expect(result.counters.connectFailures.isEmpty)
        #expect(result.counters.published[level] == 600)
        #expect(result.counters.acked[level] == (qos == .atMostOnce ? 0 : 600))
        #expect(result.counters.received[level] == 1_200)
        let delivery = result.delivery[Int(qos.rawValue)]
        #expect(delivery.expected == 1_200)
        #expect(delivery.unique == 1_200)
        #expect(delivery.lost == 0)
        #expect(delivery.duplicated == 0)
        #expect(result.counters.subscriptionsDowngraded == 0)
        #expect(result.counters.qos2AckedAsQoS1 == 0)
        #expect(result.counters.ackTimeouts.total == 0)
    }

    /// RabbitMQ 3.10 has no QoS 2: each QoS 2 publish gets a PUBACK (counted as `qos2_acked_as_qos1`, never as a
    /// QoS 2 ack) and each QoS 2 subscription is granted QoS 1 (`subscription_qos`). The messages still arrive,
    /// at QoS 1, and are accounted under the stream's QoS 2 with none lost.
    @Test("engine QoS 2 through RabbitMQ: 600 publishes acked as QoS 1, 2 subscriptions granted QoS 1, 1,200 arrive at QoS 1")
    func engineQoS2Downgraded() throws {
        let result = try Self.engineRun(prefix: "engine-q2", qos: .exactlyOnce, subscribeQoS: .exactlyOnce)
        #expect(result.counters.connectsSucceeded == 5)
        #expect(result.counters.published[.exactlyOnce] == 600)
        #expect(result.counters.qos2AckedAsQoS1 == 600)
        #expect(result.counters.acked[.exactlyOnce] == 0)
        #expect(result.counters.acked[.atLeastOnce] == 0)
        #expect(result.counters.subscriptionsDowngraded == 2)
        #expect(result.counters.subscriptionsRefused == 0)
        #expect(result.counters.received[.exactlyOnce] == 0)
        #expect(result.counters.received[.atLeastOnce] == 1_200)
        let delivery = result.delivery[2]
        #expect(delivery.expected == 1_200)
        #expect(delivery.unique == 1_200)
        #expect(delivery.lost == 0)
        #expect(result.counters.ackTimeouts.total == 0)
        #expect(result.counters.abandonedPublishes == 0)
    }

    @Test("engine MQTT 5 clients against RabbitMQ: each closed before CONNACK, counted by reason and as never connected")
    func engineMQTT5Refused() throws {
        let result = try Self.engineRun(prefix: "engine-v5", qos: .atLeastOnce, subscribeQoS: .atLeastOnce,
                                        publishers: 2, messages: 10, subscribers: 1, version: .v5, duration: 0,
                                        readyTimeout: 2_000_000_000)
        #expect(result.counters.connectsSucceeded == 0)
        #expect(result.counters.connectFailures.keys.sorted { $0.reportName < $1.reportName } == [.closedBeforeConnack])
        #expect((result.counters.connectFailures[.closedBeforeConnack] ?? 0) >= 3)
        #expect(result.counters.neverConnected == 3)
        #expect(result.counters.published[.atLeastOnce] == 0)
    }
}
