import CLinux
import Glibc

/// Readiness flags of epoll(7). Values are the kernel's (uapi/linux/eventpoll.h).
public struct EpollEvents: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let readable = EpollEvents(rawValue: EPOLLIN.rawValue)
    public static let writable = EpollEvents(rawValue: EPOLLOUT.rawValue)
    /// Always reported, never needs asking for.
    public static let error = EpollEvents(rawValue: EPOLLERR.rawValue)
    /// Always reported: both directions closed (after RST, or our shutdown plus the peer's FIN).
    public static let hangup = EpollEvents(rawValue: EPOLLHUP.rawValue)
    /// The peer closed its sending side (FIN), reported without a read.
    public static let readHangup = EpollEvents(rawValue: EPOLLRDHUP.rawValue)
    public static let edgeTriggered = EpollEvents(rawValue: EPOLLET.rawValue)
    public static let oneShot = EpollEvents(rawValue: EPOLLONESHOT.rawValue)
}

/// One epoll instance, owned by one lane (not thread-safe by design: no locks on the hot path).
///
/// Level- or edge-triggered: both are available per registration; the engine is meant to use level-triggered.
/// Both cost the same per event when each socket is drained by one read (a short read means drained, so edge mode
/// needs no extra read to EAGAIN; figures in docs/performance.md). What decides is behaviour:
/// - A lane reads a bounded number of bytes per connection per turn so one busy subscriber cannot starve the rest;
///   level triggering simply reports an unfinished socket again on the next wait, edge triggering would lose it
///   unless the lane kept its own "still readable" list.
/// - The price is that EPOLLOUT must be asked for only while a write buffer is pending (otherwise every wait
///   reports every socket writable). An epoll_ctl(MOD) is a system call, and it is needed only when a flush
///   leaves bytes behind (`OutboundBuffer.FlushResult.pending`) and again when it completes; on the steady path
///   writes complete at once and no epoll_ctl is made.
///
/// The event array is allocated once; `wait` fills it in place and allocates nothing.
public final class Epoll {
    public let fileDescriptor: Int32
    private let ready: EpollReadyList
    public var capacity: Int { ready.capacity }

    /// An epoll fd with close-on-exec and room for `capacity` events per wait.
    public init(capacity: Int = 512) throws(SystemError) {
        precondition(capacity > 0, "epoll capacity must be positive")  // a programming error, not input
        fileDescriptor = try SystemCall.checked("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        ready = EpollReadyList(capacity: capacity)
    }

    deinit {
        try? SystemCall.close(fileDescriptor)
    }

    /// Starts watching `fileDescriptor`; `token` comes back with each of its events (e.g. a lane-local client index).
    public func add(_ fileDescriptor: Int32, events wanted: EpollEvents, token: UInt64) throws(SystemError) {
        var event = fb_epoll_event_make(wanted.rawValue, token)
        _ = try SystemCall.checked("epoll_ctl(ADD)") {
            epoll_ctl(self.fileDescriptor, EPOLL_CTL_ADD, fileDescriptor, &event)
        }
    }

    /// Changes the interest set (e.g. add `.writable` while a write buffer is pending).
    public func modify(_ fileDescriptor: Int32, events wanted: EpollEvents, token: UInt64) throws(SystemError) {
        var event = fb_epoll_event_make(wanted.rawValue, token)
        _ = try SystemCall.checked("epoll_ctl(MOD)") {
            epoll_ctl(self.fileDescriptor, EPOLL_CTL_MOD, fileDescriptor, &event)
        }
    }

    /// Stops watching. Closing a descriptor removes it too (when no duplicate of it is open).
    public func remove(_ fileDescriptor: Int32) throws(SystemError) {
        var unused = fb_epoll_event_make(0, 0)  // kernels before 2.6.9 required a non-null pointer
        _ = try SystemCall.checked("epoll_ctl(DEL)") {
            epoll_ctl(self.fileDescriptor, EPOLL_CTL_DEL, fileDescriptor, &unused)
        }
    }

    /// Waits up to `timeoutMilliseconds` (0: poll, -1: forever) and returns the number of ready events, read back
    /// with `token(at:)` and `events(at:)`. EINTR counts as zero events (the caller's loop comes round again).
    @inline(__always)
    public func wait(timeoutMilliseconds: Int32) throws(SystemError) -> Int {
        try wait(timeoutMilliseconds: timeoutMilliseconds, into: ready)
    }

    /// Waits as `wait(timeoutMilliseconds:)` does, into a list of the caller's: a thread that blocks here can
    /// hand what it got to the code that owns the epoll set without sharing the set's own list.
    @inline(__always)
    public func wait(timeoutMilliseconds: Int32, into list: EpollReadyList) throws(SystemError) -> Int {
        let result = epoll_wait(fileDescriptor, list.events, Int32(list.capacity), timeoutMilliseconds)
        if result < 0 {
            let code = Glibc.errno
            if code == EINTR {
                list.count = 0
                return 0
            }
            throw SystemError(call: "epoll_wait", errno: code)
        }
        list.count = Int(result)
        return list.count
    }

    /// The token registered for the `index`-th ready event of the last wait.
    @inline(__always)
    public func token(at index: Int) -> UInt64 { ready.token(at: index) }

    /// The flags of the `index`-th ready event of the last wait.
    @inline(__always)
    public func events(at index: Int) -> EpollEvents { ready.events(at: index) }
}

/// The events one epoll_wait returned: a fixed array allocated once.
public final class EpollReadyList: @unchecked Sendable {
    // @unchecked: used by one thread at a time (the waiting thread, then the owner it hands the list to).
    let events: UnsafeMutablePointer<epoll_event>
    public let capacity: Int
    /// Events filled by the last wait.
    public internal(set) var count = 0

    public init(capacity: Int) {
        precondition(capacity > 0, "epoll capacity must be positive")  // a programming error, not input
        self.capacity = capacity
        events = .allocate(capacity: capacity)
        events.initialize(repeating: fb_epoll_event_make(0, 0), count: capacity)
    }

    deinit { events.deallocate() }

    @inline(__always)
    public func token(at index: Int) -> UInt64 {
        precondition(index >= 0 && index < count, "event index out of range")
        return fb_epoll_event_u64(events + index)
    }

    @inline(__always)
    public func events(at index: Int) -> EpollEvents {
        precondition(index >= 0 && index < count, "event index out of range")
        return EpollEvents(rawValue: fb_epoll_event_events(events + index))
    }
}
