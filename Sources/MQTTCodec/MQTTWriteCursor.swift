/// Writes big-endian MQTT data types (5.0 §1.5) through a raw pointer into space already reserved in an
/// `MQTTByteBuffer`. Callers compute the exact size first, so writes need no per-byte capacity checks.
@usableFromInline
struct MQTTWriteCursor {
    @usableFromInline var pointer: UnsafeMutableRawPointer

    @inlinable init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }

    @inlinable mutating func byte(_ value: UInt8) {
        pointer.storeBytes(of: value, as: UInt8.self)
        pointer += 1
    }

    /// Two Byte Integer (5.0 §1.5.2).
    @inlinable mutating func uint16(_ value: UInt16) {
        byte(UInt8(truncatingIfNeeded: value >> 8))
        byte(UInt8(truncatingIfNeeded: value))
    }

    /// Four Byte Integer (5.0 §1.5.3).
    @inlinable mutating func uint32(_ value: UInt32) {
        uint16(UInt16(truncatingIfNeeded: value >> 16))
        uint16(UInt16(truncatingIfNeeded: value))
    }

    /// Variable Byte Integer (5.0 §1.5.5): 7 bits per byte, least significant group first.
    /// Values past the 4-byte maximum (268,435,455) are clamped to it, so the cursor never writes more
    /// bytes than `variableByteIntegerSize` reserved.
    @inlinable mutating func variableByteInteger(_ value: Int) {
        var remaining = min(max(value, 0), 268_435_455)
        repeat {
            var digit = UInt8(truncatingIfNeeded: remaining & 0x7F)
            remaining >>= 7
            if remaining > 0 { digit |= 0x80 }
            byte(digit)
        } while remaining > 0
    }

    @inlinable mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, source.count > 0 else { return }
        pointer.copyMemory(from: base, byteCount: source.count)
        pointer += source.count
    }

    @inlinable mutating func bytes(_ source: [UInt8]) {
        source.withUnsafeBytes { bytes($0) }
    }

    /// Binary Data (5.0 §1.5.6): two-byte length then the bytes.
    @inlinable mutating func binary(_ source: [UInt8]) {
        uint16(UInt16(truncatingIfNeeded: source.count))
        bytes(source)
    }

    /// UTF-8 Encoded String (5.0 §1.5.4): two-byte length then the bytes.
    @inlinable mutating func string(_ value: String) {
        var text = value
        text.withUTF8 { utf8 in
            uint16(UInt16(truncatingIfNeeded: utf8.count))
            bytes(UnsafeRawBufferPointer(utf8))
        }
    }
}

/// Number of bytes of a Variable Byte Integer (5.0 §1.5.5).
@inlinable func variableByteIntegerSize(_ value: Int) -> Int {
    value < 128 ? 1 : value < 16_384 ? 2 : value < 2_097_152 ? 3 : 4
}

extension MQTTByteBuffer {
    /// Reserves `size` bytes, lets `body` fill exactly that many through a cursor, and advances the writer.
    @inlinable mutating func write(size: Int, _ body: (inout MQTTWriteCursor) -> Void) {
        reserveWritable(size)
        let at = _writerIndex
        storage.withUnsafeMutableBytes { raw in
            var cursor = MQTTWriteCursor(raw.baseAddress! + at)  // storage is never empty (capacity >= 16)
            body(&cursor)
            assert(cursor.pointer - (raw.baseAddress! + at) == size, "encoder wrote a size other than it computed")
        }
        _writerIndex += size
    }
}
