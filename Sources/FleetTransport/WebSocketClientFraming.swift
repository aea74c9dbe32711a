/// One client's WebSocket stream after the upgrade: MQTT bytes out as masked binary frames, frames in as an MQTT
/// byte stream, with ping answered by pong and the closing handshake (RFC 6455 §5.5) done here. Like TLS it never
/// touches the socket: replies are appended to the caller's OutboundBuffer, to be flushed as usual.
///
///     socket (or TLS plaintext) -> receive(_:outbound:deliver:) -> MQTT bytes to the packet decoder
///     MQTT packets of a lane turn -> send(_:into:) -> one binary frame -> (TLS encrypt) -> flush
public struct WebSocketClientFraming: Sendable {
    public enum ReceiveStatus: Equatable, Sendable {
        case open
        /// The server sent a close frame; our close reply is already in `outbound`. Flush, then close the socket.
        case closed(code: UInt16?, reason: String)
    }

    private var decoder: WebSocketFrameDecoder
    private var masks: WebSocketMaskGenerator
    public private(set) var closeSent = false

    /// `maskSeed`: per client (e.g. the run seed mixed with the client index), so the bytes on the wire repeat
    /// between runs. `maximumPayloadLength`: larger server frames close the client with `.frameTooLarge`.
    public init(maskSeed: UInt64, maximumPayloadLength: UInt64 = 1 << 20) {
        decoder = WebSocketFrameDecoder(maximumPayloadLength: maximumPayloadLength)
        masks = WebSocketMaskGenerator(seed: maskSeed)
    }

    /// Sends `payload` (one or more whole or partial MQTT packets) as one binary frame with a fresh mask key.
    public mutating func send(_ payload: UnsafeRawBufferPointer, into outbound: OutboundBuffer) throws(WebSocketError) {
        guard !closeSent else { throw WebSocketError(.invalidRequest, "WebSocket send after close") }
        guard WebSocketFrameEncoder.encode(opcode: .binary, payload: payload, maskKey: masks.next(), into: outbound) else {
            throw WebSocketError(.outboundFull, "outbound buffer full: \(outbound.count) bytes not yet taken by the socket")
        }
    }

    public mutating func send(_ payload: [UInt8], into outbound: OutboundBuffer) throws(WebSocketError) {
        let result = payload.withUnsafeBytes { bytes in
            Result { () throws(WebSocketError) in try send(bytes, into: outbound) }
        }
        try result.get()
    }

    /// Decodes frames from `bytes`; binary payload bytes go to `deliver` in order (valid only during the call).
    /// Pings are answered with a pong carrying the same body (§5.5.3); a close is answered with a close echoing
    /// the code (§5.5.1). Throws on a protocol violation or an oversized frame: close that one client.
    public mutating func receive(
        _ bytes: UnsafeRawBufferPointer, outbound: OutboundBuffer, deliver: (UnsafeRawBufferPointer) -> Void
    ) throws(WebSocketError) -> ReceiveStatus {
        var generator = masks
        var closed: (code: UInt16?, reason: String)?
        var replyRefused = false
        let alreadySentClose = closeSent
        defer { masks = generator }
        try decoder.decode(bytes) { event in
            switch event {
            case .data(let chunk):
                deliver(chunk)
            case .ping(let body):
                if !alreadySentClose
                    && !WebSocketFrameEncoder.encode(opcode: .pong, payload: body, maskKey: generator.next(), into: outbound)
                {
                    replyRefused = true
                }
            case .pong:
                break  // unsolicited pongs are allowed (§5.5.3) and need no answer
            case .close(let code, let reason):
                closed = (code, reason)
                if !alreadySentClose {
                    var body: [UInt8] = []
                    if let code { body = [UInt8(code >> 8), UInt8(code & 0xFF)] }
                    if !WebSocketFrameEncoder.encode(opcode: .close, payload: body, maskKey: generator.next(), into: outbound) {
                        replyRefused = true
                    }
                }
            }
        }
        if replyRefused {
            throw WebSocketError(.outboundFull, "outbound buffer full while answering a WebSocket control frame")
        }
        if let closed {
            closeSent = true
            return .closed(code: closed.code, reason: closed.reason)
        }
        return .open
    }

    public mutating func receive(
        _ bytes: [UInt8], outbound: OutboundBuffer, deliver: (UnsafeRawBufferPointer) -> Void
    ) throws(WebSocketError) -> ReceiveStatus {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(WebSocketError) -> ReceiveStatus in try receive(buffer, outbound: outbound, deliver: deliver) }
        }
        return try result.get()
    }

    /// Queues our close frame (§5.5.1: 2-byte code, then a UTF-8 reason; 1000 = normal closure, §7.4.1).
    public mutating func close(code: UInt16 = 1000, reason: String = "", outbound: OutboundBuffer) throws(WebSocketError) {
        guard !closeSent else { return }
        var body = [UInt8(code >> 8), UInt8(code & 0xFF)]
        body.append(contentsOf: reason.utf8.prefix(123))
        closeSent = true
        guard WebSocketFrameEncoder.encode(opcode: .close, payload: body, maskKey: masks.next(), into: outbound) else {
            throw WebSocketError(.outboundFull, "outbound buffer full while closing the WebSocket")
        }
    }
}
