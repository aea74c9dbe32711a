/// RFC 6455 §5.2 opcodes.
public enum WebSocketOpcode: UInt8, Sendable, Equatable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    var isControl: Bool { rawValue & 0x8 != 0 }
}

/// The 4-byte masking key of one client frame (RFC 6455 §5.3), in wire order.
public struct WebSocketMaskKey: Sendable, Equatable {
    public var bytes: (UInt8, UInt8, UInt8, UInt8)

    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        bytes = (b0, b1, b2, b3)
    }

    public static func == (lhs: WebSocketMaskKey, rhs: WebSocketMaskKey) -> Bool {
        lhs.bytes == rhs.bytes
    }

    /// The key repeated over 8 bytes in memory order, for masking a word at a time.
    var word: UInt64 {
        let key = UInt64(bytes.0) | UInt64(bytes.1) << 8 | UInt64(bytes.2) << 16 | UInt64(bytes.3) << 24
        return UInt64(littleEndian: key | key << 32)
    }
}

/// A fresh mask key for every frame (RFC 6455 §5.3 asks for unpredictable keys to protect intermediaries from
/// cache poisoning; a load generator on loopback only needs them distinct and reproducible, so SplitMix64 seeded
/// per client serves, and costs a few ns).
public struct WebSocketMaskGenerator: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> WebSocketMaskKey {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return WebSocketMaskKey(
            UInt8(truncatingIfNeeded: mixed), UInt8(truncatingIfNeeded: mixed >> 8),
            UInt8(truncatingIfNeeded: mixed >> 16), UInt8(truncatingIfNeeded: mixed >> 24))
    }
}

/// Writes client frames (always masked, RFC 6455 §5.1) straight into an OutboundBuffer.
public enum WebSocketFrameEncoder {
    /// Bytes of header for a masked frame with `payloadLength` bytes: 2, +2 or +8 for the length, +4 for the key.
    public static func headerLength(payloadLength: Int) -> Int {
        payloadLength < 126 ? 6 : payloadLength <= 0xFFFF ? 8 : 14
    }

    /// Appends one frame: FIN set unless `final` is false, MASK set, the 7/16/64-bit length (RFC 6455 §5.2, always the
    /// shortest form), the key, then the payload XORed with the key. False if `outbound` cannot take it.
    @discardableResult
    public static func encode(
        opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, maskKey: WebSocketMaskKey, final: Bool = true,
        into outbound: OutboundBuffer
    ) -> Bool {
        let payloadLength = payload.count
        let header = headerLength(payloadLength: payloadLength)
        return outbound.writeInPlace(minimumCapacity: header + payloadLength) { destination in
            guard let base = destination.baseAddress else { return 0 }
            base.storeBytes(of: (final ? 0x80 : 0x00) | opcode.rawValue, as: UInt8.self)  // FIN, RSV1-3 = 0, opcode
            var index = 2
            if payloadLength < 126 {
                base.storeBytes(of: 0x80 | UInt8(payloadLength), toByteOffset: 1, as: UInt8.self)  // MASK, 7-bit length
            } else if payloadLength <= 0xFFFF {
                base.storeBytes(of: 0x80 | 126, toByteOffset: 1, as: UInt8.self)  // MASK, 16-bit length follows
                base.storeBytes(of: UInt16(payloadLength).bigEndian, toByteOffset: 2, as: UInt16.self)
                index = 4
            } else {
                base.storeBytes(of: 0x80 | 127, toByteOffset: 1, as: UInt8.self)  // MASK, 64-bit length follows
                base.storeBytes(of: UInt64(payloadLength).bigEndian, toByteOffset: 2, as: UInt64.self)
                index = 10
            }
            base.storeBytes(of: maskKey.bytes.0, toByteOffset: index, as: UInt8.self)
            base.storeBytes(of: maskKey.bytes.1, toByteOffset: index + 1, as: UInt8.self)
            base.storeBytes(of: maskKey.bytes.2, toByteOffset: index + 2, as: UInt8.self)
            base.storeBytes(of: maskKey.bytes.3, toByteOffset: index + 3, as: UInt8.self)
            index += 4
            if let source = payload.baseAddress {
                mask(from: source, to: base + index, count: payloadLength, key: maskKey)
            }
            return index + payloadLength
        }
    }

    @discardableResult
    public static func encode(
        opcode: WebSocketOpcode, payload: [UInt8], maskKey: WebSocketMaskKey, final: Bool = true,
        into outbound: OutboundBuffer
    ) -> Bool {
        payload.withUnsafeBytes { encode(opcode: opcode, payload: $0, maskKey: maskKey, final: final, into: outbound) }
    }

    /// RFC 6455 §5.3: byte i XOR key[i % 4]; eight bytes at a time, then the tail.
    @inline(__always)
    static func mask(from source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int, key: WebSocketMaskKey) {
        let word = key.word
        var offset = 0
        while offset + 8 <= count {
            let value = source.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            destination.storeBytes(of: value ^ word, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        // The key in memory order (byte j at bits 8j), so the tail needs no array.
        let keyValue = UInt32(key.bytes.0) | UInt32(key.bytes.1) << 8 | UInt32(key.bytes.2) << 16 | UInt32(key.bytes.3) << 24
        while offset < count {
            let value = source.load(fromByteOffset: offset, as: UInt8.self)
            let keyByte = UInt8(truncatingIfNeeded: keyValue >> UInt32((offset & 3) * 8))
            destination.storeBytes(of: value ^ keyByte, toByteOffset: offset, as: UInt8.self)
            offset += 1
        }
    }
}
