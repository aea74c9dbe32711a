import CLaneRing
import Glibc

/// A lane's end-of-turn writes handed to the kernel in one system call (io_uring, through liburing: `CLaneRing`),
/// instead of one send(2) per connection.
///
/// Why it pays on a machine shared with the broker: every send wakes the broker, and the broker, woken on the
/// sender's core, preempted the lane after each one, a context-switch pair per send (figures in
/// docs/performance.md). Inside one io_uring_enter the lane keeps the core until every send
/// of the turn is done, and the broker then reads them in one wakeup. It also saves a kernel entry per send.
///
/// Every send is non-blocking (MSG_DONTWAIT): a full socket completes with EAGAIN at once, so `submit` returns only
/// when every prepared send has completed and the buffers may be reused. Not thread-safe: one lane owns a ring.
public final class SendRing {
    /// How one prepared send ended.
    public enum Completion: Sendable, Equatable {
        /// `count` bytes were written (fewer than prepared: the send buffer filled up).
        case sent(Int)
        /// The send buffer was full; nothing was written.
        case wouldBlock
        /// The send failed (EPIPE, ECONNRESET, EBADF, ...).
        case failed(errno: Int32)
        /// The kernel did not take this send (the ring failed; see `submit`): write these bytes some other way.
        case notSubmitted
    }

    /// The kernel's ring (liburing); nil once a submission failed and the ring was closed.
    private var ring: OpaquePointer?
    /// Completions copied out of the ring, a batch at a time.
    private let completions: UnsafeMutablePointer<fb_ring_completion>
    private static let completionBatch = 256
    /// Submission slots: this many sends can be prepared before `submit` must run.
    public let capacity: Int
    /// False after a failed submission: the ring is closed and every later `prepare` is refused.
    public var isUsable: Bool { ring != nil }

    /// Opens a ring with at least `capacity` slots (rounded up to a power of two by the kernel; at most 32,768,
    /// beyond which it throws EINVAL). Throws when the kernel has no io_uring or forbids it (ENOSYS, EPERM: e.g. a
    /// container's seccomp profile, kernel.io_uring_disabled): the caller then writes with send(2).
    public init(capacity: Int = 1024) throws(SystemError) {
        var ring: OpaquePointer?
        let result = fb_ring_open(&ring, UInt32(clamping: max(1, capacity)), 0)
        guard result == 0, let ring else { throw SystemError(call: "io_uring_setup", errno: -result) }
        self.ring = ring
        self.capacity = Int(fb_ring_entries(ring))
        self.completions = .allocate(capacity: Self.completionBatch)
    }

    deinit {
        fb_ring_close(ring)
        completions.deallocate()
    }

    /// Sends prepared and not yet submitted.
    public var pendingCount: Int { ring.map { Int(fb_ring_prepared($0)) } ?? 0 }

    /// Prepares one send of `bytes` on `socket`, reported back under `token` (below 2^56). The bytes must stay
    /// where they are, unchanged, until `submit` returns. False when every slot is taken (submit first) or the ring
    /// is unusable.
    @inline(__always)
    public func prepare(_ socket: TCPSocket, _ bytes: UnsafeRawBufferPointer, token: UInt64) -> Bool {
        guard let ring, let base = bytes.baseAddress, bytes.count > 0 else { return false }
        assert(token >> FB_RING_TOKEN_BITS == 0, "a ring token has 56 bits")
        return fb_ring_prepare_send(ring, socket.fileDescriptor, base, UInt32(clamping: bytes.count), token) == 0
    }

    /// Tests only: the next `submit` fails as if the kernel refused the batch (io_uring_enter gets EBADF).
    func simulateKernelRefusal() {
        if let ring { fb_ring_close_descriptor(ring) }
    }

    /// Submits every prepared send, waits until all have completed, and reports each with its token (in
    /// completion order). If the kernel refuses the batch, the sends it did not take are reported as
    /// `.notSubmitted`, the ring is closed (`isUsable` becomes false) and the error is returned.
    @discardableResult
    public func submit(_ report: (UInt64, Completion) -> Void) -> SystemError? {
        guard let ring else { return nil }
        let result = fb_ring_submit(ring)
        while true {
            let count = Int(fb_ring_drain(ring, completions, UInt32(Self.completionBatch)))
            for index in 0..<count {
                let completion = completions[index]
                let value = completion.result
                if value >= 0 {
                    report(completion.token, .sent(Int(value)))
                } else if -value == EAGAIN || -value == EWOULDBLOCK {
                    report(completion.token, .wouldBlock)
                } else {
                    report(completion.token, .failed(errno: -value))
                }
            }
            if count < Self.completionBatch { break }
        }
        guard result < 0 else { return nil }
        var kind: UInt32 = 0
        var token: UInt64 = 0
        while fb_ring_next_unsubmitted(ring, &kind, &token) == 1 { report(token, .notSubmitted) }
        fb_ring_close(ring)
        self.ring = nil
        return SystemError(call: "io_uring_enter", errno: -result)
    }
}
