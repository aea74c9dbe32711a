import Dispatch
import FleetTestSupport
import FleetTransport
import Testing

/// The 16-byte nonce of RFC 6455 §4.1's example ("the sample nonce"), whose key is dGhlIHNhbXBsZSBub25jZQ==.
let sampleNonce = Array("the sample nonce".utf8)

/// A one-shot local HTTP server: accepts one connection, reads the request head, answers `response`, closes.
/// Stands in for a broker or proxy that refuses the upgrade (mosquitto 2.0.11 upgrades any path).
final class OneShotHTTPResponder: @unchecked Sendable {
    let listener: TCPListener
    let port: UInt16
    private let done = DispatchSemaphore(value: 0)
    private(set) var request: [UInt8] = []

    init(response: String) throws {
        listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        port = try listener.localAddress().port
        TestThread.start { [self] in
            defer { done.signal() }
            guard (try? awaitEvents(.readable, on: listener.fileDescriptor)) != nil,
                case .processed(let connection)? = try? listener.accept()
            else { return }
            defer { try? connection.close() }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !request.ends(with: [13, 10, 13, 10]) {
                guard let result = try? buffer.withUnsafeMutableBytes({ try connection.read(into: $0) }) else { return }
                switch result {
                case .bytes(let count): request += buffer[0..<count]
                case .endOfStream: return
                case .wouldBlock:
                    guard (try? awaitEvents(.readable, on: connection.fileDescriptor)) != nil else { return }
                }
            }
            try? writeAll(Array(response.utf8), to: connection)
        }
    }

    func finish() -> [UInt8] {
        done.wait()
        try? listener.close()
        return request
    }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

@Suite("WebSocket upgrade (RFC 6455 §4)")
struct WebSocketUpgradeTests {
    @Test("Sec-WebSocket-Accept of RFC 6455 §1.3's example key")
    func acceptOfRFCExample() {
        #expect(WebSocketUpgradeRequest.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test("the upgrade request carries every required header, the subprotocol and the extra headers, in order")
    func requestBytes() throws {
        let request = try WebSocketUpgradeRequest(
            host: "127.0.0.1", port: 9001, path: "/mqtt", subprotocols: ["mqtt"],
            extraHeaders: [(name: "Authorization", value: "Bearer abc"), (name: "X-Vehicle", value: "VIN-1")],
            nonce: sampleNonce)
        #expect(request.key == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(request.expectedAccept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(
            String(decoding: request.bytes, as: UTF8.self)
                == "GET /mqtt HTTP/1.1\r\n" + "Host: 127.0.0.1:9001\r\n" + "Upgrade: websocket\r\n"
                + "Connection: Upgrade\r\n" + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Version: 13\r\n" + "Sec-WebSocket-Protocol: mqtt\r\n"
                + "Authorization: Bearer abc\r\n" + "X-Vehicle: VIN-1\r\n" + "\r\n")
    }

    @Test("the Host header leaves out the scheme's default port and brackets IPv6 literals",
          arguments: [
              ("broker.example.com", UInt16(443), true, "Host: broker.example.com\r\n"),
              ("broker.example.com", 80, false, "Host: broker.example.com\r\n"),
              ("broker.example.com", 443, false, "Host: broker.example.com:443\r\n"),
              ("::1", 8080, false, "Host: [::1]:8080\r\n"),
          ])
    func hostHeader(host: String, port: UInt16, secure: Bool, line: String) throws {
        let request = try WebSocketUpgradeRequest(
            host: host, port: port, secure: secure, subprotocols: ["mqttv3.1"], nonce: sampleNonce)
        let text = String(decoding: request.bytes, as: UTF8.self)
        #expect(text.contains(line))
        #expect(text.contains("Sec-WebSocket-Protocol: mqttv3.1\r\n"))
    }

    @Test("seeded nonces repeat per seed and differ between draws")
    func seededNonces() {
        var first = TestRandom(seed: 3)
        var second = TestRandom(seed: 3)
        let a = WebSocketUpgradeRequest.randomNonce(using: &first)
        #expect(a.count == 16)
        #expect(a == WebSocketUpgradeRequest.randomNonce(using: &second))
        #expect(a != WebSocketUpgradeRequest.randomNonce(using: &first))
    }

    @Test("requests that would break the HTTP head are refused",
          arguments: [
              ("/mqtt", "X-Evil", "a\r\nInjected: 1", "invalid extra WebSocket header \"X-Evil\""),
              ("mqtt", "X-Ok", "1", "WebSocket path must start with / and hold no spaces or line breaks: \"mqtt\""),
              ("/a b", "X-Ok", "1", "WebSocket path must start with / and hold no spaces or line breaks: \"/a b\""),
          ])
    func badRequests(path: String, name: String, value: String, reason: String) {
        let error = #expect(throws: WebSocketError.self) {
            _ = try WebSocketUpgradeRequest(
                host: "h", port: 1, path: path, extraHeaders: [(name: name, value: value)], nonce: sampleNonce)
        }
        #expect(error?.description == reason)
    }

    static let goodResponse = Array(
        ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n").utf8)

    @Test("a 101 response followed by a frame parses at every split, reporting where the frames begin")
    func responseAnySplit() throws {
        let frame: [UInt8] = [0x82, 0x02, 0xD0, 0x00]
        let stream = Self.goodResponse + frame
        for cut in 0...stream.count {
            var parser = WebSocketUpgradeResponseParser(expectedAccept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", offeredSubprotocols: ["mqtt"])
            let first = Array(stream[..<cut])
            let second = Array(stream[cut...])
            var frames: [UInt8] = []
            var selected: String?
            if case .upgraded(let consumed, let subprotocol) = try parser.parse(first) {
                frames = Array(first[consumed...]) + second
                selected = subprotocol
            } else if case .upgraded(let consumed, let subprotocol) = try parser.parse(second) {
                frames = Array(second[consumed...])
                selected = subprotocol
            } else {
                Issue.record("not upgraded at cut \(cut)")
            }
            #expect(selected == "mqtt")
            #expect(frames == frame, "cut at \(cut)")
        }
    }

    @Test("bad or refusing responses fail with the status and first line in the reason",
          arguments: [
              ("HTTP/1.1 404 Not Found\r\n", "WebSocket upgrade refused: HTTP 404 (HTTP/1.1 404 Not Found)"),
              ("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "WebSocket upgrade refused: HTTP 400 (HTTP/1.1 400 Bad Request)"),
              ("SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP response to the WebSocket upgrade: \"SSH-2.0-OpenSSH_9.2\""),
              ("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
               "WebSocket upgrade response lacks \"Upgrade: websocket\" (got none)"),
              ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
               "WebSocket upgrade response lacks \"Connection: Upgrade\""),
              ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
               "WebSocket upgrade response lacks Sec-WebSocket-Accept"),
              ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAA\r\n\r\n",
               "Sec-WebSocket-Accept mismatch: expected s3pPLMBiTxaQ9kYGzzhZRbK+xOo=, got AAAA"),
              ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
               "server chose subprotocol \"chat\", offered mqtt"),
              ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
               "server chose WebSocket extensions that were not offered: permessage-deflate"),
          ])
    func badResponses(response: String, reason: String) {
        var parser = WebSocketUpgradeResponseParser(expectedAccept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", offeredSubprotocols: ["mqtt"])
        let error = #expect(throws: WebSocketError.self) { _ = try parser.parse(Array(response.utf8)) }
        #expect(error?.description == reason)
    }

    @Test("a response head longer than the limit is refused")
    func overlongResponse() {
        var parser = WebSocketUpgradeResponseParser(expectedAccept: "x", offeredSubprotocols: [], maximumLength: 64)
        let head = "HTTP/1.1 101 Switching Protocols\r\nX-Padding: " + String(repeating: "a", count: 100)
        let error = #expect(throws: WebSocketError.self) { _ = try parser.parse(Array(head.utf8)) }
        #expect(error?.description == "WebSocket upgrade response longer than 64 bytes: HTTP/1.1 101 Switching Protocols")
    }

    @Test("a refused upgrade over a real socket fails with the HTTP status and first line; our request reached the server")
    func refusedOverSocket() throws {
        let responder = try OneShotHTTPResponder(
            response: "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\ndenied")
        let error = #expect(throws: WebSocketError.self) {
            _ = try LayeredTestClient.connect(port: responder.port, websocketPath: "/wrong/path")
        }
        #expect(error?.kind == .upgradeRefused(status: 403))
        #expect(error?.description == "WebSocket upgrade refused: HTTP 403 (HTTP/1.1 403 Forbidden)")
        let request = String(decoding: responder.finish(), as: UTF8.self)
        #expect(request.hasPrefix("GET /wrong/path HTTP/1.1\r\nHost: 127.0.0.1:\(responder.port)\r\n"))
    }
}
