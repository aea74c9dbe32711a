import Dispatch
import FleetTestSupport
@testable import FleetTransport
import Glibc
import Testing

/// Whether this kernel lets the process open an io_uring (it may be missing, or forbidden by seccomp or
/// kernel.io_uring_disabled). Decided once; without it the engine writes with send(2) and these tests do not apply.
enum SendRingSupport {
    static let available: Bool = (try? SendRing(capacity: 2)) != nil
}

/// A connected loopback TCP pair: `sender` is the non-blocking client socket (as the engine's), `receiver` the
/// accepted end.
struct LoopbackPair {
    let sender: TCPSocket
    let receiver: TCPSocket

    init() throws {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        defer { try? listener.close() }
        let sender = try connectThroughEpoll(to: listener.localAddress())
        guard try awaitEvents(.readable, on: listener.fileDescriptor) != nil,
              case .processed(let receiver) = try listener.accept()
        else {
            try? sender.close()
            throw SystemError(call: "accept", errno: ETIMEDOUT)
        }
        self.sender = sender
        self.receiver = receiver
    }

    func close() {
        try? sender.close()
        try? receiver.close()
    }
}

/// Bytes whose value depends on their position, so a misplaced or repeated chunk cannot compare equal.
func patterned(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 31 &+ ($0 >> 8)) }
}

/// Copies of the bytes handed to `SendRing.prepare`, kept until the test ends: the kernel reads them at `submit`,
/// later than an array's `withUnsafeBytes` pointer may be used.
final class PinnedBytes {
    private var blocks: [UnsafeMutableRawBufferPointer] = []

    func prepare(_ ring: SendRing, _ socket: TCPSocket, _ bytes: [UInt8], token: UInt64) -> Bool {
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        bytes.withUnsafeBytes { block.copyMemory(from: $0) }
        blocks.append(block)
        return ring.prepare(socket, UnsafeRawBufferPointer(rebasing: block[0..<bytes.count]), token: token)
    }

    deinit { blocks.forEach { $0.deallocate() } }
}

@Suite("SendRing: batched sends through io_uring on loopback TCP", .enabled(if: SendRingSupport.available))
struct SendRingTests {
    /// Submits what is prepared and returns every completion by token, in the order reported.
    static func submitAll(_ ring: SendRing) -> (error: SystemError?, completions: [UInt64: [SendRing.Completion]]) {
        var completions: [UInt64: [SendRing.Completion]] = [:]
        let error = ring.submit { token, completion in completions[token, default: []].append(completion) }
        return (error, completions)
    }


    /// Half-closes `sender` and reads `receiver` to end of stream: every byte that was ever sent, and no more.
    static func everythingSent(through pair: LoopbackPair, atMost limit: Int) throws -> [UInt8] {
        try pair.sender.shutdownWrite()
        return try readBytes(limit + 1, from: pair.receiver)
    }

    @Test("a batch the kernel refuses: every prepared send is reported not submitted, in order, and the ring closes")
    func refusedBatch() throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pair = try LoopbackPair()
        defer { pair.close() }
        let ring = try SendRing(capacity: 4)
        let first = patterned(10, seed: 1)
        let second = patterned(20, seed: 2)
        #expect(pinned.prepare(ring, pair.sender, first, token: 7))
        #expect(pinned.prepare(ring, pair.sender, second, token: 8))
        ring.simulateKernelRefusal()
        var reported: [(UInt64, SendRing.Completion)] = []
        let error = ring.submit { reported.append(($0, $1)) }
        #expect(error == SystemError(call: "io_uring_enter", errno: EBADF))
        #expect(reported.map(\.0) == [7, 8])
        #expect(reported.map(\.1) == [.notSubmitted, .notSubmitted])
        #expect(!ring.isUsable)
        #expect(ring.pendingCount == 0)
        #expect(!pinned.prepare(ring, pair.sender, first, token: 9))
        // Nothing reached the peer: the caller writes those bytes itself.
        #expect(try Self.everythingSent(through: pair, atMost: 30) == [])
    }

    @Test("three sockets' bytes go out in one submission: each peer reads exactly its bytes, each token is reported once")
    func oneSubmissionForSeveralSockets() throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pairs = try (0..<3).map { _ in try LoopbackPair() }
        defer { pairs.forEach { $0.close() } }
        let payloads = [patterned(5, seed: 1), patterned(300, seed: 2), patterned(4_000, seed: 3)]
        let ring = try SendRing(capacity: 8)
        #expect(ring.pendingCount == 0)
        for (index, pair) in pairs.enumerated() {
            #expect(pinned.prepare(ring, pair.sender, payloads[index], token: 10 + UInt64(index)))
            #expect(ring.pendingCount == index + 1)
        }
        let (error, completions) = Self.submitAll(ring)
        #expect(error == nil)
        #expect(completions == [10: [.sent(5)], 11: [.sent(300)], 12: [.sent(4_000)]])
        #expect(ring.pendingCount == 0)
        #expect(ring.isUsable)
        for (index, pair) in pairs.enumerated() {
            #expect(try Self.everythingSent(through: pair, atMost: payloads[index].count) == payloads[index])
        }
        // Nothing prepared: submit makes no call and reports nothing.
        let (emptyError, emptyCompletions) = Self.submitAll(ring)
        #expect(emptyError == nil)
        #expect(emptyCompletions.isEmpty)
    }

    @Test("the kernel rounds the slot count up to a power of two", arguments: [
        (0, 1), (1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (1_000, 1_024), (1_024, 1_024),
    ])
    func capacityRounding(requested: Int, granted: Int) throws {
        #expect(try SendRing(capacity: requested).capacity == granted)
    }

    @Test("32,768 slots is the kernel's maximum: one more is refused with EINVAL, not clamped")
    func capacityLimit() throws {
        #expect(try SendRing(capacity: 32_768).capacity == 32_768)
        let error = #expect(throws: SystemError.self) { try SendRing(capacity: 32_769) }
        #expect(error == SystemError(call: "io_uring_setup", errno: EINVAL))
    }

    @Test("more completions than one drain batch (600 sends in one submission): each token reported once, with its count")
    func manyCompletionsInOneSubmission() throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pairs = try (0..<3).map { _ in try LoopbackPair() }
        defer { pairs.forEach { $0.close() } }
        let ring = try SendRing(capacity: 1_024)
        // 600 sends of 1 to 3 bytes, round-robin over the sockets (each gets every length).
        func length(_ token: Int) -> Int { 1 + (token / 3) % 3 }
        var expected: [[UInt8]] = [[], [], []]
        for token in 0..<600 {
            let chunk = patterned(length(token), seed: token)
            expected[token % 3] += chunk
            #expect(pinned.prepare(ring, pairs[token % 3].sender, chunk, token: UInt64(token)))
        }
        #expect(ring.pendingCount == 600)
        var order: [UInt64] = []
        var completions: [UInt64: SendRing.Completion] = [:]
        let error = ring.submit { token, completion in
            order.append(token)
            completions[token] = completion
        }
        #expect(error == nil)
        #expect(order.count == 600)
        #expect(completions == Dictionary(uniqueKeysWithValues: (0..<600).map { (UInt64($0), .sent(length($0))) }))
        #expect(ring.pendingCount == 0)
        for (index, pair) in pairs.enumerated() {
            #expect(try Self.everythingSent(through: pair, atMost: expected[index].count) == expected[index])
        }
    }

    @Test("a token of 56 bits comes back unchanged", arguments: [UInt64(0), UInt64(1) << 32, (UInt64(1) << 56) - 1])
    func largestToken(token: UInt64) throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pair = try LoopbackPair()
        defer { pair.close() }
        let ring = try SendRing(capacity: 2)
        #expect(pinned.prepare(ring, pair.sender, [9, 8, 7], token: token))
        #expect(Self.submitAll(ring).completions == [token: [.sent(3)]])
    }

    @Test("a ring of 4 refuses a 5th prepare until submit; the sends leave in the order prepared")
    func refusesPastCapacity() throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pair = try LoopbackPair()
        defer { pair.close() }
        let ring = try SendRing(capacity: 4)
        #expect(ring.capacity == 4)
        let chunks: [[UInt8]] = [[1], [2, 2], [3, 3, 3], [4, 4, 4, 4], [5, 5, 5, 5, 5]]
        for (index, chunk) in chunks.prefix(4).enumerated() {
            #expect(pinned.prepare(ring, pair.sender, chunk, token: UInt64(index)))
        }
        #expect(!pinned.prepare(ring, pair.sender, chunks[4], token: 4))
        #expect(ring.pendingCount == 4)
        let (error, completions) = Self.submitAll(ring)
        #expect(error == nil)
        #expect(completions == [0: [.sent(1)], 1: [.sent(2)], 2: [.sent(3)], 3: [.sent(4)]])
        #expect(ring.pendingCount == 0)
        // Every slot is free again.
        #expect(pinned.prepare(ring, pair.sender, chunks[4], token: 4))
        #expect(Self.submitAll(ring).completions == [4: [.sent(5)]])
        #expect(try Self.everythingSent(through: pair, atMost: 15) == chunks.flatMap { $0 })
    }

    @Test("empty bytes are never prepared")
    func emptyBytesRefused() throws {
        let pair = try LoopbackPair()
        defer { pair.close() }
        let ring = try SendRing(capacity: 2)
        #expect(!ring.prepare(pair.sender, UnsafeRawBufferPointer(start: nil, count: 0), token: 1))
        let someBytes: [UInt8] = [1, 2, 3]
        // A real address with no bytes after it is refused too.
        #expect(!someBytes.withUnsafeBytes { ring.prepare(pair.sender, UnsafeRawBufferPointer(rebasing: $0[1..<1]), token: 2) })
        #expect(ring.pendingCount == 0)
        #expect(Self.submitAll(ring).completions.isEmpty)
    }

    @Test("a send larger than the free space is partial; once the peer's window is shut a send would block; the peer reads exactly the bytes reported sent")
    func partialThenWouldBlock() throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pair = try LoopbackPair()
        defer { pair.close() }
        // Small kernel buffers (the kernel doubles the value given), locked so autotuning does not grow them.
        try pair.sender.setOption(level: SOL_SOCKET, name: SO_SNDBUF, value: 8 * 1024)
        try pair.receiver.setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: 8 * 1024)
        let ring = try SendRing(capacity: 2)
        // 4 MiB: far more than the two buffers hold together, so no send can take all of it.
        let payload = patterned(4 << 20)
        let outbound = OutboundBuffer(initialCapacity: payload.count, maximumCapacity: payload.count)
        #expect(outbound.append(payload))

        #expect(ring.prepare(pair.sender, outbound.readableBytes, token: 1))
        let first = Self.submitAll(ring)
        #expect(first.error == nil)
        guard case .sent(let firstCount)? = first.completions[1]?.first, first.completions[1]?.count == 1 else {
            Issue.record("expected one .sent, got \(first.completions)")
            return
        }
        #expect(firstCount > 0 && firstCount < payload.count)  // partial
        #expect(outbound.markWritten(firstCount) == .pending)
        #expect(Array(outbound.readableBytes) == Array(payload[firstCount...]))

        // The peer does not read. ACKs keep freeing send-buffer space for a while; send (as the lane would, the
        // unsent rest each time) until the socket stays unwritable, i.e. the receiver's window is zero.
        var sentThroughRing = firstCount
        var settled = false
        for _ in 0..<10_000 {
            #expect(ring.prepare(pair.sender, outbound.readableBytes, token: 2))
            let completions = Self.submitAll(ring).completions
            guard completions.count == 1, let only = completions[2], only.count == 1 else {
                Issue.record("expected one completion for token 2, got \(completions)")
                return
            }
            switch only[0] {
            case .sent(let count):
                sentThroughRing += count
                #expect(outbound.markWritten(count) == .pending)
            case .wouldBlock:
                if try awaitEvents(.writable, on: pair.sender.fileDescriptor, timeoutMilliseconds: 100) == nil {
                    settled = true
                }
            default:
                Issue.record("unexpected completion \(only[0])")
                return
            }
            if settled { break }
        }
        #expect(settled)
        // Full now: a direct write takes nothing, and so does a ring send, however small.
        let oneByte: [UInt8] = [0xEE]
        #expect(try oneByte.withUnsafeBytes { try pair.sender.write(from: $0) } == .wouldBlock)
        #expect(pinned.prepare(ring, pair.sender, oneByte, token: 3))
        #expect(Self.submitAll(ring).completions == [3: [.wouldBlock]])
        #expect(outbound.count == payload.count - sentThroughRing)

        // Every byte the completions reported, in order, and none of those that would have blocked.
        let received = try Self.everythingSent(through: pair, atMost: payload.count)
        #expect(received.count == sentThroughRing)
        #expect(received == Array(payload[..<sentThroughRing]))
    }

    /// How the peer goes away, and the errno the next send reports once the sender has seen it.
    enum PeerEnd: String, CaseIterable, CustomTestStringConvertible {
        /// close(2): FIN. Our socket is in CLOSE_WAIT; the first send after it succeeds locally, the peer answers
        /// the data with RST, and a reset in CLOSE_WAIT is reported as EPIPE.
        case closed
        /// SO_LINGER {1, 0}: RST at once, while our socket is ESTABLISHED: ECONNRESET.
        case reset

        var testDescription: String { rawValue }
    }

    @Test("a peer that went away: the send fails with the exact errno, later ones with EPIPE, and no SIGPIPE",
          arguments: PeerEnd.allCases)
    func peerGone(end: PeerEnd) throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pair = try LoopbackPair()
        defer { try? pair.sender.close() }
        let ring = try SendRing(capacity: 2)
        let payload = patterned(100)
        switch end {
        case .closed:
            try pair.receiver.close()
            // Wait for the FIN (end of stream), so our socket is in CLOSE_WAIT before we send.
            #expect(try awaitEvents(.readable, on: pair.sender.fileDescriptor) != nil)
            #expect(pinned.prepare(ring, pair.sender, payload, token: 1))
            #expect(Self.submitAll(ring).completions == [1: [.sent(100)]])  // accepted locally; the peer answers RST
        case .reset:
            try pair.receiver.closeAbortively()
        }
        // Wait for the RST to be processed: the socket reports an error / hangup.
        let events = try #require(try awaitEvents(.error, on: pair.sender.fileDescriptor))
        #expect(events.contains(.hangup))
        let expected = end == .closed ? EPIPE : ECONNRESET
        let ringRaised = Self.raisesSIGPIPE {
            #expect(pinned.prepare(ring, pair.sender, payload, token: 2))
            #expect(Self.submitAll(ring).completions == [2: [.failed(errno: expected)]])
            // The pending error was consumed by that send; the socket is shut for writing from now on.
            #expect(pinned.prepare(ring, pair.sender, payload, token: 3))
            #expect(Self.submitAll(ring).completions == [3: [.failed(errno: EPIPE)]])
        }
        // No SIGPIPE: the ring asks for MSG_NOSIGNAL, and io_uring adds it to every send anyway.
        #expect(!ringRaised)
        #expect(ring.isUsable)  // a failed send is the socket's business, not the ring's
        // The check above can see a SIGPIPE: a plain send(2) without MSG_NOSIGNAL raises one.
        let plainRaised = Self.raisesSIGPIPE {
            #expect(payload.withUnsafeBytes { send(pair.sender.fileDescriptor, $0.baseAddress, $0.count, 0) } == -1)
            #expect(errno == EPIPE)
        }
        #expect(plainRaised)
    }

    /// Runs `body` with SIGPIPE blocked on this thread and tells whether `body` raised one, taking it so it is
    /// never delivered. A blocked signal stays pending even when the process ignores it, so this sees a SIGPIPE
    /// whatever the test runner's disposition is; a send raises it on the sending thread only.
    static func raisesSIGPIPE(_ body: () -> Void) -> Bool {
        var sigpipe = sigset_t()
        sigemptyset(&sigpipe)
        sigaddset(&sigpipe, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &sigpipe, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        body()
        var noWait = timespec(tv_sec: 0, tv_nsec: 0)
        return sigtimedwait(&sigpipe, nil, &noWait) == SIGPIPE
    }

    /// A descriptor a send cannot use, and the errno its completion carries.
    enum BadDescriptor: String, CaseIterable, CustomTestStringConvertible {
        /// -1: never a descriptor.
        case negative
        /// The process's descriptor limit: every open descriptor is below it, so this one is never open (unlike
        /// a descriptor closed here, whose number another test running in parallel may be given at once).
        case atLimit
        /// An open pipe: a descriptor, but not a socket.
        case pipe

        var testDescription: String { rawValue }
    }

    /// The kernel looks the descriptor up when it issues the send, so the failure is that send's completion and
    /// the rest of the batch is issued regardless (this holds with or without IORING_SETUP_SUBMIT_ALL, which only
    /// concerns entries rejected before issue).
    @Test("one bad descriptor fails alone with its errno; the sends around it in the same submission still go out",
          arguments: BadDescriptor.allCases)
    func badDescriptorFailsAlone(bad: BadDescriptor) throws {
        let pinned = PinnedBytes()
        defer { withExtendedLifetime(pinned) {} }  // the ring reads the bytes at submit
        let pairs = try (0..<2).map { _ in try LoopbackPair() }
        defer { pairs.forEach { $0.close() } }
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer { pipeEnds.forEach { _ = Glibc.close($0) } }
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let descriptor: Int32
        let expected: Int32
        switch bad {
        case .negative: (descriptor, expected) = (-1, EBADF)
        case .atLimit: (descriptor, expected) = (Int32(clamping: limit.rlim_cur), EBADF)
        case .pipe: (descriptor, expected) = (pipeEnds[1], ENOTSOCK)
        }
        let ring = try SendRing(capacity: 4)
        let before = patterned(10, seed: 7)
        let after = patterned(20, seed: 9)
        #expect(pinned.prepare(ring, pairs[0].sender, before, token: 1))
        #expect(pinned.prepare(ring, TCPSocket(adopting: descriptor), [1, 2, 3], token: 2))
        #expect(pinned.prepare(ring, pairs[1].sender, after, token: 3))
        let (error, completions) = Self.submitAll(ring)
        #expect(error == nil)
        #expect(completions == [1: [.sent(10)], 2: [.failed(errno: expected)], 3: [.sent(20)]])
        #expect(ring.isUsable)
        #expect(try Self.everythingSent(through: pairs[0], atMost: 10) == before)
        #expect(try Self.everythingSent(through: pairs[1], atMost: 20) == after)
    }
}

/// Where io_uring cannot be opened the engine writes with send(2): the ring must say why, with the kernel's errno.
@Suite("SendRing where the kernel forbids io_uring or has none")
struct SendRingUnavailableTests {
    @Test("io_uring_setup refused (EPERM: a seccomp profile, kernel.io_uring_disabled) or missing (ENOSYS): the ring throws that errno from io_uring_setup",
          arguments: [EPERM, ENOSYS])
    func refusedOpen(code: Int32) throws {
        let (outcome, filteredThreadsLeft) = try ThreadWithoutIOURing.run(failingWith: code) {
            Result { () throws(SystemError) in try SendRing(capacity: 4) }
        }
        #expect(filteredThreadsLeft == 0)
        #expect(throws: SystemError(call: "io_uring_setup", errno: code)) { try outcome.get() }
        // The filter made the difference: on any other thread the ring opens wherever this kernel allows it.
        #expect(((try? SendRing(capacity: 4)) != nil) == SendRingSupport.available)
    }
}

/// The helper the tests above rely on: it must see a filtered thread that its body left running, and must not
/// count the filtered thread itself, which /proc may still list for a moment after pthread_join.
@Suite("ThreadWithoutIOURing counts the filtered threads a body leaves behind")
struct ThreadWithoutIOURingTests {
    final class Child: @unchecked Sendable {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        /// Written by the child before `started` is signalled.
        var threadID: pid_t = 0
    }

    @Test("a thread started on the filtered thread inherits the filter and is counted while it lives; the filtered thread never is")
    func countsInheritedThreads() throws {
        let child = Child()
        let ((), leftWhileRunning) = try ThreadWithoutIOURing.run(failingWith: EPERM) {
            TestThread.start {
                child.threadID = ThreadWithoutIOURing.currentThreadID()
                child.started.signal()
                child.release.wait()
            }
            child.started.wait()
        }
        child.release.signal()
        #expect(leftWhileRunning == 1)
        // Until the child has left /proc it would still be counted.
        var polls = 0
        while access("/proc/self/task/\(child.threadID)", F_OK) == 0, polls < 2_000 {
            usleep(1_000)
            polls += 1
        }
        for _ in 0..<20 {
            let ((), left) = try ThreadWithoutIOURing.run(failingWith: EPERM) {}
            #expect(left == 0)
        }
    }
}
