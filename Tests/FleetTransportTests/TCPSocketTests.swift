import FleetBroker
import FleetTransport
import Glibc
import Testing

@Suite("TCPSocket: non-blocking client sockets")
struct TCPSocketTests {
    /// MQTT 3.1.1 CONNECT for client id "fb-transport", clean session, keepalive 60 s.
    static let connectPacket: [UInt8] = [
        0x10,  // MQTT 3.1.1 §3.1.1: packet type 1 (CONNECT), flags 0
        0x18,  // §2.2.3 remaining length: 10 (variable header) + 14 (payload) = 24
        0x00, 0x04, 0x4D, 0x51, 0x54, 0x54,  // §3.1.2.1 protocol name "MQTT"
        0x04,  // §3.1.2.2 protocol level 4 (3.1.1)
        0x02,  // §3.1.2.3 connect flags: clean session only
        0x00, 0x3C,  // §3.1.2.10 keep alive 60 s
        0x00, 0x0C,  // §3.1.3.1 client identifier length 12
        0x66, 0x62, 0x2D, 0x74, 0x72, 0x61, 0x6E, 0x73, 0x70, 0x6F, 0x72, 0x74,  // "fb-transport"
    ]
    /// CONNACK: type 2, remaining length 2, session present 0, return code 0 (accepted). MQTT 3.1.1 §3.2.
    static let acceptedConnack: [UInt8] = [0x20, 0x02, 0x00, 0x00]

    @Test(
        "connects to mosquitto through epoll, sends CONNECT and reads CONNACK, from each source address",
        arguments: [nil, "127.0.0.2", "127.0.0.9"] as [String?])
    func connectAndConnack(sourceAddress: String?) throws {
        let broker = try MosquittoBroker()
        let source = try sourceAddress.map { try SocketAddress(ipAddress: $0, port: 0) }
        let socket = try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: broker.port), from: source)
        defer { try? socket.close() }
        #expect(try socket.localAddress().ipAddress == (sourceAddress ?? "127.0.0.1"))
        #expect(try socket.remoteAddress() == SocketAddress(ipAddress: "127.0.0.1", port: broker.port))
        #expect(try socket.option(level: Int32(IPPROTO_TCP), name: TCP_NODELAY) == 1)
        try writeAll(Self.connectPacket, to: socket)
        #expect(try readBytes(4, from: socket) == Self.acceptedConnack)
    }

    @Test("a closed port gives the exact connection-refused error")
    func connectionRefused() throws {
        let port = try closedLoopbackPort()
        let error = #expect(throws: SystemError.self) {
            try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: port))
        }
        #expect(error == SystemError(call: "connect", errno: ECONNREFUSED))
        #expect(error?.description == "connect failed: Connection refused (errno 111)")
    }

    @Test("binding to a source address shows in getsockname with a kernel-chosen port")
    func sourceAddressBinding() throws {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        defer { try? listener.close() }
        let socket = try connectThroughEpoll(
            to: listener.localAddress(), from: SocketAddress(ipAddress: "127.0.0.2", port: 0))
        defer { try? socket.close() }
        let local = try socket.localAddress()
        #expect(local.ipAddress == "127.0.0.2")
        #expect(local.port != 0)
        // The server sees the same source address.
        _ = try awaitEvents(.readable, on: listener.fileDescriptor)
        guard case .processed(let accepted) = try listener.accept() else {
            Issue.record("no connection to accept")
            return
        }
        defer { try? accepted.close() }
        #expect(try accepted.remoteAddress() == local)
    }

    @Test("IPv6 loopback: connect to [::1], exchange bytes both ways")
    func ipv6Loopback() throws {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "::1", port: 0))
        defer { try? listener.close() }
        let address = try listener.localAddress()
        #expect(address.description == "[::1]:\(address.port)")
        let client = try connectThroughEpoll(to: address)
        defer { try? client.close() }
        _ = try awaitEvents(.readable, on: listener.fileDescriptor)
        guard case .processed(let server) = try listener.accept() else {
            Issue.record("no connection to accept")
            return
        }
        defer { try? server.close() }
        try writeAll([1, 2, 3], to: client)
        #expect(try readBytes(3, from: server) == [1, 2, 3])
        try writeAll([9, 8], to: server)
        #expect(try readBytes(2, from: client) == [9, 8])
    }

    @Test("a peer that never reads fills the socket: partial write, then wouldBlock, then everything arrives intact")
    func partialWritesAndWouldBlock() throws {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        defer { try? listener.close() }
        let client = try connectThroughEpoll(to: listener.localAddress())
        defer { try? client.close() }
        // Small kernel buffers keep the amount needed to fill them small (the kernel doubles the value given).
        try client.setOption(level: SOL_SOCKET, name: SO_SNDBUF, value: 16 * 1024)
        _ = try awaitEvents(.readable, on: listener.fileDescriptor)
        guard case .processed(let server) = try listener.accept() else {
            Issue.record("no connection to accept")
            return
        }
        defer { try? server.close() }
        try server.setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: 16 * 1024)

        // 4 MiB with a position-dependent pattern, far more than both buffers hold.
        let total = 4 << 20
        let payload = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
        let buffer = OutboundBuffer(initialCapacity: 4096, maximumCapacity: 8 << 20)
        #expect(buffer.append(payload))
        #expect(try buffer.flush(to: client) == .pending)
        let afterFirstFlush = buffer.count
        #expect(afterFirstFlush > 0 && afterFirstFlush < total)  // a partial write
        // ACKs may still free send-buffer space for a while; once the reader's window is zero a flush takes nothing.
        var previous = afterFirstFlush
        for _ in 0..<10_000 {
            #expect(try buffer.flush(to: client) == .pending)
            if buffer.count == previous { break }
            previous = buffer.count
            _ = try awaitEvents(.writable, on: client.fileDescriptor, timeoutMilliseconds: 50)
        }
        #expect(buffer.count == previous)  // wouldBlock: nothing taken
        #expect(try buffer.flush(to: client) == .pending)
        #expect(buffer.count == previous)  // and it stays so while the peer does not read
        let oneByte: [UInt8] = [0]
        #expect(try oneByte.withUnsafeBytes { try client.write(from: $0) } == .wouldBlock)

        // Now the peer reads; the writer flushes whenever epoll reports writability, until done.
        var received: [UInt8] = []
        received.reserveCapacity(total)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let epoll = try Epoll(capacity: 4)
        try epoll.add(client.fileDescriptor, events: .writable, token: 1)
        try epoll.add(server.fileDescriptor, events: .readable, token: 2)
        var rounds = 0
        while received.count < total && rounds < 100_000 {
            rounds += 1
            let ready = try epoll.wait(timeoutMilliseconds: 5_000)
            if ready == 0 { break }
            for index in 0..<ready {
                if epoll.token(at: index) == 1 {
                    if try buffer.flush(to: client) == .complete { try epoll.remove(client.fileDescriptor) }
                } else {
                    let result = try chunk.withUnsafeMutableBytes { try server.read(into: $0) }
                    if case .bytes(let n) = result { received.append(contentsOf: chunk[0..<n]) }
                }
            }
        }
        #expect(buffer.isEmpty)
        #expect(received.count == total)
        #expect(received == payload)
    }

    @Test("an abortive close (SO_LINGER 0) makes the peer read ECONNRESET")
    func abortiveCloseResetsPeer() throws {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        defer { try? listener.close() }
        let client = try connectThroughEpoll(to: listener.localAddress())
        _ = try awaitEvents(.readable, on: listener.fileDescriptor)
        guard case .processed(let server) = try listener.accept() else {
            Issue.record("no connection to accept")
            return
        }
        defer { try? server.close() }
        try client.closeAbortively()
        let events = try #require(try awaitEvents([.readable, .readHangup], on: server.fileDescriptor))
        #expect(events.contains(.hangup))  // RST closes both directions at once
        var byte: UInt8 = 0
        let error = #expect(throws: SystemError.self) {
            try withUnsafeMutableBytes(of: &byte) { try server.read(into: $0) }
        }
        #expect(error?.description == "read failed: Connection reset by peer (errno 104)")
    }

    @Test("an orderly close reads as end of stream, and writing after it fails with EPIPE, not SIGPIPE")
    func orderlyCloseAndBrokenPipe() throws {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        defer { try? listener.close() }
        let client = try connectThroughEpoll(to: listener.localAddress())
        defer { try? client.close() }
        _ = try awaitEvents(.readable, on: listener.fileDescriptor)
        guard case .processed(let server) = try listener.accept() else {
            Issue.record("no connection to accept")
            return
        }
        try server.close()
        _ = try awaitEvents(.readable, on: client.fileDescriptor)
        var byte: UInt8 = 0
        #expect(try withUnsafeMutableBytes(of: &byte) { try client.read(into: $0) } == .endOfStream)
        // The first write after the peer's close draws its RST; the next one reports the broken pipe.
        let oneByte: [UInt8] = [0x42]
        let error = #expect(throws: SystemError.self) {
            for _ in 0..<3 {
                _ = try oneByte.withUnsafeBytes { try client.write(from: $0) }
                _ = try awaitEvents(.error, on: client.fileDescriptor, timeoutMilliseconds: 100)
            }
        }
        // The RST reaches a socket in CLOSE_WAIT, for which Linux reports EPIPE (tcp_reset).
        #expect(error?.description == "write failed: Broken pipe (errno 32)")
    }

    @Test("shutdownWrite sends FIN: the peer reads the bytes sent before it, then end of stream")
    func shutdownWrite() throws {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        defer { try? listener.close() }
        let client = try connectThroughEpoll(to: listener.localAddress())
        defer { try? client.close() }
        _ = try awaitEvents(.readable, on: listener.fileDescriptor)
        guard case .processed(let server) = try listener.accept() else {
            Issue.record("no connection to accept")
            return
        }
        defer { try? server.close() }
        try writeAll([7, 7, 7], to: client)
        try client.shutdownWrite()
        #expect(try readBytes(10, from: server) == [7, 7, 7])
        var byte: UInt8 = 0
        #expect(try withUnsafeMutableBytes(of: &byte) { try server.read(into: $0) } == .endOfStream)
    }
}

/// SO_RCVLOWAT on a loopback TCP pair: the engine raises it while a client waits for several acks, so what it
/// promises (no readiness below the mark, end of stream regardless of it) is pinned down here.
@Suite("TCPSocket: receive low watermark")
struct TCPSocketLowWatermarkTests {
    /// A connected loopback pair: the connecting side, and the accepted side that receives in these tests.
    static func loopbackPair() throws -> (sender: TCPSocket, receiver: TCPSocket) {
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        defer { try? listener.close() }
        let sender = try connectThroughEpoll(to: listener.localAddress())
        _ = try awaitEvents(.readable, on: listener.fileDescriptor)
        guard case .processed(let receiver) = try listener.accept() else {
            try? sender.close()
            throw SystemError(call: "accept", errno: EAGAIN)
        }
        return (sender, receiver)
    }

    /// Bytes queued for reading (SIOCINQ), polled until it reaches `count` or 5 s pass: bytes written on
    /// loopback are queued at the receiver shortly after the write returns, not necessarily before.
    static func awaitQueued(_ count: Int32, on socket: TCPSocket) -> Int32 {
        var queued: Int32 = 0
        for _ in 0..<5_000 {
            _ = ioctl(socket.fileDescriptor, UInt(FIONREAD), &queued)
            if queued >= count { break }
            usleep(1_000)
        }
        return queued
    }

    /// A loopback pair whose receiver has SO_RCVLOWAT 8 and is watched for readability under `token`.
    static func pairWatchedAtMark8(token: UInt64) throws -> (sender: TCPSocket, receiver: TCPSocket, epoll: Epoll) {
        let (sender, receiver) = try loopbackPair()
        do {
            try receiver.setReceiveLowWatermark(8)
            let epoll = try Epoll(capacity: 4)
            try epoll.add(receiver.fileDescriptor, events: .readable, token: token)
            return (sender, receiver, epoll)
        } catch {
            try? sender.close()
            try? receiver.close()
            throw error
        }
    }

    @Test("with the mark at 8, 7 queued bytes are not readable to epoll and the 8th byte makes them so")
    func readableOnlyAtTheMark() throws {
        let (sender, receiver, epoll) = try Self.pairWatchedAtMark8(token: 3)
        defer {
            try? sender.close()
            try? receiver.close()
        }
        try writeAll([1, 2, 3, 4, 5, 6, 7], to: sender)
        #expect(Self.awaitQueued(7, on: receiver) == 7)
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 0)
        try writeAll([8], to: sender)
        #expect(try epoll.wait(timeoutMilliseconds: 5_000) == 1)
        #expect(epoll.token(at: 0) == 3)
        #expect(epoll.events(at: 0) == .readable)
        #expect(try readBytes(8, from: receiver) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 0)
    }

    @Test("queuedBytes counts what arrived below the mark without reading it: 0, then 5, then 5 read")
    func queuedBytesBelowTheMark() throws {
        let (sender, receiver, _) = try Self.pairWatchedAtMark8(token: 5)
        defer {
            try? sender.close()
            try? receiver.close()
        }
        #expect(try receiver.queuedBytes() == 0)
        try writeAll([1, 2, 3, 4, 5], to: sender)
        #expect(Self.awaitQueued(5, on: receiver) == 5)
        #expect(try receiver.queuedBytes() == 5)
        #expect(try receiver.queuedBytes() == 5)
        #expect(try readBytes(5, from: receiver) == [1, 2, 3, 4, 5])
        #expect(try receiver.queuedBytes() == 0)
    }

    @Test("end of stream is reported readable with fewer bytes queued than the mark, and those bytes are read")
    func endOfStreamBelowTheMark() throws {
        let (sender, receiver, epoll) = try Self.pairWatchedAtMark8(token: 4)
        defer {
            try? sender.close()
            try? receiver.close()
        }
        try writeAll([9, 9, 9], to: sender)
        #expect(Self.awaitQueued(3, on: receiver) == 3)
        #expect(try epoll.wait(timeoutMilliseconds: 0) == 0)
        try sender.shutdownWrite()
        #expect(try epoll.wait(timeoutMilliseconds: 5_000) == 1)
        #expect(epoll.token(at: 0) == 4)
        #expect(epoll.events(at: 0) == .readable)
        var chunk = [UInt8](repeating: 0, count: 16)
        #expect(try chunk.withUnsafeMutableBytes { try receiver.read(into: $0) } == .bytes(3))
        #expect(chunk[0..<3] == [9, 9, 9])
        #expect(try chunk.withUnsafeMutableBytes { try receiver.read(into: $0) } == .endOfStream)
    }

    @Test("SO_RCVLOWAT reads back what was set; below 1 sets 1", arguments: [
        (set: Int32(8), readBack: Int32(8)), (set: 1, readBack: 1), (set: 0, readBack: 1), (set: -4, readBack: 1),
    ])
    func optionReadsBack(_ value: (set: Int32, readBack: Int32)) throws {
        let (sender, receiver) = try Self.loopbackPair()
        defer {
            try? sender.close()
            try? receiver.close()
        }
        #expect(try receiver.option(level: SOL_SOCKET, name: SO_RCVLOWAT) == 1)  // the default
        try receiver.setReceiveLowWatermark(20)
        try receiver.setReceiveLowWatermark(value.set)
        #expect(try receiver.option(level: SOL_SOCKET, name: SO_RCVLOWAT) == value.readBack)
    }
}

@Suite("TCPSocket: retransmissions seen through TCP_INFO")
struct TCPSocketRetransmissionTests {
    @Test("a connect whose SYN a full listen queue dropped counts exactly one retransmission; the first none")
    func synRetransmitted() throws {
        // Backlog 0: the accept queue holds one connection; the next SYN is dropped (TcpExtListenOverflows) and
        // sent again after the initial retransmission timeout, 1 s, by which time the queue is empty again.
        let listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0), backlog: 0)
        defer { try? listener.close() }
        let address = try listener.localAddress()
        let first = try TCPSocket.makeNonBlocking(family: address.family)
        defer { try? first.close() }
        _ = try first.connect(to: address)
        #expect(waitWritable(first, milliseconds: 2_000))
        try first.finishConnect()
        let second = try TCPSocket.makeNonBlocking(family: address.family)
        defer { try? second.close() }
        _ = try second.connect(to: address)
        var accepted: [TCPSocket] = []
        defer { for socket in accepted { try? socket.close() } }
        if case .processed(let socket) = try listener.accept() { accepted.append(socket) }
        #expect(accepted.count == 1)
        #expect(waitWritable(second, milliseconds: 5_000))
        try second.finishConnect()
        #expect(first.totalRetransmissions() == 0)
        #expect(second.totalRetransmissions() == 1)
    }

    private func waitWritable(_ socket: TCPSocket, milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: socket.fileDescriptor, events: Int16(POLLOUT), revents: 0)
        return poll(&descriptor, 1, milliseconds) == 1 && descriptor.revents & Int16(POLLOUT) != 0
    }
}
