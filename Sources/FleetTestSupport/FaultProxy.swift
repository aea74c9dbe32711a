import Foundation
import Glibc
import MQTTCodec

/// A TCP proxy on a loopback port in front of a real broker, for network faults a broker will not produce:
/// connections reset (RST) in the middle of a run, and connections that go silent without FIN or RST (a peer
/// gone, a half-open connection). Each accepted connection is relayed to `upstreamPort` by its own thread, which
/// alone reads, writes and closes that pair's sockets (no descriptor is closed under another thread).
public final class FaultProxy: @unchecked Sendable {
    // Safety: shared state behind `lock`; each pair's sockets are touched only by its own thread.
    public let port: UInt16
    private let upstreamPort: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var pairs: [Pair] = []
    private var stopped = false

    private final class Pair: @unchecked Sendable {
        // Safety: `mode` and the times behind the proxy's lock; sockets used only by the pair's thread.
        enum Mode { case relay, silent, reset, closed }
        let client: Int32
        let upstream: Int32
        var mode = Mode.relay
        var silencedAt: UInt64?
        /// The client id of the CONNECT the client sent first (nil until it arrived whole).
        var clientID: String?
        /// When the client's FIN or RST arrived after the pair went silent.
        var clientClosedAt: UInt64?
        init(client: Int32, upstream: Int32) {
            self.client = client
            self.upstream = upstream
        }
    }

    /// How long each chunk waits before it is passed on, in both directions (a slow network or broker).
    public let delay: UInt64

    /// Listens on 127.0.0.1 at a free port and relays every connection to 127.0.0.1:`upstreamPort`, each chunk
    /// `delay` nanoseconds late.
    public init(upstreamPort: UInt16, delay: UInt64 = 0) throws {
        self.upstreamPort = upstreamPort
        self.delay = delay
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw FakeBrokerError(call: "socket", errno: errno) }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 512) == 0 else {
            let code = errno
            Glibc.close(listener)
            throw FakeBrokerError(call: "bind/listen", errno: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread { [weak self] in self?.acceptLoop() }.start()
    }

    deinit { stop() }

    /// Connections accepted so far.
    public var accepted: Int { lock.withLock { pairs.count } }

    /// Resets (RST to the client, FIN to the broker) every relayed connection whose client's CONNECT carried a
    /// client id for which `matching` is true; returns how many.
    @discardableResult
    public func reset(where matching: (String) -> Bool) -> Int {
        lock.withLock {
            var count = 0
            for pair in pairs where pair.mode == .relay {
                guard let id = pair.clientID, matching(id) else { continue }
                pair.mode = .reset
                count += 1
            }
            return count
        }
    }

    /// Makes `count` relayed connections go silent in both directions: nothing is read or written any more and
    /// nothing is closed, as when the peer vanished without FIN. Returns how many.
    @discardableResult
    public func silence(_ count: Int) -> Int {
        lock.withLock {
            let now = Self.now()
            var silenced = 0
            for pair in pairs where pair.mode == .relay && silenced < count {
                pair.mode = .silent
                pair.silencedAt = now
                silenced += 1
            }
            return silenced
        }
    }

    /// For every silenced connection, nanoseconds from the silence to the client closing its end (nil: still
    /// open).
    public var silentUntilClientClosed: [UInt64?] {
        lock.withLock {
            pairs.compactMap { pair -> UInt64?? in
                guard let silenced = pair.silencedAt else { return nil }
                return .some(pair.clientClosedAt.map { $0 - silenced })
            }
        }
    }

    /// Stops accepting; every relay thread closes its pair.
    public func stop() {
        lock.withLock {
            guard !stopped else { return }
            stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for pair in pairs where pair.mode != .closed { pair.mode = .reset }
        }
    }

    /// Linux's POLLRDHUP (the peer closed its end), not exported to Swift without _GNU_SOURCE.
    static let pollReadHangUp: Int16 = 0x2000

    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                Glibc.close(listener)
                return
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let connected = upstream >= 0 && withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0
            let pair = Pair(client: client, upstream: upstream)
            let accepted: Bool = lock.withLock {
                guard !stopped, connected else { return false }
                pairs.append(pair)
                return true
            }
            guard accepted else {
                Glibc.close(client)
                if upstream >= 0 { Glibc.close(upstream) }
                continue
            }
            Thread { [self] in relay(pair) }.start()
        }
    }

    private func relay(_ pair: Pair) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var connectDecoder: MQTTDecoder? = MQTTDecoder(version: .v3_1_1)
        var fds = [pollfd(fd: pair.client, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: pair.upstream, events: Int16(POLLIN), revents: 0)]
        loop: while true {
            let mode = lock.withLock { pair.mode }
            switch mode {
            case .relay:
                fds[0].events = Int16(POLLIN)
                fds[1].events = Int16(POLLIN)
            case .silent:
                // Read nothing; only notice the client closing its end (POLLRDHUP needs no read).
                fds[0].events = Self.pollReadHangUp
                fds[1].events = 0
            case .reset, .closed:
                break loop
            }
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, 20)
            if ready <= 0 { continue }
            if mode == .silent {
                if fds[0].revents & (Self.pollReadHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                    lock.withLock { pair.clientClosedAt = pair.clientClosedAt ?? Self.now() }
                    // Keep the socket as a dead peer would: never answer, never close, until stopped.
                    usleep(20_000)
                }
                continue
            }
            for (from, to) in [(0, 1), (1, 0)] where fds[from].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(fds[from].fd, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break loop }
                if from == 0, var decoder = connectDecoder {
                    decoder.feed(Array(buffer[0..<count]))
                    if case .connect(let connect)? = try? decoder.next() {
                        lock.withLock { pair.clientID = connect.clientID }
                        connectDecoder = nil
                    } else {
                        connectDecoder = decoder
                    }
                }
                if delay > 0 { usleep(useconds_t(delay / 1000)) }
                var offset = 0
                while offset < count {
                    let sent = buffer.withUnsafeBytes {
                        Glibc.send(fds[to].fd, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
                    }
                    if sent < 0 && errno == EINTR { continue }
                    if sent <= 0 { break loop }
                    offset += sent
                }
            }
        }
        let reset = lock.withLock {
            let reset = pair.mode == .reset
            pair.mode = .closed
            return reset
        }
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(pair.client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        Glibc.close(pair.client)
        Glibc.close(pair.upstream)
    }
}
