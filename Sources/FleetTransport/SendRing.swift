import CSendRing
import Glibc

/// A lane's end-of-turn writes handed to the kernel in one system call (io_uring), instead of one send(2) per
/// connection.
///
/// Why it pays on a machine shared with the broker: every send wakes the broker, and the broker, woken on the
/// sender's core, preempted the lane after each one (measured: 5,500 preemptions a second for 15,000 clients at
/// 1 msg/s, with a context switch pair each). Inside one io_uring_enter the lane keeps the core until every send
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

    private var ring = fb_send_ring()
    /// Submission slots: this many sends can be prepared before `submit` must run.
    public let capacity: Int
    /// False after a failed submission: the ring is closed and every later `prepare` is refused.
    public private(set) var isUsable = true

    /// Opens a ring with at least `capacity` slots (rounded up to a power of two by the kernel; at most 32,768,
    /// beyond which it throws EINVAL). Throws when the kernel has no io_uring or forbids it (ENOSYS, EPERM: e.g. a
    /// container's seccomp profile, kernel.io_uring_disabled): the caller then writes with send(2).
    public init(capacity: Int = 1024) throws(SystemError) {
        let result = fb_send_ring_open(&ring, UInt32(clamping: max(1, capacity)))
        if result < 0 { throw SystemError(call: "io_uring_setup", errno: -result) }
        self.capacity = Int(ring.entries)
    }

    deinit { fb_send_ring_close(&ring) }

    /// Sends prepared and not yet submitted.
    public var pendingCount: Int { Int(fb_send_ring_pending(&ring)) }

    /// Prepares one send of `bytes` on `socket`, reported back under `token`. The bytes must stay where they are,
    /// unchanged, until `submit` returns. False when every slot is taken (submit first) or the ring is unusable.
    @inline(__always)
    public func prepare(_ socket: TCPSocket, _ bytes: UnsafeRawBufferPointer, token: UInt64) -> Bool {
        guard isUsable, let base = bytes.baseAddress, bytes.count > 0 else { return false }
        return fb_send_ring_prepare(&ring, socket.fileDescriptor, base, UInt32(clamping: bytes.count), token) == 0
    }

    /// Tests only: the next `submit` fails as if the kernel refused the batch (io_uring_enter gets EBADF).
    func simulateKernelRefusal() {
        Glibc.close(ring.fd)
        ring.fd = -1
    }

    /// Submits every prepared send, waits until all have completed, and reports each with its token (in
    /// completion order). If the kernel refuses the batch, the sends it did not take are reported as
    /// `.notSubmitted`, the ring is closed (`isUsable` becomes false) and the error is returned.
    @discardableResult
    public func submit(_ report: (UInt64, Completion) -> Void) -> SystemError? {
        var unsubmitted: UInt32 = 0
        let result = fb_send_ring_submit(&ring, &unsubmitted)
        var token: UInt64 = 0
        var value: Int32 = 0
        while fb_send_ring_next_completion(&ring, &token, &value) == 1 {
            if value >= 0 {
                report(token, .sent(Int(value)))
            } else if -value == EAGAIN || -value == EWOULDBLOCK {
                report(token, .wouldBlock)
            } else {
                report(token, .failed(errno: -value))
            }
        }
        guard result < 0 else { return nil }
        while fb_send_ring_next_unsubmitted(&ring, &token) == 1 { report(token, .notSubmitted) }
        isUsable = false
        fb_send_ring_close(&ring)
        return SystemError(call: "io_uring_enter", errno: -result)
    }
}
