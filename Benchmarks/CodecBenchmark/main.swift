// Codec micro-benchmark: ns/op and allocations/op of the per-message paths.
// Run: swift run -c release CodecBenchmark
import CAllocCounter
import MQTTCodec

/// Every result is folded in here and printed, so the optimizer cannot delete the work.
nonisolated(unsafe) var sink: UInt64 = 0

struct Measurement {
    let name: String
    let nanosecondsPerOperation: Double
    let allocationsPerOperation: Double
}

/// Runs `body` (which performs `operationsPerCall` operations) `iterations` times after a warm-up.
@inline(never)
func measure(_ name: String, iterations: Int, operationsPerCall: Int = 1, _ body: () throws -> UInt64) rethrows -> Measurement {
    for _ in 0..<min(iterations, 1000) { sink &+= try body() }  // warm buffers and caches
    let clock = ContinuousClock()
    let allocationsBefore = fb_alloc_count()
    let start = clock.now
    for _ in 0..<iterations { sink &+= try body() }
    let elapsed = clock.now - start
    let allocations = fb_alloc_count() - allocationsBefore
    let operations = Double(iterations * operationsPerCall)
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    return Measurement(name: name, nanosecondsPerOperation: nanoseconds / operations,
                       allocationsPerOperation: Double(allocations) / operations)
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

func format(_ value: Double, decimals: Int) -> String {
    // Integer arithmetic: rounding through libm is not linked without Glibc.
    var scale = 1
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int(value * Double(scale) + 0.5)
    var fraction = String(scaled % scale)
    while fraction.count < decimals { fraction = "0" + fraction }
    return "\(scaled / scale).\(fraction)"
}

let topic = try MQTTTopicName("fleet/vehicles/car-00042/telemetry")
let userProperties = MQTTEncodedProperties([
    .userProperty(name: "run", value: "r-2026-11-29"), .userProperty(name: "lane", value: "3")])
let payloadSize = 64
let fixedPayload = [UInt8](repeating: 0x5A, count: payloadSize)

/// The engine's per-message payload: sequence number and intended send time, then filler.
@inline(__always)
func writeHeader(_ target: UnsafeMutableRawBufferPointer, sequence: UInt64, timestamp: UInt64) {
    target.storeBytes(of: sequence.bigEndian, toByteOffset: 0, as: UInt64.self)
    target.storeBytes(of: timestamp.bigEndian, toByteOffset: 8, as: UInt64.self)
    let rest = UnsafeMutableRawBufferPointer(rebasing: target[16...])
    rest.initializeMemory(as: UInt8.self, repeating: 0x5A)
}

var results: [Measurement] = []
let iterations = 2_000_000
var outBuffer = MQTTByteBuffer(capacity: 4096)

for (version, properties, label) in [
    (MQTTProtocolVersion.v3_1_1, MQTTEncodedProperties.empty, "3.1.1"),
    (MQTTProtocolVersion.v5, userProperties, "5.0 + 2 user props"),
] {
    var sequence: UInt64 = 0
    results.append(measure("encode PUBLISH QoS1 64 B, fast path, \(label)", iterations: iterations) {
        outBuffer.clear()
        sequence &+= 1
        let packetID = UInt16(truncatingIfNeeded: sequence % 65535 + 1)
        outBuffer.writePublish(topic: topic, packetID: packetID, qos: .atLeastOnce, version: version,
                               properties: properties, payloadCount: payloadSize) { target in
            writeHeader(target, sequence: sequence, timestamp: sequence &* 1000)
        }
        return UInt64(outBuffer.readableCount)
    })

    let propertyList: [MQTTProperty] = version.hasProperties
        ? [.userProperty(name: "run", value: "r-2026-11-29"), .userProperty(name: "lane", value: "3")] : []
    let general = MQTTPacket.publish(MQTTPublish(topic: topic.name, payload: fixedPayload, qos: .atLeastOnce,
                                                 packetID: 7, properties: propertyList))
    results.append(measure("encode PUBLISH QoS1 64 B, general path, \(label)", iterations: iterations) {
        outBuffer.clear()
        general.encode(version: version, into: &outBuffer)
        return UInt64(outBuffer.readableCount)
    })

    let wire = general.encoded(version: version)
    var decoder = MQTTDecoder(version: version)
    results.append(try measure("decode PUBLISH QoS1 64 B, view (feed + nextView), \(label)", iterations: iterations) {
        decoder.feed(wire)
        guard let view = try decoder.nextView() else { return 0 }
        return UInt64(view.packetID) &+ UInt64(view.payloadRange.count) &+ UInt64(view.topicRange.count)
    })
    results.append(try measure("decode PUBLISH QoS1 64 B, view in place (no copy), \(label)", iterations: iterations) {
        try wire.withUnsafeBytes { raw in
            guard let view = try MQTTDecoder.view(in: raw, from: 0, to: raw.count, version: version) else { return 0 }
            return UInt64(view.packetID) &+ UInt64(view.payloadRange.count)
        }
    })
    results.append(try measure("decode PUBLISH QoS1 64 B, full MQTTPacket, \(label)", iterations: iterations / 4) {
        decoder.feed(wire)
        guard case .publish(let publish)? = try decoder.next() else { return 0 }
        return UInt64(publish.payload.count) &+ UInt64(publish.properties.count)
    })

    // A stream of 1,000 mixed packets as a client receives them: publishes of each QoS, acks, PINGRESP, SUBACK.
    var stream = MQTTByteBuffer(capacity: 128 * 1024)
    for index in 0..<1000 {
        let id = UInt16(index % 65535 + 1)
        let packet: MQTTPacket
        switch index % 10 {
        case 0, 1, 2, 3: packet = .publish(MQTTPublish(topic: topic.name, payload: fixedPayload, qos: .atLeastOnce,
                                                       packetID: id, properties: propertyList))
        case 4, 5: packet = .publish(MQTTPublish(topic: topic.name, payload: fixedPayload, properties: propertyList))
        case 6: packet = .pubAck(MQTTPubAck(packetID: id))
        case 7: packet = .pubRec(MQTTPubAck(packetID: id))
        case 8: packet = .pubComp(MQTTPubAck(packetID: id))
        default: packet = index % 20 == 9 ? .pingResp : .subAck(MQTTSubAck(packetID: id, reasonCodes: [.grantedQoS1]))
        }
        packet.encode(version: version, into: &stream)
    }
    let streamBytes = stream.readableBytes
    var streamDecoder = MQTTDecoder(version: version, initialCapacity: streamBytes.count)
    results.append(try measure("decode 1,000 mixed packets, views, per packet, \(label)", iterations: 2000,
                           operationsPerCall: 1000) {
        streamDecoder.feed(streamBytes)
        var total: UInt64 = 0
        while let view = try streamDecoder.nextView() { total &+= UInt64(view.packetID) &+ UInt64(view.byteCount) }
        return total
    })
    results.append(try measure("decode 1,000 mixed packets, full MQTTPacket, per packet, \(label)", iterations: 200,
                           operationsPerCall: 1000) {
        streamDecoder.feed(streamBytes)
        var total: UInt64 = 0
        while let packet = try streamDecoder.next() { total &+= UInt64(packet.type.rawValue) }
        return total
    })
}

var ackBuffer = MQTTByteBuffer(capacity: 4096)
var ackID: UInt16 = 0
results.append(measure("encode PUBACK, fast path, 5.0", iterations: iterations) {
    ackBuffer.clear()
    ackID = ackID &+ 1 | 1
    ackBuffer.writePublishAck(.pubAck, packetID: ackID, version: .v5)
    return UInt64(ackBuffer.readableCount)
})

print("CodecBenchmark (swift run -c release CodecBenchmark); payload \(payloadSize) B, topic \(topic.utf8.count) B")
print(pad("operation", 80) + pad("ns/op", 10) + "allocs/op")
for result in results {
    print(pad(result.name, 80) + pad(format(result.nanosecondsPerOperation, decimals: 1), 10)
        + format(result.allocationsPerOperation, decimals: 3))
}
print("checksum \(sink)")
