import COpenSSL

/// The client's HTTP/1.1 upgrade request (RFC 6455 §4.1) for MQTT over WebSocket.
public struct WebSocketUpgradeRequest: Sendable, Equatable {
    /// The request bytes to send once the TCP (or TLS) connection is up.
    public let bytes: [UInt8]
    /// The base64 Sec-WebSocket-Key sent.
    public let key: String
    /// What the server must answer in Sec-WebSocket-Accept (RFC 6455 §4.2.2 step 5.4).
    public let expectedAccept: String
    public let subprotocols: [String]

    /// - Parameters:
    ///   - host, port: for the Host header (RFC 7230 §5.4); the port is left out when it is the scheme's default.
    ///   - secure: wss (default port 443) rather than ws (80).
    ///   - path: the request target, e.g. "/mqtt"; must start with "/".
    ///   - subprotocols: Sec-WebSocket-Protocol values, "mqtt" (MQTT 3.1.1 and 5.0 §6) or "mqttv3.1" for MQTT 3.1.
    ///   - extraHeaders: added as given (from the scenario: auth tokens, cookies); CR or LF in them is refused.
    ///   - nonce: the 16 random bytes of Sec-WebSocket-Key (RFC 6455 §4.1: a randomly selected 16-byte value);
    ///     `randomNonce(using:)` draws them from the lane's seeded generator.
    public init(
        host: String, port: UInt16, secure: Bool = false, path: String = "/", subprotocols: [String] = ["mqtt"],
        extraHeaders: [(name: String, value: String)] = [], nonce: [UInt8]
    ) throws(WebSocketError) {
        guard nonce.count == 16 else {
            throw WebSocketError(.invalidRequest, "Sec-WebSocket-Key nonce must be 16 bytes, got \(nonce.count)")
        }
        guard path.utf8.first == UInt8(ascii: "/"), !Self.hasLineBreakOrSpace(path) else {
            throw WebSocketError(.invalidRequest, "WebSocket path must start with / and hold no spaces or line breaks: \"\(path)\"")
        }
        for header in extraHeaders
        where Self.hasLineBreak(header.name) || Self.hasLineBreak(header.value) || header.name.isEmpty
            || header.name.utf8.contains(UInt8(ascii: ":"))
        {
            throw WebSocketError(.invalidRequest, "invalid extra WebSocket header \"\(header.name)\"")
        }
        let key = Base64.encode(nonce)
        self.key = key
        self.expectedAccept = Self.acceptValue(forKey: key)
        self.subprotocols = subprotocols
        let hostPart = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host  // IPv6 literal (RFC 3986 §3.2.2)
        let isDefaultPort = port == (secure ? 443 : 80)
        var text = "GET \(path) HTTP/1.1\r\n"
        text += "Host: \(hostPart)\(isDefaultPort ? "" : ":\(port)")\r\n"
        text += "Upgrade: websocket\r\n"
        text += "Connection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: \(key)\r\n"
        text += "Sec-WebSocket-Version: 13\r\n"
        if !subprotocols.isEmpty { text += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n" }
        for header in extraHeaders { text += "\(header.name): \(header.value)\r\n" }
        text += "\r\n"
        bytes = Array(text.utf8)
    }

    /// 16 bytes for Sec-WebSocket-Key from `generator` (seeded per lane, so runs are reproducible).
    public static func randomNonce<Generator: RandomNumberGenerator>(using generator: inout Generator) -> [UInt8] {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return (0..<8).map { UInt8(truncatingIfNeeded: high >> ($0 * 8)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> ($0 * 8)) }
    }

    /// base64(SHA-1(key + the RFC 6455 GUID)), RFC 6455 §1.3.
    public static func acceptValue(forKey key: String) -> String {
        let input = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        _ = input.withUnsafeBytes { source in
            EVP_Digest(source.baseAddress, source.count, &digest, &length, EVP_sha1(), nil)
        }
        return Base64.encode(digest.prefix(Int(length)))
    }

    private static func hasLineBreak(_ text: String) -> Bool {
        text.utf8.contains { $0 == 13 || $0 == 10 }
    }

    private static func hasLineBreakOrSpace(_ text: String) -> Bool {
        text.utf8.contains { $0 == 13 || $0 == 10 || $0 == 32 }
    }
}

/// Reads the server's answer to the upgrade, incrementally (any split), and checks it per RFC 6455 §4.2.2/§4.1.
public struct WebSocketUpgradeResponseParser: Sendable {
    public enum Progress: Equatable, Sendable {
        /// Feed more bytes.
        case incomplete
        /// Upgraded: the first `consumed` bytes of the last input were the response; the rest are frames.
        case upgraded(consumed: Int, subprotocol: String?)
    }

    public let expectedAccept: String
    public let offeredSubprotocols: [String]
    /// Longest response head accepted; a server sending more is not a WebSocket server.
    public let maximumLength: Int
    private var head: [UInt8] = []

    public init(expectedAccept: String, offeredSubprotocols: [String], maximumLength: Int = 8_192) {
        self.expectedAccept = expectedAccept
        self.offeredSubprotocols = offeredSubprotocols
        self.maximumLength = maximumLength
    }

    public init(request: WebSocketUpgradeRequest) {
        self.init(expectedAccept: request.expectedAccept, offeredSubprotocols: request.subprotocols)
    }

    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(WebSocketError) -> Progress {
        var consumed = 0
        var complete = false
        for byte in bytes {
            head.append(byte)
            consumed += 1
            let count = head.count
            if count >= 4 && head[count - 4] == 13 && head[count - 3] == 10 && head[count - 2] == 13 && head[count - 1] == 10 {
                complete = true
                break
            }
            if count > maximumLength {
                throw WebSocketError(
                    .badUpgradeResponse,
                    "WebSocket upgrade response longer than \(maximumLength) bytes: \(firstLine ?? "")")
            }
        }
        // A refusal is known from the status line alone; do not wait for headers that may never end.
        if let line = firstLine ?? (complete ? headText : nil) {
            try checkStatus(line)
        }
        guard complete else {
            return .incomplete
        }
        return .upgraded(consumed: consumed, subprotocol: try checkHeaders())
    }

    public mutating func parse(_ bytes: [UInt8]) throws(WebSocketError) -> Progress {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(WebSocketError) -> Progress in try parse(buffer) }
        }
        return try result.get()
    }

    /// The reason when the connection ends before the upgrade completed.
    public func endOfStreamError() -> WebSocketError {
        if let line = firstLine {
            return WebSocketError(.badUpgradeResponse, "connection closed during the WebSocket upgrade after \"\(line)\"")
        }
        return WebSocketError(.badUpgradeResponse, "connection closed before any WebSocket upgrade response")
    }

    private var headText: String { String(decoding: head, as: UTF8.self) }

    /// The status line, once its CRLF has arrived.
    private var firstLine: String? {
        guard let end = head.indices.first(where: { $0 + 1 < head.count && head[$0] == 13 && head[$0 + 1] == 10 }) else {
            return nil
        }
        return String(decoding: head[..<end], as: UTF8.self)
    }

    private func checkStatus(_ line: String) throws(WebSocketError) {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw WebSocketError(.badUpgradeResponse, "not an HTTP response to the WebSocket upgrade: \"\(line)\"")
        }
        if status != 101 {
            throw WebSocketError(.upgradeRefused(status: status), "WebSocket upgrade refused: HTTP \(status) (\(line))")
        }
    }

    /// RFC 6455 §4.1, the client's checks of a 101 response; returns the selected subprotocol.
    private func checkHeaders() throws(WebSocketError) -> String? {
        var upgrade: String?
        var connection: String?
        var accept: String?
        var subprotocol: String?
        var extensions: String?
        let lines = headText.split(separator: "\r\n", omittingEmptySubsequences: true).dropFirst()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                throw WebSocketError(.badUpgradeResponse, "malformed header line in the WebSocket upgrade response: \"\(line)\"")
            }
            let name = line[..<colon].lowercased()
            let value = String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
                .trimmingTrailingWhitespace()
            switch name {
            case "upgrade": upgrade = value
            case "connection": connection = value
            case "sec-websocket-accept": accept = value
            case "sec-websocket-protocol": subprotocol = value
            case "sec-websocket-extensions": extensions = value
            default: break
            }
        }
        guard upgrade?.lowercased() == "websocket" else {
            throw WebSocketError(.badUpgradeResponse, "WebSocket upgrade response lacks \"Upgrade: websocket\" (got \(upgrade.map { "\"\($0)\"" } ?? "none"))")
        }
        let connectionTokens = (connection ?? "").lowercased().split(separator: ",").map { $0.trimmingCharacters() }
        guard connectionTokens.contains("upgrade") else {
            throw WebSocketError(.badUpgradeResponse, "WebSocket upgrade response lacks \"Connection: Upgrade\"")
        }
        guard let accept else {
            throw WebSocketError(.badUpgradeResponse, "WebSocket upgrade response lacks Sec-WebSocket-Accept")
        }
        guard accept == expectedAccept else {
            throw WebSocketError(
                .badUpgradeResponse, "Sec-WebSocket-Accept mismatch: expected \(expectedAccept), got \(accept)")
        }
        if let extensions, !extensions.isEmpty {
            throw WebSocketError(.badUpgradeResponse, "server chose WebSocket extensions that were not offered: \(extensions)")
        }
        if let subprotocol, !offeredSubprotocols.contains(subprotocol) {
            throw WebSocketError(
                .badUpgradeResponse,
                "server chose subprotocol \"\(subprotocol)\", offered \(offeredSubprotocols.joined(separator: ", "))")
        }
        return subprotocol
    }
}

extension String {
    fileprivate func trimmingTrailingWhitespace() -> String {
        var scalars = Substring(self)
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}

extension Substring {
    fileprivate func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" }).trimmingTrailingWhitespace()
    }
}
