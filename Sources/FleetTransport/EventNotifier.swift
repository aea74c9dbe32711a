import CLinux
import Glibc

/// An eventfd registered in an epoll set to wake a waiting lane from another thread (shutdown, new work).
/// Signals coalesce: several `signal()` calls before a `drain()` wake the waiter once.
public final class EventNotifier: @unchecked Sendable {
    // @unchecked: the descriptor is immutable; write(2) and read(2) on an eventfd are atomic in the kernel.
    public let fileDescriptor: Int32

    public init() throws(SystemError) {
        let flags = Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)
        fileDescriptor = try SystemCall.checked("eventfd") { eventfd(0, flags) }
    }

    deinit { try? SystemCall.close(fileDescriptor) }

    /// Makes the eventfd readable. Safe from any thread.
    public func signal() throws(SystemError) {
        var one: UInt64 = 1
        // .wouldBlock only if the counter would overflow 2^64-2, which means a wakeup is already pending.
        _ = try SystemCall.nonBlocking("write(eventfd)") { Glibc.write(fileDescriptor, &one, 8) }
    }

    /// Resets the eventfd; returns how many signals were coalesced (0 if none was pending).
    @discardableResult
    public func drain() throws(SystemError) -> UInt64 {
        var count: UInt64 = 0
        switch try SystemCall.nonBlocking("read(eventfd)", { Glibc.read(fileDescriptor, &count, 8) }) {
        case .processed: return count
        case .wouldBlock: return 0
        }
    }
}
