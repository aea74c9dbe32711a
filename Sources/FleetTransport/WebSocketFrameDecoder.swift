/// Incremental decoder of server frames (RFC 6455 §5), for any split of the byte stream: a frame's header may
/// arrive a byte at a time, and data payloads are handed on as they arrive (never buffered), so MQTT sees one byte
/// stream whatever the framing: packets split across frames, several packets in one frame, fragmented messages.
///
/// Control frames (≤125 bytes, §5.5) are gathered whole and reported as events. Any violation throws, and the
/// decoder is then finished: the caller closes that one client with the error's reason.
public struct WebSocketFrameDecoder: Sendable {
    public enum Event {
        /// Payload bytes of a binary message (first frame or continuation), valid only during the callback.
        case data(UnsafeRawBufferPointer)
        case ping(UnsafeRawBufferPointer)
        case pong(UnsafeRawBufferPointer)
        /// RFC 6455 §5.5.1: the status code (nil when the frame had no body) and the UTF-8 reason.
        case close(code: UInt16?, reason: String)
    }

    /// Largest data frame payload accepted; a longer frame is garbage or hostile for MQTT's purposes.
    public let maximumPayloadLength: UInt64
    /// Header bytes gathered so far (at most 14: 2 + 8 length + 4 key).
    private var header: [UInt8] = []
    private var payloadRemaining: UInt64 = 0
    private var opcode: WebSocketOpcode = .binary
    private var inPayload = false
    /// A binary message began with FIN clear and awaits continuation frames.
    private var messageInProgress = false
    private var controlPayload: [UInt8] = []
    /// After a close frame or an error nothing more is decoded.
    public private(set) var isFinished = false

    public init(maximumPayloadLength: UInt64 = 1 << 20) {
        self.maximumPayloadLength = maximumPayloadLength
        header.reserveCapacity(14)
        controlPayload.reserveCapacity(125)
    }

    /// Decodes `bytes`, reporting events in stream order. Bytes after a close frame are ignored.
    public mutating func decode(
        _ bytes: UnsafeRawBufferPointer, _ handle: (Event) -> Void
    ) throws(WebSocketError) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        let count = bytes.count
        while offset < count && !isFinished {
            if !inPayload {
                // Header: gather just enough bytes to know the whole header's length, then the rest.
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                header.append(byte)
                offset += 1
                if header.count < 2 || header.count < Self.headerLength(secondByte: header[1]) { continue }
                try startFrame()
                if payloadRemaining == 0 { try finishFrame(handle) }
                continue
            }
            let available = min(UInt64(count - offset), payloadRemaining)
            let chunk = UnsafeRawBufferPointer(start: base + offset, count: Int(available))
            offset += Int(available)
            payloadRemaining -= available
            if opcode.isControl {
                controlPayload.append(contentsOf: chunk)
            } else {
                handle(.data(chunk))
            }
            if payloadRemaining == 0 { try finishFrame(handle) }
        }
    }

    public mutating func decode(_ bytes: [UInt8], _ handle: (Event) -> Void) throws(WebSocketError) {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(WebSocketError) in try decode(buffer, handle) }
        }
        try result.get()
    }

    /// Header length from the second byte: 2, +2 or +8 for the extended length, +4 if masked.
    private static func headerLength(secondByte: UInt8) -> Int {
        let lengthCode = secondByte & 0x7F
        let extended = lengthCode == 126 ? 2 : lengthCode == 127 ? 8 : 0
        return 2 + extended + (secondByte & 0x80 != 0 ? 4 : 0)
    }

    /// Checks a complete header (RFC 6455 §5.2) and sets up the payload state.
    private mutating func startFrame() throws(WebSocketError) {
        let first = header[0]
        let second = header[1]
        let final = first & 0x80 != 0
        guard first & 0x70 == 0 else {
            throw fail(.protocolViolation, "WebSocket frame with reserved bits set (0x\(String(first, radix: 16))): no extension was negotiated")
        }
        guard let parsed = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw fail(.protocolViolation, "WebSocket frame with reserved opcode 0x\(String(first & 0x0F, radix: 16))")
        }
        // §5.1: a client MUST close the connection if it detects a masked frame from the server.
        guard second & 0x80 == 0 else { throw fail(.protocolViolation, "masked WebSocket frame from the server") }
        var length = UInt64(second & 0x7F)
        if length == 126 {
            length = UInt64(header[2]) << 8 | UInt64(header[3])
            guard length >= 126 else { throw fail(.protocolViolation, "WebSocket frame length \(length) not in its shortest form") }
        } else if length == 127 {
            length = header[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
            guard length >> 63 == 0 else { throw fail(.protocolViolation, "WebSocket frame length with the most significant bit set") }
            guard length > 0xFFFF else { throw fail(.protocolViolation, "WebSocket frame length \(length) not in its shortest form") }
        }
        switch parsed {
        case .close, .ping, .pong:
            // §5.5: control frames are not fragmented and carry at most 125 bytes.
            guard final else { throw fail(.protocolViolation, "fragmented WebSocket control frame (opcode \(parsed.rawValue))") }
            guard length <= 125 else { throw fail(.protocolViolation, "WebSocket control frame of \(length) bytes (at most 125)") }
            controlPayload.removeAll(keepingCapacity: true)
        case .text:
            // MQTT 5.0 §6.0 [MQTT-6.0.0-1]: packets travel in binary frames; any other data frame closes the connection.
            throw fail(.protocolViolation, "WebSocket text frame: MQTT is carried in binary frames only")
        case .binary:
            guard !messageInProgress else {
                throw fail(.protocolViolation, "new WebSocket data frame while a fragmented message awaits continuation")
            }
            messageInProgress = !final
        case .continuation:
            guard messageInProgress else { throw fail(.protocolViolation, "WebSocket continuation frame without a message to continue") }
            messageInProgress = !final
        }
        if !parsed.isControl && length > maximumPayloadLength {
            throw fail(.frameTooLarge, "WebSocket frame of \(length) bytes exceeds the maximum of \(maximumPayloadLength)")
        }
        opcode = parsed
        payloadRemaining = length
        inPayload = true
        header.removeAll(keepingCapacity: true)
    }

    private mutating func finishFrame(_ handle: (Event) -> Void) throws(WebSocketError) {
        inPayload = false
        switch opcode {
        case .ping: controlPayload.withUnsafeBytes { handle(.ping($0)) }
        case .pong: controlPayload.withUnsafeBytes { handle(.pong($0)) }
        case .close:
            // §5.5.1: an optional body of a 2-byte status code and a UTF-8 reason.
            guard controlPayload.count != 1 else { throw fail(.protocolViolation, "WebSocket close frame with a 1-byte body") }
            isFinished = true
            if controlPayload.isEmpty {
                handle(.close(code: nil, reason: ""))
            } else {
                let code = UInt16(controlPayload[0]) << 8 | UInt16(controlPayload[1])
                handle(.close(code: code, reason: String(decoding: controlPayload[2...], as: UTF8.self)))
            }
        default: break
        }
    }

    private mutating func fail(_ kind: WebSocketError.Kind, _ text: String) -> WebSocketError {
        isFinished = true
        return WebSocketError(kind, text)
    }
}
