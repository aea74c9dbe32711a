import Glibc

/// A failed system call: which call, its errno, and the C library's text for it.
/// `description` reads like "connect failed: Connection refused (errno 111)".
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let call: String
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// strerror's text, e.g. "Connection refused".
    public var message: String { String(cString: strerror(errno)) }

    public var description: String { "\(call) failed: \(message) (errno \(errno))" }
}

/// The outcome of a non-blocking call: done (with its value), or the kernel would have had to wait.
/// EAGAIN/EWOULDBLOCK is the normal state of a non-blocking socket, so it is a value, never an error.
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

extension IOResult: Equatable where Value: Equatable {}
extension IOResult: Sendable where Value: Sendable {}

/// Every system call of the transport goes through here, so EINTR, EAGAIN and errno are handled one way.
/// errno is read straight after the call returns, before anything else (no allocation or ARC traffic in between)
/// could overwrite it. `call` is a StaticString so that the success path never builds a String.
enum SystemCall {
    /// For calls that return -1 on failure and may legitimately block: EINTR is retried, EAGAIN/EWOULDBLOCK becomes
    /// `.wouldBlock`, every other errno is thrown.
    @inline(__always)
    static func nonBlocking<Result: FixedWidthInteger>(
        _ call: StaticString, _ body: () -> Result
    ) throws(SystemError) -> IOResult<Result> {
        while true {
            let result = body()
            if result >= 0 { return .processed(result) }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: call.description, errno: code)
        }
    }

    /// For calls that do not block (socket, setsockopt, epoll_ctl, ...): EINTR is retried, any failure is thrown.
    @inline(__always)
    static func checked<Result: FixedWidthInteger>(
        _ call: StaticString, _ body: () -> Result
    ) throws(SystemError) -> Result {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw SystemError(call: call.description, errno: code)
        }
    }

    /// close(2) is never retried on Linux: the descriptor is released even when it reports EINTR, and a retry could
    /// close a descriptor another lane has just been given.
    static func close(_ fileDescriptor: Int32) throws(SystemError) {
        if Glibc.close(fileDescriptor) != 0 {
            let code = Glibc.errno
            if code == EINTR { return }
            throw SystemError(call: "close", errno: code)
        }
    }
}
