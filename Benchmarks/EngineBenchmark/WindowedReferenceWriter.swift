import Foundation
import Glibc
import MQTTCodec

/// The floor the engine's QoS 1 and 2 windows are compared with: what the broker acknowledges from the cheapest
/// client that keeps the same in-flight window. Each publisher is a thread with a blocking socket: it writes its
/// first `window` PUBLISHes (packet identifiers 1...window, encoded once up front), then reads acks and, after each
/// read, answers in one write: a PUBREL for every PUBREC, and a new PUBLISH under the identifier of every PUBACK or
/// PUBCOMP (a slot is refilled as soon as its ack is read, not in halves). No session, no schedule, no latency.
/// A broker that answers QoS 2 with PUBACK (RabbitMQ 3.10) is counted as it answers: the slot is free.
struct WindowedReferenceWriter {
    let port: UInt16
    let publishers: Int
    let messagesPerPublisher: Int
    let payloadSize: Int
    let qos: MQTTQoS
    let window: Int

    struct Result {
        var seconds: Double
        /// Messages acknowledged (PUBACK, or PUBCOMP at QoS 2) by all publishers together.
        var acknowledged: Int
        /// CPU of the whole benchmark process (µs) over the run: the writer threads and nothing else.
        var cpuMicroseconds: Double
        var messagesPerSecond: Double { Double(acknowledged) / seconds }
        var cpuPerMessage: Double { cpuMicroseconds / Double(max(acknowledged, 1)) }
    }

    /// One publisher's loop; returns the messages acknowledged (fewer than `total` when the broker closed, timed
    /// out after 30 s or sent something other than 4-byte acks).
    static func publish(fd: Int32, packets: [[UInt8]], total: Int) -> Int {
        let window = packets.count
        var output: [UInt8] = []
        output.reserveCapacity(window * (packets[0].count + 4))
        var input = [UInt8](repeating: 0, count: 64 * 1024)
        var sent = min(window, total)
        for slot in 0..<sent { output.append(contentsOf: packets[slot]) }
        guard ReferenceWriter.writeAll(fd, output) else { return 0 }
        var acknowledged = 0
        var kept = 0  // bytes of an unfinished ack at the start of `input`
        while acknowledged < total {
            let count = input.withUnsafeMutableBytes { read(fd, $0.baseAddress! + kept, $0.count - kept) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return acknowledged }
            let end = kept + count
            output.removeAll(keepingCapacity: true)
            var offset = 0
            while end - offset >= 4 {
                // PUBACK, PUBREC and PUBCOMP of 3.1.1 are 4 bytes: type, remaining length 2, packet identifier.
                let type = input[offset], length = input[offset + 1]
                guard length == 2 else { return acknowledged }
                let identifier = Int(input[offset + 2]) << 8 | Int(input[offset + 3])
                guard identifier >= 1 && identifier <= window else { return acknowledged }
                switch type {
                case 0x50:  // PUBREC: PUBREL (§3.6: fixed header flags 0010)
                    output.append(contentsOf: [0x62, 0x02, input[offset + 2], input[offset + 3]])
                case 0x40, 0x70:  // PUBACK or PUBCOMP: the slot is free
                    acknowledged += 1
                    if sent < total {
                        output.append(contentsOf: packets[identifier - 1])
                        sent += 1
                    }
                default:
                    return acknowledged
                }
                offset += 4
            }
            kept = end - offset
            if kept > 0 { for index in 0..<kept { input[index] = input[offset + index] } }
            if !output.isEmpty && !ReferenceWriter.writeAll(fd, output) { return acknowledged }
        }
        return acknowledged
    }

    func run() -> Result? {
        var sockets: [Int32] = []
        var packetSets: [[[UInt8]]] = []
        for index in 0..<publishers {
            guard let fd = ReferenceWriter.connect(port: port, clientID: "ref-pub-\(index)") else {
                sockets.forEach { close($0) }
                return nil
            }
            sockets.append(fd)
            packetSets.append((1...window).map { identifier in
                MQTTPacket.publish(MQTTPublish(
                    topic: "ref/\(index)/data", payload: [UInt8](repeating: 0x5A, count: payloadSize), qos: qos,
                    packetID: UInt16(identifier))).encoded(version: .v3_1_1)
            })
        }
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: publishers)
        counts.initialize(repeating: 0, count: publishers)
        defer { counts.deallocate() }
        let target = UnsafeMutableSendablePointer(counts)
        let group = DispatchGroup()
        let cpuBefore = cpuMicroseconds()
        let start = DispatchTime.now().uptimeNanoseconds
        for (index, fd) in sockets.enumerated() {
            let packets = packetSets[index]
            let total = messagesPerPublisher
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                target.pointer[index] = Self.publish(fd: fd, packets: packets, total: total)
            }
        }
        _ = group.wait(timeout: .now() + .seconds(120))
        let end = DispatchTime.now().uptimeNanoseconds
        let cpu = cpuMicroseconds() - cpuBefore
        for fd in sockets {
            _ = ReferenceWriter.writeAll(fd, [0xE0, 0x00])  // DISCONNECT
            close(fd)
        }
        return Result(seconds: Double(end - start) / 1e9, acknowledged: (0..<publishers).reduce(0) { $0 + counts[$1] },
                      cpuMicroseconds: cpu)
    }
}
