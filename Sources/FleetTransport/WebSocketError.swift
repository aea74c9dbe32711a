/// Why a WebSocket upgrade or stream failed. `description` is the reason that closes that one client, e.g.
/// "WebSocket upgrade refused: HTTP 404 (HTTP/1.1 404 Not Found)" or "WebSocket frame of 70000 bytes exceeds the
/// maximum of 65536".
public struct WebSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server answered the upgrade with a status other than 101.
        case upgradeRefused(status: Int)
        /// A 101 answer that does not complete the handshake (wrong accept key, missing headers, unknown protocol).
        case badUpgradeResponse
        /// A frame breaking RFC 6455 (masked server frame, reserved bits, bad opcode, bad control frame, ...).
        case protocolViolation
        /// A frame longer than the configured maximum.
        case frameTooLarge
        /// A bad argument from our own side (header with CR/LF, oversized control payload).
        case invalidRequest
        /// The outbound buffer is at its maximum (the socket has not taken what is queued).
        case outboundFull
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
