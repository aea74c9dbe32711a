import FleetTestSupport
@testable import FleetTransport
import Glibc
import Testing

/// The receive ring on a loopback TCP pair: what a multishot receive hands over, how it ends.
@Suite("Receive ring (multishot receives into provided buffers)", .serialized)
struct ReceiveRingTests {
    static let available = (try? ReceiveRing(entries: 8, buffers: 8, bufferSize: 256)) != nil

    struct Seen: Equatable {
        var token: UInt64
        var result: Int32
        var more: Bool
        var bytes: [UInt8]
    }

    /// Waits for completions and collects them until `enough` says so (at most 2 s).
    static func collect(_ ring: ReceiveRing, until enough: ([Seen]) -> Bool) -> [Seen] {
        var seen: [Seen] = []
        let deadline = MonotonicNanoseconds.now() + 2_000_000_000
        while !enough(seen) && MonotonicNanoseconds.now() < deadline {
            ring.wait(block: false)
            if ring.readyCount == 0 { usleep(1000); continue }
            _ = ring.drain { completion in
                guard completion.kind == .receive else { return }
                seen.append(Seen(token: completion.token, result: completion.result, more: completion.more,
                                 bytes: Array(completion.bytes)))
            }
        }
        return seen
    }

    static func write(_ socket: TCPSocket, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(socket.fileDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    @Test("every write's bytes come back in order under the token, a buffer at a time, until cancelled",
          .enabled(if: available))
    func bytesInOrderUntilCancelled() throws {
        let pair = try LoopbackPair()
        defer { try? pair.sender.close(); try? pair.receiver.close() }
        let ring = try ReceiveRing(entries: 8, buffers: 4, bufferSize: 16)
        #expect(ring.armReceive(pair.sender.fileDescriptor, token: 7))
        ring.wait(block: false)
        Self.write(pair.receiver, Array("hello".utf8))
        let first = Self.collect(ring) { $0.count >= 1 }
        #expect(first == [Seen(token: 7, result: 5, more: true, bytes: Array("hello".utf8))])
        // 40 bytes: more than one 16-byte buffer, so at least three completions, the bytes in order.
        let long = (0..<40).map { UInt8($0) }
        Self.write(pair.receiver, long)
        let pieces = Self.collect(ring) { $0.reduce(0) { $0 + $1.bytes.count } >= 40 }
        #expect(pieces.flatMap(\.bytes) == long)
        #expect(pieces.count >= 3)
        #expect(pieces.allSatisfy { $0.token == 7 && $0.more && $0.bytes.count <= 16 && Int($0.result) == $0.bytes.count })
        ring.cancel(pair.sender.fileDescriptor)
        let end = Self.collect(ring) { $0.count >= 1 }
        #expect(end == [Seen(token: 7, result: -ECANCELED, more: false, bytes: [])])
    }

    @Test("the peer's close ends the receive with 0 bytes", .enabled(if: available))
    func endOfStream() throws {
        let pair = try LoopbackPair()
        defer { try? pair.sender.close() }
        let ring = try ReceiveRing(entries: 8, buffers: 4, bufferSize: 16)
        #expect(ring.armReceive(pair.sender.fileDescriptor, token: 3))
        ring.wait(block: false)
        Self.write(pair.receiver, [1, 2, 3])
        try pair.receiver.close()
        let seen = Self.collect(ring) { $0.contains { !$0.more } }
        #expect(seen == [Seen(token: 3, result: 3, more: true, bytes: [1, 2, 3]),
                         Seen(token: 3, result: 0, more: false, bytes: [])])
    }

    /// Two buffers of 16 bytes and 64 bytes waiting: the receive fills both and ends with ENOBUFS; the rest stays
    /// in the socket for the receive armed again.
    @Test("with every buffer taken the receive ends with ENOBUFS; armed again it reads the rest", .enabled(if: available))
    func noBuffersEndsTheReceive() throws {
        let pair = try LoopbackPair()
        defer { try? pair.sender.close(); try? pair.receiver.close() }
        let ring = try ReceiveRing(entries: 8, buffers: 2, bufferSize: 16)
        let bytes = (0..<64).map { UInt8($0) }
        Self.write(pair.receiver, bytes)
        // All 64 bytes queued (FIONREAD) before the receive starts.
        #expect(EventWait.until(seconds: 5, interval: 0.001) { (try? pair.sender.queuedBytes()) == 64 })
        #expect(ring.armReceive(pair.sender.fileDescriptor, token: 1))
        ring.wait(block: false)
        let first = Self.collect(ring) { $0.contains { !$0.more } }
        #expect(first.last.map { ($0.result, $0.more) } ?? (0, true) == (-ENOBUFS, false))
        var received = first.flatMap(\.bytes)
        #expect(received.count == 32)
        // The buffers are back once drained: armed again, the receive takes the other 32 bytes and stays armed.
        #expect(ring.armReceive(pair.sender.fileDescriptor, token: 2))
        ring.wait(block: false)
        let rest = Self.collect(ring) { $0.reduce(0) { $0 + $1.bytes.count } >= 32 || $0.contains { !$0.more } }
        #expect(rest.allSatisfy { $0.token == 2 && $0.more })
        received += rest.flatMap(\.bytes)
        #expect(received == bytes)
    }
}

enum MonotonicNanoseconds {
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
