import FleetTransport
import Testing

/// Reference masking for expectations: RFC 6455 §5.3 written the plainest way.
func referenceMask(_ payload: [UInt8], _ key: [UInt8]) -> [UInt8] {
    payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
}

func encodedFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], key: WebSocketMaskKey, final: Bool = true) -> [UInt8] {
    let buffer = OutboundBuffer(initialCapacity: 64, maximumCapacity: 1 << 20)
    #expect(WebSocketFrameEncoder.encode(opcode: opcode, payload: payload, maskKey: key, final: final, into: buffer))
    return Array(buffer.readableBytes)
}

/// What the decoder reported, in a comparable form.
enum RecordedEvent: Equatable {
    case data([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    case close(UInt16?, String)
}

/// Decodes `pieces` in order and records events; consecutive data chunks are merged (their split is not meaningful).
func decodeRecording(_ pieces: [[UInt8]], maximum: UInt64 = 1 << 20) throws(WebSocketError) -> [RecordedEvent] {
    var decoder = WebSocketFrameDecoder(maximumPayloadLength: maximum)
    var events: [RecordedEvent] = []
    for piece in pieces {
        try decoder.decode(piece) { event in
            switch event {
            case .data(let chunk):
                if case .data(let earlier)? = events.last {
                    events[events.count - 1] = .data(earlier + Array(chunk))
                } else {
                    events.append(.data(Array(chunk)))
                }
            case .ping(let body): events.append(.ping(Array(body)))
            case .pong(let body): events.append(.pong(Array(body)))
            case .close(let code, let reason): events.append(.close(code, reason))
            }
        }
    }
    return events
}

@Suite("WebSocket frames (RFC 6455 §5)")
struct WebSocketFrameTests {
    static let rfcKey = WebSocketMaskKey(0x37, 0xFA, 0x21, 0x3D)

    @Test("a masked text frame of \"Hello\" matches RFC 6455 §5.7 byte for byte")
    func rfcMaskedHello() {
        #expect(
            encodedFrame(.text, Array("Hello".utf8), key: Self.rfcKey) == [
                0x81,  // FIN, opcode 1 (text)
                0x85,  // MASK, length 5
                0x37, 0xFA, 0x21, 0x3D,  // masking key
                0x7F, 0x9F, 0x4D, 0x51, 0x58,  // "Hello" XOR key
            ])
    }

    @Test("binary frames use the 7-bit, 16-bit and 64-bit length forms at their boundaries",
          arguments: [
              (0, [0x82, 0x80] as [UInt8]),  // empty payload, MASK set
              (125, [0x82, 0x80 | 125] as [UInt8]),  // longest 7-bit length
              (126, [0x82, 0xFE, 0x00, 0x7E] as [UInt8]),  // 126: 16-bit length follows
              (65_535, [0x82, 0xFE, 0xFF, 0xFF] as [UInt8]),  // longest 16-bit length
              (65_536, [0x82, 0xFF, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00] as [UInt8]),  // 64-bit length follows
          ])
    func lengthForms(length: Int, header: [UInt8]) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let key: [UInt8] = [0x01, 0x80, 0xFE, 0x55]
        let frame = encodedFrame(.binary, payload, key: WebSocketMaskKey(0x01, 0x80, 0xFE, 0x55))
        #expect(frame == header + key + referenceMask(payload, key))
        #expect(WebSocketFrameEncoder.headerLength(payloadLength: length) == header.count + 4)
    }

    @Test("a fragment without FIN has the FIN bit clear")
    func fragmentWithoutFIN() {
        #expect(encodedFrame(.binary, [0xAA], key: Self.rfcKey, final: false) == [0x02, 0x81, 0x37, 0xFA, 0x21, 0x3D, 0xAA ^ 0x37])
    }

    @Test("every frame gets a fresh mask key, and the same seed repeats the same keys")
    func maskKeysPerFrame() {
        var first = WebSocketMaskGenerator(seed: 7)
        var second = WebSocketMaskGenerator(seed: 7)
        let keys = (0..<64).map { _ in first.next() }
        #expect(keys == (0..<64).map { _ in second.next() })
        var distinct: [WebSocketMaskKey] = []
        for key in keys where !distinct.contains(key) { distinct.append(key) }
        #expect(distinct.count == 64)
    }

    /// A server stream: a binary frame holding two MQTT packets, a fragmented message carrying a third packet with a
    /// ping between its fragments (§5.4 allows control frames there), a 16-bit-length frame, and a close.
    static let serverStream: [UInt8] =
        [0x82, 0x08, 0x20, 0x02, 0x00, 0x00, 0x90, 0x03, 0x00, 0x01]  // binary, 8 bytes: CONNACK + start of SUBACK
        + [0x02, 0x01, 0x02]  // binary without FIN, 1 byte: rest of SUBACK
        + [0x89, 0x02, 0x68, 0x69]  // ping "hi"
        + [0x00, 0x02, 0x30, 0x05]  // continuation without FIN: PUBLISH header
        + [0x80, 0x05, 0x00, 0x01, 0x74, 0x41, 0x42]  // final continuation: topic "t", payload "AB"
        + [0x82, 0x7E, 0x00, 0x80] + [UInt8](repeating: 0x5A, count: 128)  // 16-bit length, 128 bytes
        + [0x8A, 0x00]  // unsolicited empty pong
        + [0x88, 0x05, 0x03, 0xE8, 0x62, 0x79, 0x65]  // close 1000 "bye"
        + [0x82, 0x01, 0xFF]  // after close: ignored

    static let expectedEvents: [RecordedEvent] = [
        .data([0x20, 0x02, 0x00, 0x00, 0x90, 0x03, 0x00, 0x01, 0x02]),
        .ping(Array("hi".utf8)),
        .data([0x30, 0x05, 0x00, 0x01, 0x74, 0x41, 0x42] + [UInt8](repeating: 0x5A, count: 128)),
        .pong([]),
        .close(1000, "bye"),
    ]

    @Test("a server stream decodes the same whole, byte by byte, and split in two at every byte boundary")
    func decodesAnySplit() throws {
        let stream = Self.serverStream
        #expect(try decodeRecording([stream]) == Self.expectedEvents)
        #expect(try decodeRecording(stream.map { [$0] }) == Self.expectedEvents)
        for cut in 0...stream.count {
            #expect(try decodeRecording([Array(stream[..<cut]), Array(stream[cut...])]) == Self.expectedEvents, "cut at \(cut)")
        }
    }

    @Test("a 64-bit length frame decodes")
    func sixtyFourBitLength() throws {
        let payload = [UInt8](repeating: 0x11, count: 70_000)
        let frame: [UInt8] = [0x82, 0x7F, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70] + payload
        #expect(try decodeRecording([frame]) == [.data(payload)])
    }

    @Test("a close frame without a body reports no code")
    func closeWithoutBody() throws {
        #expect(try decodeRecording([[0x88, 0x00]]) == [.close(nil, "")])
    }

    @Test("bad frames fail with a reason and finish the decoder",
          arguments: [
              ([0x82, 0x81, 1, 2, 3, 4, 0] as [UInt8], "masked WebSocket frame from the server"),
              ([0xC2, 0x00], "WebSocket frame with reserved bits set (0xc2): no extension was negotiated"),
              ([0x83, 0x00], "WebSocket frame with reserved opcode 0x3"),
              ([0x81, 0x01, 0x41], "WebSocket text frame: MQTT is carried in binary frames only"),
              ([0x80, 0x01, 0x41], "WebSocket continuation frame without a message to continue"),
              ([0x02, 0x00, 0x82, 0x00], "new WebSocket data frame while a fragmented message awaits continuation"),
              ([0x89, 0x7E, 0x00, 0x7E], "WebSocket control frame of 126 bytes (at most 125)"),
              ([0x09, 0x00], "fragmented WebSocket control frame (opcode 9)"),
              ([0x88, 0x01, 0x03], "WebSocket close frame with a 1-byte body"),
              ([0x82, 0x7E, 0x00, 0x05], "WebSocket frame length 5 not in its shortest form"),
              ([0x82, 0x7F, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF], "WebSocket frame length 65535 not in its shortest form"),
              ([0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0], "WebSocket frame length with the most significant bit set"),
              ([0x82, 0x7E, 0x07, 0xD0], "WebSocket frame of 2000 bytes exceeds the maximum of 1024"),
          ])
    func badFrames(bytes: [UInt8], reason: String) {
        var decoder = WebSocketFrameDecoder(maximumPayloadLength: 1024)
        var events = 0
        let error = #expect(throws: WebSocketError.self) { try decoder.decode(bytes) { _ in events += 1 } }
        #expect(error?.description == reason)
        #expect(decoder.isFinished)
        #expect(events == 0)
        // Nothing more is decoded once failed: a valid frame after the error yields no event.
        #expect(throws: Never.self) { try decoder.decode([0x82, 0x01, 0x00]) { _ in events += 1 } }
        #expect(events == 0)
    }

    @Test("an oversized frame is refused from its header, before its payload arrives")
    func oversizedRefusedEarly() {
        let error = #expect(throws: WebSocketError.self) {
            _ = try decodeRecording([[0x82, 0x7F, 0, 0, 0, 0x01, 0, 0, 0, 0]], maximum: 1 << 20)
        }
        #expect(error?.kind == .frameTooLarge)
        #expect(error?.description == "WebSocket frame of 4294967296 bytes exceeds the maximum of 1048576")
    }
}

@Suite("WebSocketClientFraming: MQTT bytes over frames, with ping and close handled")
struct WebSocketClientFramingTests {
    func maskKeyBytes(_ key: WebSocketMaskKey) -> [UInt8] { [key.bytes.0, key.bytes.1, key.bytes.2, key.bytes.3] }

    @Test("send frames MQTT bytes as one masked binary frame with the next key of the client's seed")
    func sendsMaskedBinary() throws {
        var framing = WebSocketClientFraming(maskSeed: 99)
        var keys = WebSocketMaskGenerator(seed: 99)
        let outbound = OutboundBuffer()
        try framing.send(MQTTTestBytes.connack, into: outbound)
        try framing.send(MQTTTestBytes.disconnect, into: outbound)
        let first = maskKeyBytes(keys.next())
        let second = maskKeyBytes(keys.next())
        #expect(first != second)
        #expect(
            Array(outbound.readableBytes)
                == [0x82, 0x84] + first + referenceMask(MQTTTestBytes.connack, first)
                + [0x82, 0x82] + second + referenceMask(MQTTTestBytes.disconnect, second))
    }

    @Test("a ping is answered with a masked pong carrying its body; data flows on around it")
    func pingAnswered() throws {
        var framing = WebSocketClientFraming(maskSeed: 5)
        var keys = WebSocketMaskGenerator(seed: 5)
        let outbound = OutboundBuffer()
        var delivered: [UInt8] = []
        let status = try framing.receive([0x82, 0x01, 0x20, 0x89, 0x03, 0x61, 0x62, 0x63, 0x82, 0x01, 0x02], outbound: outbound) {
            delivered += Array($0)
        }
        #expect(status == .open)
        #expect(delivered == [0x20, 0x02])
        let key = maskKeyBytes(keys.next())
        #expect(Array(outbound.readableBytes) == [0x8A, 0x83] + key + referenceMask(Array("abc".utf8), key))
    }

    @Test("a close from the server is answered with a close echoing its code, then the stream is closed")
    func closeAnswered() throws {
        var framing = WebSocketClientFraming(maskSeed: 5)
        var keys = WebSocketMaskGenerator(seed: 5)
        let outbound = OutboundBuffer()
        let status = try framing.receive([0x88, 0x04, 0x03, 0xF1, 0x6F, 0x6B], outbound: outbound) { _ in }
        #expect(status == .closed(code: 1009, reason: "ok"))
        let key = maskKeyBytes(keys.next())
        #expect(Array(outbound.readableBytes) == [0x88, 0x82] + key + referenceMask([0x03, 0xF1], key))
        #expect(framing.closeSent)
        let error = #expect(throws: WebSocketError.self) { try framing.send([0x00], into: outbound) }
        #expect(error?.description == "WebSocket send after close")
    }

    @Test("close queues a normal-closure frame with the reason, once")
    func closeSent() throws {
        var framing = WebSocketClientFraming(maskSeed: 1)
        var keys = WebSocketMaskGenerator(seed: 1)
        let outbound = OutboundBuffer()
        try framing.close(code: 1000, reason: "done", outbound: outbound)
        try framing.close(code: 1000, reason: "again", outbound: outbound)
        let key = maskKeyBytes(keys.next())
        #expect(Array(outbound.readableBytes) == [0x88, 0x86] + key + referenceMask([0x03, 0xE8] + Array("done".utf8), key))
    }

    @Test("a full outbound buffer is reported, not grown past its maximum")
    func outboundFull() {
        var framing = WebSocketClientFraming(maskSeed: 1)
        let outbound = OutboundBuffer(initialCapacity: 16, maximumCapacity: 16)
        let error = #expect(throws: WebSocketError.self) { try framing.send([UInt8](repeating: 1, count: 11), into: outbound) }
        #expect(error?.kind == .outboundFull)
        #expect(outbound.isEmpty)
    }
}
