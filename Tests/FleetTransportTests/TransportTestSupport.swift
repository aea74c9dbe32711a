import FleetTransport
import Glibc

/// Waits (bounded) until `fileDescriptor` reports any of `wanted`; returns the events seen, or nil at the deadline.
/// Only a guard against hanging: no test asserts on how long anything took.
func awaitEvents(
    _ wanted: EpollEvents, on fileDescriptor: Int32, timeoutMilliseconds: Int32 = 5_000
) throws -> EpollEvents? {
    let epoll = try Epoll(capacity: 4)
    try epoll.add(fileDescriptor, events: wanted, token: 7)
    let ready = try epoll.wait(timeoutMilliseconds: timeoutMilliseconds)
    guard ready == 1 else { return nil }
    return epoll.events(at: 0)
}

/// Connects a non-blocking socket through epoll: start connect, wait for writability, check SO_ERROR.
func connectThroughEpoll(to address: SocketAddress, from source: SocketAddress? = nil) throws -> TCPSocket {
    let socket = try TCPSocket.makeNonBlocking(family: address.family)
    do {
        if let source { try socket.bind(to: source) }
        if try socket.connect(to: address) == .inProgress {
            guard try awaitEvents(.writable, on: socket.fileDescriptor) != nil else {
                throw SystemError(call: "connect", errno: ETIMEDOUT)
            }
            try socket.finishConnect()
        }
        return socket
    } catch {
        try? socket.close()
        throw error
    }
}

/// Reads exactly `count` bytes (waiting through epoll), or fewer if the stream ends or 5 s pass.
func readBytes(_ count: Int, from socket: TCPSocket) throws -> [UInt8] {
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while received.count < count {
        let result = try chunk.withUnsafeMutableBytes { buffer in
            try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, count - received.count)]))
        }
        switch result {
        case .bytes(let n): received.append(contentsOf: chunk[0..<n])
        case .endOfStream: return received
        case .wouldBlock:
            guard try awaitEvents(.readable, on: socket.fileDescriptor) != nil else { return received }
        }
    }
    return received
}

/// Writes all of `bytes`, waiting for writability when the socket is full.
func writeAll(_ bytes: [UInt8], to socket: TCPSocket) throws {
    let buffer = OutboundBuffer()
    buffer.append(bytes)
    while try buffer.flush(to: socket) == .pending {
        guard try awaitEvents(.writable, on: socket.fileDescriptor) != nil else {
            throw SystemError(call: "write", errno: ETIMEDOUT)
        }
    }
}

/// A TCP port on 127.0.0.1 with nothing listening: bound once to learn a free port, then closed.
func closedLoopbackPort() throws -> UInt16 {
    let probe = try TCPSocket.makeNonBlocking(family: AF_INET)
    defer { try? probe.close() }
    try probe.bind(to: SocketAddress(ipAddress: "127.0.0.1", port: 0))
    return try probe.localAddress().port
}
