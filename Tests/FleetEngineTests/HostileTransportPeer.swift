import FleetTransport
import Foundation
import Glibc

/// A loopback peer that misbehaves below MQTT (a thread per connection; it serves a few test clients):
/// `.garbage` writes `bytes` as soon as a client connects (what a TLS client meets at a non-TLS port);
/// `.webSocket` completes the upgrade honestly, answers the client's first frame (CONNECT) with a CONNACK
/// frame, then writes `bytes` (bad or oversized frames); `.silent` accepts and never answers;
/// `.slowUpgrade` completes the WebSocket upgrade after a delay, then never answers CONNECT.
final class HostileTransportPeer: @unchecked Sendable {
    enum Mode: Sendable {
        case garbage
        case webSocket
        case silent
        case slowUpgrade(microseconds: UInt32)
    }

    let port: UInt16
    private let listener: TCPListener
    private let lock = NSLock()
    private var stopped = false
    private var held: [TCPSocket] = []

    init(mode: Mode, bytes: [UInt8]) throws {
        let listener = try TCPListener.listen(on: try SocketAddress(ipAddress: "127.0.0.1", port: 0), backlog: 64)
        self.listener = listener
        port = try listener.localAddress().port
        let acceptThread = Thread { [self] in
            while !self.isStopped {
                var descriptor = pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0)
                if poll(&descriptor, 1, 50) <= 0 { continue }
                guard case .processed(let client)? = try? listener.accept() else { continue }
                // One thread per connection, so a silent or slow one holds no other client back.
                Thread { self.serve(client, mode: mode, bytes: bytes) }.start()
            }
            try? listener.close()
        }
        acceptThread.start()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    func stop() {
        lock.withLock { stopped = true }
        usleep(100_000)
        lock.withLock {
            for socket in held { try? socket.close() }
            held = []
        }
    }

    private func serve(_ client: TCPSocket, mode: Mode, bytes: [UInt8]) {
        switch mode {
        case .silent:
            lock.withLock { held.append(client) }
            return
        case .garbage:
            write(bytes, to: client)
        case .webSocket, .slowUpgrade:
            guard let head = readUntil(client, { $0.firstRange(of: [13, 10, 13, 10]) != nil }) else { break }
            if case .slowUpgrade(let delay) = mode { usleep(delay) }
            let text = String(decoding: head, as: UTF8.self)
            let key = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }
                .map { String($0.dropFirst("sec-websocket-key:".count)).trimmingCharacters(in: .whitespaces) } ?? ""
            let response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(WebSocketUpgradeRequest.acceptValue(forKey: key))\r\n"
                + "Sec-WebSocket-Protocol: mqtt\r\n\r\n"
            write(Array(response.utf8), to: client)
            if case .slowUpgrade = mode { break }
            // The CONNECT frame: 2-byte header (+4 mask bytes) and a short payload; wait for any bytes.
            guard readUntil(client, { !$0.isEmpty }) != nil else { break }
            // MQTT 3.1.1 §3.2 CONNACK, accepted, as one unmasked binary frame (RFC 6455 §5.2).
            write([0x82, 0x04, 0x20, 0x02, 0x00, 0x00], to: client)
            usleep(20_000)
            write(bytes, to: client)
        }
        // Keep the connection open until the client closes it (its reaction is what is tested).
        _ = readUntil(client, { _ in false })
        try? client.close()
    }

    /// Reads until `done` holds for what was read (nil at end of stream or after 3 s).
    private func readUntil(_ client: TCPSocket, _ done: ([UInt8]) -> Bool) -> [UInt8]? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline {
            var descriptor = pollfd(fd: client.fileDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 50) <= 0 { continue }
            let result = chunk.withUnsafeMutableBytes { try? client.read(into: $0) }
            switch result {
            case .bytes(let count)?:
                received += chunk[0..<count]
                if done(received) { return received }
            case .wouldBlock?: continue
            default: return nil
            }
        }
        return nil
    }

    private func write(_ bytes: [UInt8], to client: TCPSocket) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { try? client.write(from: UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch result {
            case .processed(let count)?: offset += count
            case .wouldBlock?:
                var descriptor = pollfd(fd: client.fileDescriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&descriptor, 1, 50)
            case nil: return
            }
        }
    }
}
