/// Growable byte storage with a reader and a writer index. Encoders append at the writer index; the decoder
/// reads from the reader index. `clear()` and `discardReadBytes()` keep the capacity, so a warm buffer is
/// reused with no allocation.
public struct MQTTByteBuffer: Sendable {
    /// Backing store; its count is the capacity (bytes past `writerIndex` are scratch).
    @usableFromInline var storage: [UInt8]
    /// First unread byte.
    @usableFromInline var _readerIndex: Int
    /// One past the last written byte.
    @usableFromInline var _writerIndex: Int

    /// Offset of the first unread byte in the storage.
    @inlinable public var readerIndex: Int { _readerIndex }
    /// Offset one past the last written byte.
    @inlinable public var writerIndex: Int { _writerIndex }

    public init(capacity: Int = 4096) {
        storage = [UInt8](repeating: 0, count: max(capacity, 16))
        _readerIndex = 0
        _writerIndex = 0
    }

    public init(bytes: [UInt8]) {
        self.init(capacity: bytes.count)
        writeBytes(bytes)
    }

    @inlinable public var capacity: Int { storage.count }
    @inlinable public var readableCount: Int { writerIndex - readerIndex }
    @inlinable public var isEmpty: Bool { _writerIndex == readerIndex }
    @inlinable public var writableCount: Int { storage.count - writerIndex }

    /// Forgets all content, keeping the capacity.
    @inlinable public mutating func clear() {
        _readerIndex = 0
        _writerIndex = 0
    }

    /// Makes room for at least `count` more bytes after the writer index, first by moving unread bytes to the
    /// front, then by growing (doubling) the storage.
    @inlinable public mutating func reserveWritable(_ count: Int) {
        if writableCount >= count { return }
        growOrCompact(count)
    }

    @usableFromInline mutating func growOrCompact(_ count: Int) {
        discardReadBytes()
        if writableCount >= count { return }
        let needed = writerIndex + count
        var newCapacity = storage.count * 2
        while newCapacity < needed { newCapacity *= 2 }
        storage.append(contentsOf: repeatElement(0, count: newCapacity - storage.count))
    }

    /// Moves the unread bytes to the front of the storage (no allocation).
    public mutating func discardReadBytes() {
        if _readerIndex == 0 { return }
        let count = readableCount
        if count > 0 {
            let from = readerIndex
            storage.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                (base).copyMemory(from: base + from, byteCount: count)
            }
        }
        _readerIndex = 0
        _writerIndex = count
    }

    /// Marks `count` readable bytes as read. Clamped to what is readable.
    @inlinable public mutating func moveReaderIndex(forwardBy count: Int) {
        _readerIndex += min(max(count, 0), readableCount)
        if _readerIndex == writerIndex {
            _readerIndex = 0
            _writerIndex = 0
        }
    }

    // MARK: Writing

    @inlinable public mutating func writeByte(_ byte: UInt8) {
        reserveWritable(1)
        storage[writerIndex] = byte
        _writerIndex += 1
    }

    @inlinable public mutating func writeBytes(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        reserveWritable(bytes.count)
        let at = writerIndex
        storage.withUnsafeMutableBytes { raw in
            UnsafeMutableRawBufferPointer(rebasing: raw[at..<(at + bytes.count)]).copyMemory(from: bytes)
        }
        _writerIndex += bytes.count
    }

    @inlinable public mutating func writeBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { writeBytes($0) }
    }

    /// Lets `body` write into at least `minimumWritableBytes` of free space; `body` returns how many bytes it
    /// wrote (e.g. the result of `read(2)`), which the writer index then advances by.
    @inlinable public mutating func writeWithUnsafeMutableBytes(
        minimumWritableBytes: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Int
    ) rethrows -> Int {
        reserveWritable(minimumWritableBytes)
        let at = writerIndex
        let written = try storage.withUnsafeMutableBytes { (raw) throws -> Int in
            try body(UnsafeMutableRawBufferPointer(rebasing: raw[at...]))
        }
        _writerIndex += min(max(written, 0), storage.count - at)
        return written
    }

    // MARK: Reading

    /// Gives `body` the readable bytes (from the reader to the writer index).
    @inlinable public func withUnsafeReadableBytes<R>(
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        let range = readerIndex..<writerIndex
        return try storage.withUnsafeBytes { (raw) throws -> R in
            try body(UnsafeRawBufferPointer(rebasing: raw[range]))
        }
    }

    /// Gives `body` the bytes at absolute storage offsets `range` (e.g. a range from an `MQTTPacketView`).
    /// The range is clamped to the storage: bytes
    /// already read stay there until the next write, so a consumed packet's view can still be read.
    @inlinable public func withUnsafeBytes<R>(
        in range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        let lower = min(max(range.lowerBound, 0), storage.count)
        let upper = min(max(range.upperBound, lower), storage.count)
        return try storage.withUnsafeBytes { (raw) throws -> R in
            try body(UnsafeRawBufferPointer(rebasing: raw[lower..<upper]))
        }
    }

    /// A copy of the readable bytes (allocates; for tests and rare paths).
    public var readableBytes: [UInt8] { Array(storage[readerIndex..<writerIndex]) }

    /// A copy of the bytes at absolute offsets `range`, clamped to the storage.
    public func bytes(in range: Range<Int>) -> [UInt8] {
        let lower = min(max(range.lowerBound, 0), storage.count)
        let upper = min(max(range.upperBound, lower), storage.count)
        return Array(storage[lower..<upper])
    }
}
