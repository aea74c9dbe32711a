import FleetTestSupport
@testable import FleetTransport
import Glibc
import Synchronization
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
            // A deferred ring posts completions only while its owner waits on it.
            if ring.isDeferred { ring.wait(batch: 1, until: MonotonicNanoseconds.now() + 1_000_000) }
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

    static let deferredAvailable = (try? ReceiveRing(entries: 8, buffers: 8, bufferSize: 256, deferred: true)) != nil

    /// A deferred ring (DEFER_TASKRUN, SINGLE_ISSUER): requests prepared on another thread go in only with the owner's
    /// submission, a cancel prepared there (by the receive's token) too, and a batch wait is not ended by fewer
    /// completions than asked for: it sleeps to its deadline, and the completions are there when it returns.
    @Test("a deferred ring: other threads' requests wait for the owner; a batch wait ends at the batch or the deadline",
          .enabled(if: deferredAvailable))
    func deferredRingOwnerAndBatchWait() throws {
        let pairs = try (0..<3).map { _ in try LoopbackPair() }
        defer { for pair in pairs { try? pair.sender.close(); try? pair.receiver.close() } }
        let ring = try ReceiveRing(entries: 8, buffers: 8, bufferSize: 64, deferred: true)
        #expect(ring.isDeferred)
        #expect(ring.enable() == nil)  // this thread owns it
        // Another thread prepares the receives: it may not submit, so it leaves them (true) for the owner.
        final class Box: @unchecked Sendable { var left = false; var enableError: Int32 = 0 }
        let box = Box()
        nonisolated(unsafe) let shared = ring  // used by one thread at a time: the other waits on `done`
        let descriptors = pairs.map(\.sender.fileDescriptor)
        let done = Atomic<Bool>(false)
        TestThread.start {
            var armed = true
            for (index, descriptor) in descriptors.enumerated() {
                armed = armed && shared.armReceive(descriptor, token: UInt64(index))
            }
            box.left = armed && shared.submitOrLeave()
            box.enableError = shared.enable()?.errno ?? 0
            done.store(true, ordering: .releasing)
        }
        while !done.load(ordering: .acquiring) { usleep(1000) }
        #expect(box.left)
        #expect(box.enableError == EEXIST)
        // Not submitted yet: bytes written now wait in the sockets.
        Self.write(pairs[0].receiver, [1])
        #expect(ring.wait(batch: 1, until: MonotonicNanoseconds.now() + 50_000_000) == nil)
        #expect(ring.readyCount == 0)
        #expect(!ring.submitOrLeave())  // the owner submits: false, nothing left
        // One receive has bytes (the byte written before): a wait for 3 sleeps to its deadline, then the 1 is there.
        let started = MonotonicNanoseconds.now()
        #expect(ring.wait(batch: 3, until: started + 100_000_000) == nil)
        #expect(MonotonicNanoseconds.now() - started >= 100_000_000)
        var seen: [Seen] = []
        _ = ring.drain { seen.append(Seen(token: $0.token, result: $0.result, more: $0.more, bytes: Array($0.bytes))) }
        #expect(seen == [Seen(token: 0, result: 1, more: true, bytes: [1])])
        // Both others get a byte: a wait for 2 returns with both, long before its 10 s deadline.
        Self.write(pairs[1].receiver, [2])
        Self.write(pairs[2].receiver, [3])
        let second = MonotonicNanoseconds.now()
        #expect(ring.wait(batch: 2, until: second + 10_000_000_000) == nil)
        #expect(MonotonicNanoseconds.now() - second < 5_000_000_000)
        seen = []
        _ = ring.drain { seen.append(Seen(token: $0.token, result: $0.result, more: $0.more, bytes: Array($0.bytes))) }
        #expect(seen.sorted { $0.token < $1.token } == [Seen(token: 1, result: 1, more: true, bytes: [2]),
                                                        Seen(token: 2, result: 1, more: true, bytes: [3])])
        // A cancel from another thread, by the receive's token, is left for the owner too and ends that receive only.
        done.store(false, ordering: .relaxed)
        TestThread.start {
            box.left = shared.cancel(descriptors[1], token: 1)
            done.store(true, ordering: .releasing)
        }
        while !done.load(ordering: .acquiring) { usleep(1000) }
        #expect(box.left)
        #expect(!ring.submitOrLeave())
        let end = Self.collect(ring) { $0.count >= 1 }
        #expect(end == [Seen(token: 1, result: -ECANCELED, more: false, bytes: [])])
        Self.write(pairs[2].receiver, [4])
        let still = Self.collect(ring) { $0.count >= 1 }
        #expect(still == [Seen(token: 2, result: 1, more: true, bytes: [4])])
    }
}

enum MonotonicNanoseconds {
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
