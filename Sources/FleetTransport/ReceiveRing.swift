import CLaneRing
import Glibc

/// A lane's receives through io_uring (liburing: `CLaneRing`'s receive ring): one multishot receive per socket into
/// a ring of provided buffers, and a multishot poll of the lane's epoll descriptor for everything else (timers,
/// connects, writability, TLS and WebSocket sockets). The lane's thread then waits in one io_uring_enter, which also
/// copies every socket's bytes into the buffers, instead of an epoll_wait followed by one recv(2) per ready socket.
///
/// Not thread-safe: one lane owns a ring. Requests are tied to the thread that submitted them (the kernel copies a
/// receive's bytes on that thread, and cancels its requests when it exits), so the lane submits from its driver
/// thread; a receive cancelled by a thread's exit completes with ECANCELED and is armed again.
public final class ReceiveRing {
    public enum Kind: UInt32, Sendable {
        case receive = 1
        case poll = 2
        case cancel = 3
    }

    /// One completion. `bytes` is valid only during the `drain` call that hands it over.
    public struct Completion {
        public var kind: Kind
        public var token: UInt64
        /// Bytes received (0: end of stream), the poll's events, or -errno.
        public var result: Int32
        /// False when this was the request's last completion (multishot ended: error, end of stream, cancel, or
        /// no provided buffer free: ENOBUFS).
        public var more: Bool
        public var bytes: UnsafeRawBufferPointer
    }

    private let ring: OpaquePointer
    private let completions: UnsafeMutablePointer<fb_rx_completion>
    private static let completionBatch = 256
    public let bufferCount: Int
    public let bufferSize: Int

    /// Throws when the kernel has no io_uring or forbids it (ENOSYS, EPERM: seccomp, kernel.io_uring_disabled), or
    /// has no provided-buffer rings or multishot receive (EINVAL, EOPNOTSUPP: before 6.0): the lane then reads with
    /// recv(2) after epoll. `buffers` must be a power of two.
    ///
    /// `deferred`: DEFER_TASKRUN and SINGLE_ISSUER (Linux 6.1 and later, else this throws EINVAL): the ring starts
    /// disabled, the thread that calls `enable()` is the only one that enters the kernel for it from then on (other
    /// threads only prepare requests, which go in with its next submission), and a wait for a batch of completions
    /// (`wait(batch:until:)`) sleeps through the receives until the batch is complete instead of waking per receive.
    public init(entries: Int = 1024, buffers: Int = 256, bufferSize: Int = 4096, deferred: Bool = false) throws(SystemError) {
        var ring: OpaquePointer?
        let result = fb_rx_open(&ring, UInt32(clamping: entries), UInt32(clamping: buffers), UInt32(clamping: bufferSize),
                                deferred ? 1 : 0)
        guard result == 0, let ring else { throw SystemError(call: "io_uring_setup", errno: -result) }
        self.ring = ring
        self.bufferCount = buffers
        self.bufferSize = bufferSize
        self.completions = .allocate(capacity: Self.completionBatch)
    }

    deinit {
        fb_rx_close(ring)
        completions.deallocate()
    }

    /// Prepares a multishot receive on `fileDescriptor` (submitted by the next `wait`). False if the kernel refused
    /// a submission made to free a slot.
    @inline(__always)
    public func armReceive(_ fileDescriptor: Int32, token: UInt64) -> Bool {
        fb_rx_arm_receive(ring, fileDescriptor, token) == 0
    }

    public func armPoll(_ fileDescriptor: Int32, token: UInt64) -> Bool {
        fb_rx_arm_poll(ring, fileDescriptor, token) == 0
    }

    /// Cancels the requests on `fileDescriptor` now, so closing it right after closes the connection. On a deferred
    /// ring from a thread that is not its owner, the cancel of the receive armed with `token` waits for the owner's
    /// next submission (the socket closes then): returns true in that case, so the caller can wake the owner.
    @discardableResult
    public func cancel(_ fileDescriptor: Int32, token: UInt64 = 0) -> Bool {
        fb_rx_cancel(ring, fileDescriptor, token) == 1
    }

    /// Whether the ring was opened `deferred`.
    public var isDeferred: Bool { fb_rx_is_deferred(ring) != 0 }

    /// A deferred ring: the calling thread becomes its owner, the one thread that enters the kernel for it.
    /// nil, or the error (EEXIST: another thread owns it).
    @discardableResult
    public func enable() -> SystemError? {
        let result = fb_rx_enable(ring)
        return result < 0 ? SystemError(call: "io_uring_register", errno: -result) : nil
    }

    /// Waits until `batch` completions are ready or the monotonic clock reaches `deadline` (ns), submitting nothing.
    /// nil (also at the deadline), or the error (EEXIST: a deferred ring's non-owner thread).
    @discardableResult
    public func wait(batch: Int, until deadline: UInt64) -> SystemError? {
        let result = fb_rx_wait_until(ring, UInt32(clamping: batch), deadline)
        return result < 0 ? SystemError(call: "io_uring_enter", errno: -result) : nil
    }

    /// Completions waiting.
    public var readyCount: Int { Int(fb_rx_ready(ring)) }

    /// Waits until a completion is ready, submitting nothing: callable while another thread prepares requests
    /// (under the lane's queue). nil, or the error (EINTR: woken by a signal).
    @discardableResult
    public func block() -> SystemError? {
        let result = fb_rx_block(ring)
        return result < 0 ? SystemError(call: "io_uring_enter", errno: -result) : nil
    }

    /// As `block()`, then waits on, `minimumWait` µs in all, for up to `batch` completions (kernels from 6.12;
    /// older ones return with the first).
    @discardableResult
    public func block(batch: Int, minimumWait microseconds: Int) -> SystemError? {
        let result = fb_rx_block_batched(ring, UInt32(clamping: batch), UInt32(clamping: microseconds))
        return result < 0 ? SystemError(call: "io_uring_enter", errno: -result) : nil
    }

    /// Submits what is prepared and, with `block`, waits for a completion. nil, or the error (EINTR: woken by a
    /// signal without one).
    @discardableResult
    public func wait(block: Bool) -> SystemError? {
        let result = fb_rx_wait(ring, block ? 1 : 0)
        return result < 0 ? SystemError(call: "io_uring_enter", errno: -result) : nil
    }

    /// Submits what is prepared and runs the task work waiting for this thread without waiting for any: a deferred
    /// ring posts its completions (and copies its receives) only when its owner enters the kernel for it, so an
    /// owner that runs turn after turn without waiting calls this between them. True when this thread may not
    /// (a deferred ring's non-owner) and requests wait for the owner.
    @discardableResult
    public func flush() -> Bool {
        fb_rx_flush(ring) == 1
    }

    /// Submits what is prepared (`wait(block: false)`); true when this thread may not (a deferred ring's non-owner)
    /// and requests wait for the owner.
    public func submitOrLeave() -> Bool {
        fb_rx_wait(ring, 0) == 1
    }

    /// Hands over every waiting completion (up to `limit`), oldest first; each buffer goes back to the kernel once
    /// `body` returned. Returns how many.
    @inline(__always)
    public func drain(limit: Int = .max, _ body: (Completion) -> Void) -> Int {
        var total = 0
        while total < limit {
            let count = Int(fb_rx_drain(ring, completions, UInt32(min(Self.completionBatch, limit - total))))
            for index in 0..<count {
                let raw = completions[index]
                let kind = Kind(rawValue: raw.kind) ?? .cancel
                var bytes = UnsafeRawBufferPointer(start: nil, count: 0)
                if raw.buffer >= 0, raw.result > 0 {
                    bytes = UnsafeRawBufferPointer(start: fb_rx_buffer(ring, UInt32(raw.buffer)), count: Int(raw.result))
                }
                body(Completion(kind: kind, token: raw.token, result: raw.result,
                                more: raw.flags & FB_RX_MORE != 0, bytes: bytes))
                if raw.buffer >= 0 { fb_rx_recycle(ring, UInt32(raw.buffer)) }
            }
            total += count
            if count < Self.completionBatch { break }
        }
        return total
    }
}
