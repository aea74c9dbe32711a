import Foundation
import Glibc
import MQTTCodec

/// The floor the engine's QoS 1 and 2 windows are compared with: what the broker acknowledges from the cheapest
/// client that keeps the same in-flight window. One thread serves every publisher's socket with poll(2) (a
/// thread per socket with blocking reads cost 25-31 µs of CPU per message on the 2-core machine, more than the
/// engine, and took that CPU from the broker). Each connection writes its first `window` PUBLISHes (packet
/// identifiers 1...window, encoded once up front); then every read of acks is answered in one write: a PUBREL for
/// every PUBREC, and a new PUBLISH under the identifier of every PUBACK or PUBCOMP (a slot is refilled as soon as
/// its ack is read, not in halves). No session, no schedule, no latency.
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
        /// CPU of the whole benchmark process (µs) over the run: the writer's thread and nothing else.
        var cpuMicroseconds: Double
        var messagesPerSecond: Double { Double(acknowledged) / seconds }
        var cpuPerMessage: Double { cpuMicroseconds / Double(max(acknowledged, 1)) }
    }

    /// One connection's state in the loop.
    struct Connection {
        let fd: Int32
        let packets: [[UInt8]]
        var sent = 0
        var acknowledged = 0
        var kept: [UInt8] = []  // bytes of an unfinished ack
        var failed = false
    }

    /// Parses the acks in `bytes` (after any kept bytes) and appends the answers to `output`. False on anything
    /// but 3.1.1's 4-byte PUBACK, PUBREC and PUBCOMP with an identifier of the window.
    static func answer(_ connection: inout Connection, _ bytes: UnsafeRawBufferPointer, total: Int,
                       output: inout [UInt8]) -> Bool {
        let input = connection.kept + Array(bytes)
        connection.kept.removeAll()
        let window = connection.packets.count
        var offset = 0
        while input.count - offset >= 4 {
            // PUBACK, PUBREC and PUBCOMP of 3.1.1 are 4 bytes: type, remaining length 2, packet identifier.
            let type = input[offset], length = input[offset + 1]
            guard length == 2 else { return false }
            let identifier = Int(input[offset + 2]) << 8 | Int(input[offset + 3])
            guard identifier >= 1 && identifier <= window else { return false }
            switch type {
            case 0x50:  // PUBREC: PUBREL (§3.6: fixed header flags 0010)
                output.append(contentsOf: [0x62, 0x02, input[offset + 2], input[offset + 3]])
            case 0x40, 0x70:  // PUBACK or PUBCOMP: the slot is free
                connection.acknowledged += 1
                if connection.sent < total {
                    output.append(contentsOf: connection.packets[identifier - 1])
                    connection.sent += 1
                }
            default:
                return false
            }
            offset += 4
        }
        if offset < input.count { connection.kept = Array(input[offset...]) }
        return true
    }

    func run() -> Result? {
        var connections: [Connection] = []
        for index in 0..<publishers {
            guard let fd = ReferenceWriter.connect(port: port, clientID: "ref-pub-\(index)") else {
                connections.forEach { close($0.fd) }
                return nil
            }
            connections.append(Connection(fd: fd, packets: (1...window).map { identifier in
                MQTTPacket.publish(MQTTPublish(
                    topic: "ref/\(index)/data", payload: [UInt8](repeating: 0x5A, count: payloadSize), qos: qos,
                    packetID: UInt16(identifier))).encoded(version: .v3_1_1)
            }))
        }
        defer {
            for connection in connections {
                _ = ReferenceWriter.writeAll(connection.fd, [0xE0, 0x00])  // DISCONNECT
                close(connection.fd)
            }
        }
        let total = messagesPerPublisher
        var output: [UInt8] = []
        output.reserveCapacity(window * (connections[0].packets[0].count + 4))
        var input = [UInt8](repeating: 0, count: 64 * 1024)
        var polled = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        let cpuBefore = cpuMicroseconds()
        let start = DispatchTime.now().uptimeNanoseconds
        for index in connections.indices {
            output.removeAll(keepingCapacity: true)
            let first = min(window, total)
            for slot in 0..<first { output.append(contentsOf: connections[index].packets[slot]) }
            connections[index].sent = first
            guard ReferenceWriter.writeAll(connections[index].fd, output) else { return nil }
        }
        // Blocking sockets: each readable socket gets one read of what is there and one write. A connection that
        // is done (or failed) is left out of the poll (fd -1).
        var done = 0
        while done < connections.count {
            let ready = poll(&polled, nfds_t(polled.count), 30_000)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { break }  // 30 s without an ack: the counts say what arrived
            for index in polled.indices where polled[index].fd >= 0 && polled[index].revents != 0 {
                let fd = connections[index].fd
                let count = input.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if count < 0 && errno == EINTR { continue }
                output.removeAll(keepingCapacity: true)
                let answered = count > 0 && input.withUnsafeBytes {
                    Self.answer(&connections[index], UnsafeRawBufferPointer(rebasing: $0[0..<count]), total: total,
                                output: &output)
                }
                if !answered || (!output.isEmpty && !ReferenceWriter.writeAll(fd, output)) {
                    connections[index].failed = true
                }
                if connections[index].failed || connections[index].acknowledged >= total {
                    polled[index].fd = -1
                    done += 1
                }
            }
        }
        let end = DispatchTime.now().uptimeNanoseconds
        return Result(seconds: Double(end - start) / 1e9,
                      acknowledged: connections.reduce(0) { $0 + $1.acknowledged },
                      cpuMicroseconds: cpuMicroseconds() - cpuBefore)
    }
}
