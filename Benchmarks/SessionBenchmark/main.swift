// Session micro-benchmark: ns/op and allocations/op of the per-message paths of MQTTClientSession.
// swift build -c release --product SessionBenchmark && .build/release/SessionBenchmark
import CAllocCounter
import MQTTCodec
import MQTTSession

nonisolated(unsafe) var sink: UInt64 = 0

/// Counts events; reads every received payload byte so the work is not optimized away.
struct CountingHandler: MQTTSessionEventHandler {
    var events: UInt64 = 0
    mutating func sessionEvent(_ event: MQTTSessionEvent) {
        if case .publishAcknowledged(let ack) = event { events &+= ack.receivedAt &- ack.sentAt }
        events &+= 1
    }
    mutating func messageReceived(_ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer,
                                  payload: UnsafeRawBufferPointer) {
        events &+= UInt64(payload.count) &+ UInt64(topic.count)
    }
}

func run(_ name: String, version: MQTTProtocolVersion, qos: MQTTQoS, inbound: Bool, iterations: Int,
         keepsStatistics: Bool = true) {
    let settings = MQTTSessionSettings(version: version, keepAliveSeconds: 60, keepsPublishesForRetransmission: !CommandLine.arguments.contains("--no-copies"))
    var session = MQTTClientSession(settings: settings, clientID: "bench", keepsStatistics: keepsStatistics)
    var output = MQTTByteBuffer(capacity: 1 << 16)
    var decoder = MQTTDecoder(version: version, initialCapacity: 1 << 16)
    var handler = CountingHandler()
    session.connect(now: 0, into: &output)
    decoder.feed(version == .v5 ? [0x20, 0x03, 0x00, 0x00, 0x00] : [0x20, 0x02, 0x00, 0x00])
    session.receive(from: &decoder, now: 0, output: &output, events: &handler)
    output.clear()
    let topic = try! MQTTTopicName("fleet/vehicle/00042/telemetry")
    let payload = [UInt8](repeating: 0x5A, count: 64)
    // Inbound: a PUBLISH as the broker would send it, encoded once.
    let inboundBytes = MQTTPacket.publish(MQTTPublish(
        topic: topic.name, payload: payload, qos: qos, packetID: qos == .atMostOnce ? 0 : 7)).encoded(version: version)
    let pubRel: [UInt8] = [0x62, 0x02, 0x00, 0x07]
    var now: UInt64 = 1

    func once() {
        now &+= 1000
        if inbound {
            decoder.feed(inboundBytes)
            if qos == .exactlyOnce { decoder.feed(pubRel) }
            session.receive(from: &decoder, now: now, output: &output, events: &handler)
        } else {
            let result = payload.withUnsafeBytes { bytes in
                session.publish(topic: topic, qos: qos, payload: bytes, intendedAt: now, tag: now, now: now, into: &output)
            }
            guard case .sent(let id) = result else { fatalError("publish refused: \(result)") }
            if qos != .atMostOnce {
                // The broker's acknowledgement(s), built on the stack (an Array copy would allocate).
                let firstType: UInt8 = qos == .atLeastOnce ? 0x40 : 0x50
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4) { ack in
                    ack[0] = firstType
                    ack[1] = 2
                    ack[2] = UInt8(id >> 8)
                    ack[3] = UInt8(truncatingIfNeeded: id)
                    decoder.feed(UnsafeRawBufferPointer(ack))
                    if qos == .exactlyOnce {
                        ack[0] = 0x70
                        decoder.feed(UnsafeRawBufferPointer(ack))
                    }
                }
                session.receive(from: &decoder, now: now, output: &output, events: &handler)
            }
        }
        sink &+= UInt64(output.readableCount)
        output.clear()
    }

    for _ in 0..<1000 { once() }
    let clock = ContinuousClock()
    let allocationsBefore = fb_alloc_count()
    let start = clock.now
    for _ in 0..<iterations { once() }
    let elapsed = clock.now - start
    let allocations = fb_alloc_count() - allocationsBefore
    let ns = (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
        / Double(iterations)
    sink &+= handler.events
    print("{\"benchmark\":\"\(name)\",\"ns_per_message\":\(Int(ns * 10) / 10),\"allocations_per_message\":\(Double(allocations) / Double(iterations))}")
}

let iterations = 200_000
for version in [MQTTProtocolVersion.v3_1_1, .v5] {
    let tag = version == .v5 ? "v5" : "v311"
    for qos in MQTTQoS.allCases {
        run("publish_qos\(qos.rawValue)_with_acks_\(tag)", version: version, qos: qos, inbound: false, iterations: iterations)
        run("receive_qos\(qos.rawValue)_\(tag)", version: version, qos: qos, inbound: true, iterations: iterations)
        // The engine's sessions keep no statistics (`EngineConfiguration.keepsSessionStatistics`): no allocation
        // per message there either.
        run("publish_qos\(qos.rawValue)_with_acks_\(tag)_no_statistics", version: version, qos: qos, inbound: false,
            iterations: iterations, keepsStatistics: false)
        run("receive_qos\(qos.rawValue)_\(tag)_no_statistics", version: version, qos: qos, inbound: true,
            iterations: iterations, keepsStatistics: false)
    }
}
print("{\"sink\":\(sink % 2),\"session_inline_bytes\":\(MemoryLayout<MQTTClientSession>.size)}")
