import Foundation
import Glibc

/// A minimal HTTP/1.1 responder on its own thread, for `--metrics-listen` (Prometheus scrapes) and test
/// responders. One request per connection, GET only, small requests; it never blocks a lane.
public final class MiniHTTPServer: @unchecked Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: String

        public init(status: Int = 200, contentType: String = "text/plain; charset=utf-8", body: String) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    public typealias Handler = @Sendable (_ method: String, _ path: String) -> Response

    private let listener: TCPListener
    private let handler: Handler
    private let stopped = NSLock()
    private var isStopped = false
    private var thread: Thread?
    /// The address actually bound (port filled in when 0 was asked).
    public let address: SocketAddress

    /// Binds and starts serving. Port 0 picks a free port.
    public init(address: SocketAddress, handler: @escaping Handler) throws(SystemError) {
        listener = try TCPListener.listen(on: address, backlog: 64)
        self.address = try listener.localAddress()
        self.handler = handler
        let thread = Thread { [self] in serve() }
        self.thread = thread
        thread.start()
    }

    deinit { stop() }

    public func stop() {
        let first: Bool = stopped.withLock {
            defer { isStopped = true }
            return !isStopped
        }
        if first { shutdown(listener.fileDescriptor, Int32(SHUT_RDWR)) }
    }

    private var shouldStop: Bool { stopped.withLock { isStopped } }

    private func serve() {
        defer { try? listener.close() }
        while !shouldStop {
            var descriptor = pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 100) <= 0 { continue }
            guard case .processed(let client)? = try? listener.accept() else { continue }
            answer(client)
            try? client.close()
        }
    }

    /// Reads the request head (up to 8 KiB, 2 s), answers, closes.
    private func answer(_ client: TCPSocket) {
        var request: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        let deadline = Date().addingTimeInterval(2)
        while request.count < 8192, Date() < deadline {
            if request.firstRange(of: [13, 10, 13, 10]) != nil { break }
            var descriptor = pollfd(fd: client.fileDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 100) <= 0 { continue }
            let result = chunk.withUnsafeMutableBytes { try? client.read(into: $0) }
            guard case .bytes(let count)? = result, count > 0 else { break }
            request += chunk[0..<count]
        }
        let head = String(decoding: request, as: UTF8.self)
        let requestLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = requestLine.split(separator: " ").map(String.init)
        let response: Response
        if parts.count >= 2 {
            response = handler(parts[0], parts[1])
        } else {
            response = Response(status: 400, body: "bad request\n")
        }
        let body = Array(response.body.utf8)
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"][response.status] ?? "Status"
        let header = "HTTP/1.1 \(response.status) \(reason)\r\nContent-Type: \(response.contentType)\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        var bytes = Array(header.utf8) + body
        var offset = 0
        let writeDeadline = Date().addingTimeInterval(2)
        while offset < bytes.count, Date() < writeDeadline {
            let written = bytes.withUnsafeBytes { pointer in
                try? client.write(from: UnsafeRawBufferPointer(rebasing: pointer[offset...]))
            }
            switch written {
            case .processed(let count)?: offset += count
            case .wouldBlock?:
                var descriptor = pollfd(fd: client.fileDescriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&descriptor, 1, 100)
            case nil: return
            }
        }
        bytes.removeAll()
    }
}
