import CLinux
import Glibc

/// A non-blocking TCP socket: a bare file descriptor with the calls a client connection needs.
///
/// A plain copyable value so the engine can keep sockets in flat arrays; whoever owns a connection calls `close()`
/// (or `closeAbortively()`) exactly once. Every call goes through `SystemCall`, so EINTR is retried and EAGAIN comes
/// back as `.wouldBlock`.
public struct TCPSocket: Sendable, Hashable {
    public let fileDescriptor: Int32

    /// Wraps a descriptor this code did not create (from accept(2) or a test's socketpair).
    public init(adopting fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// The outcome of starting a non-blocking connect.
    public enum ConnectProgress: Sendable, Equatable {
        /// Connected at once (can happen on loopback).
        case connected
        /// EINPROGRESS: wait for writability, then call `finishConnect()`.
        case inProgress
    }

    /// The outcome of a read.
    public enum ReadResult: Sendable, Equatable {
        case bytes(Int)
        /// The peer closed its sending side (read returned 0).
        case endOfStream
        case wouldBlock
    }

    /// A new non-blocking, close-on-exec TCP socket for `family` (AF_INET or AF_INET6), with TCP_NODELAY set:
    /// MQTT packets are small and latency is what we measure, so Nagle's delay must not apply.
    public static func makeNonBlocking(family: Int32) throws(SystemError) -> TCPSocket {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let descriptor = try SystemCall.checked("socket") { socket(family, type, 0) }
        let created = TCPSocket(adopting: descriptor)
        do {
            try created.setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1, call: "setsockopt(TCP_NODELAY)")
        } catch {
            try? SystemCall.close(descriptor)
            throw error
        }
        return created
    }

    /// Binds to a local source address before connecting (use port 0 so the kernel picks the port). Spreading
    /// clients over 127.0.0.2, 127.0.0.3, ... gives each address its own ~28k ephemeral ports; all of 127/8 is
    /// loopback on Linux. IP_BIND_ADDRESS_NO_PORT defers the port choice to connect(), so the 4-tuple (not the
    /// source port alone) has to be unique, which is what lets many sources share the range.
    public func bind(to address: SocketAddress) throws(SystemError) {
        if address.port == 0 && address.family == AF_INET {
            // Best effort: older kernels lack it, and binding still works without it.
            try? setOption(level: Int32(IPPROTO_IP), name: IP_BIND_ADDRESS_NO_PORT, value: 1, call: "setsockopt")
        }
        _ = try SystemCall.checked("bind") { address.withSockAddr { Glibc.bind(fileDescriptor, $0, $1) } }
    }

    /// Starts connecting. A refusal noticed at once on loopback is thrown here as "connect failed: ...".
    public func connect(to address: SocketAddress) throws(SystemError) -> ConnectProgress {
        while true {
            let result = address.withSockAddr { Glibc.connect(fileDescriptor, $0, $1) }
            if result == 0 { return .connected }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EINPROGRESS { return .inProgress }
            throw SystemError(call: "connect", errno: code)
        }
    }

    /// After writability (EPOLLOUT) on a socket whose connect was in progress: throws the connect's error
    /// (SO_ERROR), e.g. "connect failed: Connection refused (errno 111)", or returns when connected.
    public func finishConnect() throws(SystemError) {
        var pending: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try SystemCall.checked("getsockopt(SO_ERROR)") {
            getsockopt(fileDescriptor, SOL_SOCKET, SO_ERROR, &pending, &length)
        }
        if pending != 0 { throw SystemError(call: "connect", errno: pending) }
    }

    /// Segments this connection has sent again so far (TCP_INFO `tcpi_total_retrans`), nil if the kernel does not
    /// say. Right after the handshake, or at CONNACK, it counts the SYNs and CONNECT bytes sent again: the sign of
    /// a listener whose queue was full (`ConnectWindow`).
    public func totalRetransmissions() -> UInt32? {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(fileDescriptor, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return nil }
        return info.tcpi_total_retrans
    }

    /// Reads into a caller-owned buffer (one per lane, reused): no allocation here.
    @inline(__always)
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> ReadResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .bytes(0) }
        switch try SystemCall.nonBlocking("read", { recv(fileDescriptor, base, buffer.count, 0) }) {
        case .processed(0): return .endOfStream
        case .processed(let count): return .bytes(count)
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Writes as much of `bytes` as the socket takes now; returns the count written (possibly fewer: a partial
    /// write) or `.wouldBlock` when the send buffer is full. MSG_NOSIGNAL: a peer that closed must produce EPIPE,
    /// not a SIGPIPE that would end the whole process.
    @inline(__always)
    public func write(from bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .processed(0) }
        return try SystemCall.nonBlocking("write") { send(fileDescriptor, base, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Half-closes: no more writes; the peer reads end-of-stream after the bytes already sent.
    public func shutdownWrite() throws(SystemError) {
        _ = try SystemCall.checked("shutdown") { shutdown(fileDescriptor, Int32(SHUT_WR)) }
    }

    public func close() throws(SystemError) {
        try SystemCall.close(fileDescriptor)
    }

    /// Closes with SO_LINGER {on, 0}: the kernel discards unsent data and sends RST instead of FIN, so the peer
    /// reads ECONNRESET. This is how a mobile tunnel or NAT cutting a connection looks to the broker: no DISCONNECT,
    /// so it must publish the will.
    public func closeAbortively() throws(SystemError) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = try SystemCall.checked("setsockopt(SO_LINGER)") {
            setsockopt(fileDescriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        try close()
    }

    /// The local address the kernel chose (source address and port).
    public func localAddress() throws(SystemError) -> SocketAddress {
        try socketName(call: "getsockname") { getsockname(fileDescriptor, $0, $1) }
    }

    /// The connected peer's address.
    public func remoteAddress() throws(SystemError) -> SocketAddress {
        try socketName(call: "getpeername") { getpeername(fileDescriptor, $0, $1) }
    }

    /// SO_RCVLOWAT: epoll reports the socket readable (and the kernel wakes a waiter) only once `bytes` bytes
    /// are queued; end of stream and errors are still reported at once. 1 is the default.
    public func setReceiveLowWatermark(_ bytes: Int32) throws(SystemError) {
        try setOption(level: SOL_SOCKET, name: SO_RCVLOWAT, value: max(1, bytes), call: "setsockopt(SO_RCVLOWAT)")
    }

    /// Bytes received and not yet read (FIONREAD), without reading them.
    public func queuedBytes() throws(SystemError) -> Int32 {
        var count: Int32 = 0
        _ = try SystemCall.checked("ioctl(FIONREAD)") { ioctl(fileDescriptor, UInt(FIONREAD), &count) }
        return count
    }

    /// TCP_QUICKACK: sends the acknowledgement of what was read now instead of at the delayed-ACK timer (40 ms
    /// or more), and leaves delayed-ACK ("ping-pong") mode until the kernel enters it again. A peer with Nagle's
    /// algorithm on holds its next small write until this acknowledgement arrives.
    public func acknowledgeNow() throws(SystemError) {
        try setOption(level: Int32(IPPROTO_TCP), name: TCP_QUICKACK, value: 1, call: "setsockopt(TCP_QUICKACK)")
    }

    /// SO_SNDBUF / SO_RCVBUF and similar integer options.
    public func setOption(level: Int32, name: Int32, value: Int32, call: StaticString = "setsockopt") throws(SystemError) {
        var value = value
        _ = try SystemCall.checked(call) {
            setsockopt(fileDescriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    public func option(level: Int32, name: Int32) throws(SystemError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try SystemCall.checked("getsockopt") { getsockopt(fileDescriptor, level, name, &value, &length) }
        return value
    }

    func socketName(
        call: StaticString, _ body: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try SystemCall.checked(call) {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, &length) }
            }
        }
        guard let address = SocketAddress(storage: storage) else {
            throw SystemError(call: call.description, errno: EAFNOSUPPORT)
        }
        return address
    }
}
