/// Reads MQTT data types (5.0 §1.5) from a packet body with bounds checks on every byte: running past
/// `end` throws `.truncated` naming the field. Offsets are absolute within `bytes`.
@usableFromInline
struct MQTTReadCursor {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline var offset: Int
    @usableFromInline let end: Int
    @usableFromInline let type: MQTTPacketType

    @inlinable init(bytes: UnsafeRawBufferPointer, range: Range<Int>, type: MQTTPacketType) {
        self.bytes = bytes
        self.offset = range.lowerBound
        self.end = range.upperBound
        self.type = type
    }

    @inlinable var remaining: Int { end - offset }
    @inlinable var isAtEnd: Bool { offset >= end }

    @inlinable mutating func byte(_ field: String) throws(MQTTDecodeError) -> UInt8 {
        guard offset < end else { throw .truncated(type, field: field) }
        let value = bytes[offset]
        offset += 1
        return value
    }

    @inlinable mutating func uint16(_ field: String) throws(MQTTDecodeError) -> UInt16 {
        guard end - offset >= 2 else { throw .truncated(type, field: field) }
        let value = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        offset += 2
        return value
    }

    @inlinable mutating func uint32(_ field: String) throws(MQTTDecodeError) -> UInt32 {
        guard end - offset >= 4 else { throw .truncated(type, field: field) }
        var value: UInt32 = 0
        for index in 0..<4 { value = value << 8 | UInt32(bytes[offset + index]) }
        offset += 4
        return value
    }

    /// Variable Byte Integer (5.0 §1.5.5), at most 4 bytes.
    @inlinable mutating func variableByteInteger(_ field: String) throws(MQTTDecodeError) -> Int {
        var value = 0
        var shift = 0
        for index in 0..<4 {
            let digit = try byte(field)
            value |= Int(digit & 0x7F) << shift
            if digit & 0x80 == 0 { return value }
            if index == 3 { break }
            shift += 7
        }
        throw .variableByteIntegerTooLong(field: field)
    }

    /// `count` raw bytes; returns their absolute range.
    @inlinable mutating func range(count: Int, _ field: String) throws(MQTTDecodeError) -> Range<Int> {
        guard count >= 0, end - offset >= count else { throw .truncated(type, field: field) }
        let range = offset..<(offset + count)
        offset += count
        return range
    }

    /// Binary Data (5.0 §1.5.6): two-byte length then bytes; returns the bytes' range.
    @inlinable mutating func binaryRange(_ field: String) throws(MQTTDecodeError) -> Range<Int> {
        let count = Int(try uint16(field))
        return try range(count: count, field)
    }

    /// UTF-8 Encoded String (5.0 §1.5.4): validated (well-formed, no U+0000); returns the bytes' range.
    @inlinable mutating func stringRange(_ field: String) throws(MQTTDecodeError) -> Range<Int> {
        let range = try binaryRange(field)
        try validateUTF8(bytes, range, field: field)
        return range
    }

    mutating func string(_ field: String) throws(MQTTDecodeError) -> String {
        let range = try stringRange(field)
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    mutating func binary(_ field: String) throws(MQTTDecodeError) -> [UInt8] {
        let range = try binaryRange(field)
        return Array(bytes[range])
    }

    /// The rest of the body must be empty: otherwise the remaining length disagrees with the content.
    @inlinable func expectEnd() throws(MQTTDecodeError) {
        if offset < end { throw .trailingBytes(type, count: end - offset) }
    }
}

/// Checks that `bytes[range]` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF)
/// without U+0000 (5.0 §1.5.4). ASCII runs take the fast path.
@inlinable func validateUTF8(
    _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, field: String
) throws(MQTTDecodeError) {
    var index = range.lowerBound
    let end = range.upperBound
    while index < end {
        let lead = bytes[index]
        if lead < 0x80 {
            if lead == 0 { throw .nullCharacter(field: field) }
            index += 1
            continue
        }
        let count: Int
        var lowest: UInt8 = 0x80
        var highest: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: count = 1
        case 0xE0: count = 2; lowest = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 2
        case 0xED: count = 2; highest = 0x9F  // excludes UTF-16 surrogates
        case 0xF0: count = 3; lowest = 0x90
        case 0xF1...0xF3: count = 3
        case 0xF4: count = 3; highest = 0x8F  // excludes values past U+10FFFF
        default: throw .invalidUTF8(field: field)
        }
        guard end - index > count else { throw .invalidUTF8(field: field) }
        let second = bytes[index + 1]
        guard second >= lowest, second <= highest else { throw .invalidUTF8(field: field) }
        var continuation = 2
        while continuation <= count {
            guard bytes[index + continuation] & 0xC0 == 0x80 else { throw .invalidUTF8(field: field) }
            continuation += 1
        }
        index += count + 1
    }
}
