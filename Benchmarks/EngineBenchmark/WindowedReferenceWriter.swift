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
    /// The batched variant (the CPU floor of a client that batches its acks as the engine does): every socket
    /// wakes the writer only once half its window's acks are there (SO_RCVLOWAT of 4 bytes per ack of half the
    /// window, lowered at the end of a connection's messages to what is still owed); poll(2) waits at most
    /// `probeMilliseconds`, after which every socket with bytes below its mark is read anyway (a broker with
    /// Nagle's algorithm on holds acks until they are acknowledged: there this variant runs at one round per
    /// timeout, and its rate says nothing; its CPU per message is the kernel's and a minimal loop's share).
    var batched = false
    static let probeMilliseconds: Int32 = 5

    struct Result {
        var seconds: Double
        /// Messages acknowledged (PUBACK, or PUBCOMP at QoS 2) by all publishers together.
        var acknowledged: Int
        /// CPU of the writer's thread (µs, getrusage(RUSAGE_THREAD)) over the run, user and system apart.
        var userMicroseconds: Double
        var systemMicroseconds: Double
        /// read(2) and write(2) calls, and poll(2) wakeups that found something (or timed out, in `batched`).
        var reads = 0
        var writes = 0
        var polls = 0
        var cpuMicroseconds: Double { userMicroseconds + systemMicroseconds }
        var messagesPerSecond: Double { Double(acknowledged) / seconds }
        var cpuPerMessage: Double { cpuMicroseconds / Double(max(acknowledged, 1)) }
        var userPerMessage: Double { userMicroseconds / Double(max(acknowledged, 1)) }
        var systemPerMessage: Double { systemMicroseconds / Double(max(acknowledged, 1)) }
    }

    /// One connection's state in the loop.
    struct Connection {
        let fd: Int32
        let packets: [[UInt8]]
        var sent = 0
        var acknowledged = 0
        var kept: [UInt8] = []  // bytes of an unfinished ack
        var failed = false
        /// SO_RCVLOWAT as last set (batched variant).
        var mark: Int32 = 1
    }

    /// Parses the acks in `bytes` (after any kept bytes) and appends the answers to `output`. False on anything
    /// but 3.1.1's 4-byte PUBACK, PUBREC and PUBCOMP with an identifier of the window.
    static func answer(_ connection: inout Connection, _ bytes: UnsafeRawBufferPointer, total: Int,
                       output: inout [UInt8]) -> Bool {
        // Parsed in place unless an unfinished ack was kept from the last read (no allocation per read).
        if connection.kept.isEmpty { return parse(&connection, bytes, total: total, output: &output) }
        let input = connection.kept + Array(bytes)
        connection.kept.removeAll()
        return input.withUnsafeBytes { parse(&connection, $0, total: total, output: &output) }
    }

    private static func parse(_ connection: inout Connection, _ input: UnsafeRawBufferPointer, total: Int,
                              output: inout [UInt8]) -> Bool {
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
                output.append(0x62)
                output.append(0x02)
                output.append(input[offset + 2])
                output.append(input[offset + 3])
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
        var reads = 0, writes = 0, polls = 0
        let before = threadCPU()
        let start = DispatchTime.now().uptimeNanoseconds
        for index in connections.indices {
            output.removeAll(keepingCapacity: true)
            let first = min(window, total)
            for slot in 0..<first { output.append(contentsOf: connections[index].packets[slot]) }
            connections[index].sent = first
            guard ReferenceWriter.writeAll(connections[index].fd, output) else { return nil }
            writes += 1
            if batched { setMark(&connections[index], total: total) }
        }
        // Blocking sockets: each readable socket gets one read of what is there and one write. A connection that
        // is done (or failed) is left out of the poll (fd -1).
        var done = 0
        while done < connections.count {
            let ready = poll(&polled, nfds_t(polled.count), batched ? Self.probeMilliseconds : 30_000)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || (ready == 0 && !batched) { break }  // 30 s without an ack: the counts say what arrived
            polls += 1
            for index in polled.indices where polled[index].fd >= 0 {
                let fd = connections[index].fd
                var count: Int
                if ready == 0 {
                    // The batched variant's timeout: read whatever waits below the mark, without waiting for it.
                    count = input.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
                    reads += 1
                    if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { continue }
                } else {
                    guard polled[index].revents != 0 else { continue }
                    count = input.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                    reads += 1
                }
                if count < 0 && errno == EINTR { continue }
                output.removeAll(keepingCapacity: true)
                let answered = count > 0 && input.withUnsafeBytes {
                    Self.answer(&connections[index], UnsafeRawBufferPointer(rebasing: $0[0..<count]), total: total,
                                output: &output)
                }
                if !output.isEmpty { writes += 1 }
                if !answered || (!output.isEmpty && !ReferenceWriter.writeAll(fd, output)) {
                    connections[index].failed = true
                }
                if connections[index].failed || connections[index].acknowledged >= total {
                    polled[index].fd = -1
                    done += 1
                } else if batched {
                    setMark(&connections[index], total: total)
                }
            }
        }
        let end = DispatchTime.now().uptimeNanoseconds
        let after = threadCPU()
        return Result(seconds: Double(end - start) / 1e9,
                      acknowledged: connections.reduce(0) { $0 + $1.acknowledged },
                      userMicroseconds: after.user - before.user, systemMicroseconds: after.system - before.system,
                      reads: reads, writes: writes, polls: polls)
    }

    /// The batched variant's mark: 4 bytes per ack of half the window (at least 1 ack), at most what is still
    /// owed (a PUBREC and a PUBCOMP both owed count as one: the mark waits for 4 bytes per slot).
    func setMark(_ connection: inout Connection, total: Int) {
        let owed = connection.sent - connection.acknowledged
        let wanted = Int32(4 * max(1, min(window / 2, owed)))
        guard wanted != connection.mark else { return }
        var value = wanted
        _ = setsockopt(connection.fd, SOL_SOCKET, SO_RCVLOWAT, &value, socklen_t(MemoryLayout<Int32>.size))
        connection.mark = wanted
    }

    /// User and system CPU of the calling thread in µs.
    func threadCPU() -> (user: Double, system: Double) {
        var usage = rusage()
        getrusage(1 /* RUSAGE_THREAD */, &usage)
        return (Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec),
                Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec))
    }
}
