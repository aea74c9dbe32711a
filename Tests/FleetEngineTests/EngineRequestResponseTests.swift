import Dispatch
import FleetBroker
import FleetTestSupport
import Glibc
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Request/response between fleets against a real mosquitto: 5.0 Response Topic and Correlation Data, 3.1.1
/// reply topics, exact counts of requests, answers and measured round trips.
@Suite("Engine request/response against mosquitto", .serialized)
struct EngineRequestResponseTests {
    static func fleets(version: MQTTProtocolVersion, selection: EngineRequest.TargetSelection) -> [EngineFleet] {
        let settings = MQTTSessionSettings(version: version, keepAliveSeconds: 30)
        var cars = EngineFleet(name: "cars", count: 3, clientID: { "car-\($0)" }, session: settings)
        let carReplyTopic: (@Sendable (Int, String) -> String)?
        let replyTopic: @Sendable (Int, String) -> String
        if version == .v5 {
            // Each requester names its own reply topic in its requests.
            carReplyTopic = nil
            replyTopic = { i, _ in "backend/\(i)/replies" }
        } else {
            // No Response Topic in 3.1.1: cars reply on their own topic; every requester catches every reply.
            carReplyTopic = { i, _ in "cars/\(i)/reply" }
            replyTopic = { _, _ in "cars/+/reply" }
        }
        cars.responder = EngineResponder(commandTopic: { i, _ in "cars/\(i)/cmd" }, replyTopic: carReplyTopic,
                                         qos: .atLeastOnce)
        let commands = EngineStream(
            topic: { _, _ in "unused" }, qos: .atLeastOnce, plan: .rate(perSecond: 20),
            payload: .template(try! PayloadTemplate(#"{"command":"unlock","seq":{seq}}"#)), messageLimit: 10)
        var requests = commands
        requests.request = EngineRequest(targetFleet: "cars", selection: selection, replyTopic: replyTopic)
        let backend = EngineFleet(name: "backend", count: 2, clientID: { "backend-\($0)" }, session: settings,
                                  streams: [requests])
        return [cars, backend]
    }

    @Test("every request is answered once and its round trip measured once", arguments: [
        (MQTTProtocolVersion.v5, EngineRequest.TargetSelection.roundRobin), (.v5, .random),
        (.v3_1_1, .roundRobin), (.v3_1_1, .random),
    ])
    func roundTrips(version: MQTTProtocolVersion, selection: EngineRequest.TargetSelection) throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let configuration = EngineConfiguration(
            fleets: Self.fleets(version: version, selection: selection),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        let cars = try #require(result.fleets["cars"])
        let backend = try #require(result.fleets["backend"])
        #expect(backend.counters.published[.atLeastOnce] == 20)
        // The requests are this run's: received, none foreign.
        #expect(cars.counters.received[.atLeastOnce] == 20)
        #expect(cars.counters.arrived[.atLeastOnce] == 20)
        #expect(cars.counters.foreignMessages == 0)
        #expect(cars.counters.requestsAnswered == 20)
        #expect(cars.counters.requestsUnanswered == 0)
        #expect(cars.counters.published[.atLeastOnce] == 20)
        #expect(cars.counters.acked[.atLeastOnce] == 20)
        #expect(backend.counters.requestsSent == 20)
        #expect(backend.counters.responsesReceived == 20)
        #expect(backend.counters.responsesLate == 0)
        #expect(backend.counters.requestsTimedOut == 0)
        #expect(backend.latency.histogram(.requestResponse, from: .intended).totalCount == 20)
        // Replies are round trips, not end-to-end deliveries.
        #expect(result.latency.histogram(.endToEnd, from: .intended).totalCount == 0)
        #expect(backend.latency.histogram(.requestResponse, from: .sent).totalCount == 20)
        // 3.1.1: both requesters receive all 20 replies, and each counts only its own 10 as round trips.
        #expect(backend.counters.received[.atLeastOnce] == (version == .v5 ? 20 : 40))
        #expect(backend.counters.foreignMessages == 0)
        #expect(result.delivery.levels.allSatisfy { $0.expected == 0 && $0.received == 0 })
    }

    @Test("responses held up past the end of publishing: the drain waits for them instead of counting timeouts")
    func drainWaitsForResponses() throws {
        let broker = try MosquittoBroker()
        let pid = try #require(broker.pid)
        defer {
            kill(pid, SIGCONT)
            broker.stop()
        }
        // QoS 0 both ways: no ack keeps the drain going, only the responses owed.
        var fleets = Self.fleets(version: .v5, selection: .roundRobin)
        fleets[0].responder?.qos = .atMostOnce
        fleets[1].streams[0].qos = .atMostOnce
        fleets[1].streams[0].messageLimit = 5
        let engine = try Engine(configuration: EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 5_000_000_000))
        // The broker is frozen from the start of publishing until 0.5 s after its end: every request and its
        // response move only during the drain. The drain used to end after 100 ms without an arrival (all 10
        // requests timed out).
        engine.onPublishStart = {
            kill(pid, SIGSTOP)
            TestThread.after(.milliseconds(800)) { kill(pid, SIGCONT) }
        }
        let result = engine.run(duration: 300_000_000)
        let backend = try #require(result.fleets["backend"])
        #expect(backend.counters.requestsSent == 10)
        #expect(backend.counters.responsesReceived == 10)
        #expect(backend.counters.requestsTimedOut == 0)
        let drain = result.phases.drainEnd &- result.phases.publishEnd
        #expect(drain >= 400_000_000)
        #expect(drain < 1_000_000_000)
    }

    @Test("round robin spreads requests evenly: each of 3 cars answers its share of 21")
    func roundRobinShares() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var fleets = Self.fleets(version: .v5, selection: .roundRobin)
        fleets[1].count = 1
        fleets[1].streams[0].messageLimit = 21
        var configuration = EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        configuration.keepsSessionStatistics = true
        let engine = try Engine(configuration: configuration)
        let result = engine.run(duration: 1_500_000_000)
        #expect(result.fleets["backend"]?.counters.responsesReceived == 21)
        let answered = engine.lanes[0].clients.filter { $0.fleet == 0 }.map { $0.session.statistics.published(.atLeastOnce) }
        #expect(answered == [7, 7, 7])
    }

    @Test("replies later than the request timeout count as timed out")
    func lateReplies() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var fleets = Self.fleets(version: .v5, selection: .roundRobin)
        // 1 ns: no reply can make it, so each of the 20 is late.
        fleets[1].streams[0].request?.timeout = 1
        let configuration = EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        let backend = try #require(result.fleets["backend"])
        #expect(backend.counters.requestsSent == 20)
        #expect(backend.counters.responsesReceived == 20)
        #expect(backend.counters.responsesLate == 20)
        #expect(backend.counters.requestsTimedOut == 20)
    }

    @Test("3.1.1 responders without a reply topic cannot answer: every request is unanswered and timed out")
    func unanswerable() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var fleets = Self.fleets(version: .v3_1_1, selection: .random)
        fleets[0].responder?.replyTopic = nil
        let configuration = EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
            readyTimeout: 5_000_000_000, drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        #expect(result.fleets["cars"]?.counters.received[.atLeastOnce] == 20)
        #expect(result.fleets["cars"]?.counters.requestsUnanswered == 20)
        #expect(result.fleets["cars"]?.counters.requestsAnswered == 0)
        #expect(result.fleets["backend"]?.counters.requestsSent == 20)
        #expect(result.fleets["backend"]?.counters.responsesReceived == 0)
        #expect(result.fleets["backend"]?.counters.requestsTimedOut == 20)
    }

    @Test("a request stream must target an existing responder fleet; 5.0 reply topics have no wildcards")
    func configurationErrors() throws {
        let broker = [try SocketAddress(ipAddress: "127.0.0.1", port: 1)]
        var unknown = Self.fleets(version: .v5, selection: .roundRobin)
        unknown[1].streams[0].request?.targetFleet = "trucks"
        #expect(throws: EngineConfigurationError(message: "request stream targets fleet 'trucks', which does not exist")) {
            _ = try Engine(configuration: EngineConfiguration(fleets: unknown, brokers: broker))
        }
        var silent = Self.fleets(version: .v5, selection: .roundRobin)
        silent[0].responder = nil
        #expect(throws: EngineConfigurationError(message: "request stream targets fleet 'cars', which has no responder")) {
            _ = try Engine(configuration: EngineConfiguration(fleets: silent, brokers: broker))
        }
        var wildcard = Self.fleets(version: .v5, selection: .roundRobin)
        wildcard[1].streams[0].request?.replyTopic = { _, _ in "backend/+/replies" }
        #expect(throws: EngineConfigurationError(
            message: "MQTT 5 reply topic 'backend/+/replies' must be a topic name without wildcards")) {
            _ = try Engine(configuration: EngineConfiguration(fleets: wildcard, brokers: broker))
        }
    }
}
