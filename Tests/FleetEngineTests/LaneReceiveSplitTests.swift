import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

private let ms: UInt64 = 1_000_000

/// What one subscriber's receive path made of the broker's bytes.
private struct Outcome: Equatable {
    var phase: ClientPhase
    var ready: Bool
    var connectsSucceeded: UInt64
    var received: [UInt64]
    var arrived: [UInt64]
    var foreign: UInt64
    var endToEnd: [UInt64]
    var connectLatency: [UInt64]
    var subscribeLatency: [UInt64]
    var delivered: UInt64
    var unique: UInt64
    var pendingInbound: Int
}

/// A lane's receive path (`Lane.receive`: decode, session, `LaneSessionSink`) fed without sockets, the way
/// swift-nio's `ByteToMessageDecoderVerifier` feeds a decoder: the same bytes whole, split at every byte, and one
/// byte at a time must give the same outcome.
@Suite("Lane receive path: split at every byte, no sockets")
struct LaneReceiveSplitTests {
    /// A lane with one subscriber that wrote CONNECT at `start` (no socket: what it writes is dropped).
    private static func subscriberLane(start: UInt64) throws -> (Engine, Lane) {
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "cars/+/telemetry", qos: .atLeastOnce)] })
        var configuration = EngineConfiguration(fleets: [backend], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: 1)],
                                                lanes: 1, seed: 3)
        configuration.runID = 0x5EED
        let engine = try Engine(configuration: configuration)
        let lane = engine.lanes[0]
        lane.queue.sync {
            lane.now = start
            lane.pacers[0] = ConnectPacer(ratePerSecond: nil, maxInFlight: 1, now: start)
            let opened = lane.clients[0].connection.connectTimerFired(now: start, stopping: false, pacer: &lane.pacers[0],
                                                                      tick: ms, connectTimeout: 12_000 * ms)
            #expect(opened == .open(isReconnect: false, timeoutAt: start + 12_000 * ms))
            _ = lane.clients[0].connection.connectWritten(now: start, connAckTimeout: 10_000 * ms)
            lane.clients[0].session.connect(now: start, into: &lane.scratch)
            lane.scratch.clear()
        }
        return (engine, lane)
    }

    /// CONNACK, SUBACK (packet id 1, the lane's first SUBSCRIBE), a QoS 1 and a QoS 0 message of this run, and
    /// a QoS 0 message of another run.
    private static func brokerBytes(runID: UInt64, at now: UInt64) -> [UInt8] {
        func message(_ sequence: UInt64, qos: MQTTQoS, packetID: UInt16, runID: UInt64) -> [UInt8] {
            var payload: [UInt8] = []
            EndToEndHeader(streamID: 3, sequence: sequence, intendedTime: now - 10 * ms, runID: runID,
                           sentTime: now - (5 - sequence) * ms).appendBinary(to: &payload)
            payload += [UInt8](repeating: 0x2A, count: 7)
            return MQTTPacket.publish(MQTTPublish(topic: "cars/7/telemetry", payload: payload, qos: qos, packetID: packetID))
                .encoded(version: .v3_1_1)
        }
        return [0x20, 0x02, 0x00, 0x00] + [0x90, 0x03, 0x00, 0x01, 0x01]
            + message(0, qos: .atLeastOnce, packetID: 9, runID: runID) + message(1, qos: .atMostOnce, packetID: 0, runID: runID)
            + message(2, qos: .atMostOnce, packetID: 0, runID: runID ^ 1)
    }

    /// Feeds `bytes` in the given pieces (all read at the same time; the CONNACK always ends a piece) and reads
    /// the outcome.
    private static func feed(_ bytes: [UInt8], splitAt cuts: [Int], start: UInt64) throws -> Outcome {
        let (engine, lane) = try subscriberLane(start: start)
        return lane.queue.sync {
            var from = 0
            // The broker answers SUBSCRIBE only after it came: the CONNACK (4 bytes) ends a read of its own, and
            // the SUBSCRIBE goes out in between.
            for cut in (cuts + [4]).sorted() + [bytes.count] where cut > from {
                lane.now = start + 20 * ms
                let alive = bytes[from..<cut].withUnsafeBytes { lane.receive(0, bytes: $0) }
                #expect(alive)
                from = cut
            }
            let fleet = lane.metrics.fleets[0]
            let latency = fleet.latency.current
            func values(_ kind: LatencyKind, _ origin: LatencyOrigin) -> [UInt64] {
                let histogram = latency.histogram(kind, from: origin)
                return [histogram.totalCount, histogram.min, histogram.max]
            }
            let delivery = lane.metrics.delivery.counts(stream: 0, expected: 2)
            _ = engine
            return Outcome(
                phase: lane.clients[0].phase, ready: lane.clients[0].isReady,
                connectsSucceeded: fleet.counters.connectsSucceeded,
                received: [fleet.counters.received[.atMostOnce], fleet.counters.received[.atLeastOnce]],
                arrived: [fleet.counters.arrived[.atMostOnce], fleet.counters.arrived[.atLeastOnce]],
                foreign: fleet.counters.foreignMessages, endToEnd: values(.endToEnd, .intended),
                connectLatency: values(.connect, .sent), subscribeLatency: values(.subscribe, .sent),
                delivered: delivery.received, unique: delivery.unique, pendingInbound: lane.clients[0].inbound.count)
        }
    }

    @Test("whole, split at every byte, and byte by byte: the same connect, subscribe, messages and latencies")
    func everySplit() throws {
        let start: UInt64 = 1_000_000 * ms
        let (probe, lane) = try Self.subscriberLane(start: start)
        let bytes = Self.brokerBytes(runID: lane.runID, at: start + 20 * ms)
        _ = probe
        let whole = try Self.feed(bytes, splitAt: [], start: start)
        #expect(whole == Outcome(
            // Received: this run's two messages (one at QoS 0, one at QoS 1); the QoS 0 one of another run
            // arrived as well, foreign.
            phase: .connected, ready: true, connectsSucceeded: 1, received: [1, 1], arrived: [2, 1], foreign: 1,
            // µs, as the HDR histograms keep them (3 significant digits: 10,000 and 20,000 read back as the
            // highest value of their bucket).
            endToEnd: [2, 10_000, 10_007], connectLatency: [1, 20_000, 20_015], subscribeLatency: [1, 0, 0],
            delivered: 2, unique: 2, pendingInbound: 0))
        for cut in 1..<bytes.count {
            #expect(try Self.feed(bytes, splitAt: [cut], start: start) == whole, "split at byte \(cut)")
        }
        #expect(try Self.feed(bytes, splitAt: Array(1..<bytes.count), start: start) == whole)
    }
}
