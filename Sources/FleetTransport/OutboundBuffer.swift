import Glibc

/// A connection's pending outbound bytes: packets are appended during a lane turn and flushed once per turn, so a
/// batch of small MQTT packets costs one write(2) instead of one each.
///
/// Storage is one contiguous block, allocated on first use and reused: after it reaches the connection's working
/// size the steady path allocates nothing. Bytes are appended at `writeIndex` and flushed from `readIndex`; when
/// space runs out the unsent rest is moved to the front before growing. An idle client can give its block back
/// with `releaseStorage()` so tens of thousands of idle connections do not each hold a buffer.
public final class OutboundBuffer {
    private var storage: UnsafeMutableRawPointer?
    public private(set) var capacity = 0
    private var readIndex = 0
    private var writeIndex = 0
    /// First allocation size.
    public let initialCapacity: Int
    /// Appends that would grow past this are refused: the caller treats it as backpressure (a slow broker),
    /// instead of letting memory grow without bound.
    public let maximumCapacity: Int

    /// What a flush left behind.
    public enum FlushResult: Sendable, Equatable {
        /// Everything was written: EPOLLOUT interest can be dropped.
        case complete
        /// Bytes remain (the socket's send buffer is full): ask for EPOLLOUT and flush again when writable.
        case pending
    }

    public init(initialCapacity: Int = 4096, maximumCapacity: Int = 4 << 20) {
        precondition(initialCapacity > 0 && maximumCapacity >= initialCapacity, "bad OutboundBuffer capacities")
        self.initialCapacity = initialCapacity
        self.maximumCapacity = maximumCapacity
    }

    deinit { storage?.deallocate() }

    /// Bytes waiting to be written.
    public var count: Int { writeIndex - readIndex }
    public var isEmpty: Bool { writeIndex == readIndex }

    /// The pending bytes, for inspection (tests, TLS wrapping). Valid until the next mutation.
    public var readableBytes: UnsafeRawBufferPointer {
        guard let storage else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: storage + readIndex, count: count)
    }

    /// Copies `bytes` in; false (and nothing appended) if that would exceed `maximumCapacity`.
    @discardableResult
    public func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return true }
        guard let destination = reserve(bytes.count) else { return false }
        destination.copyMemory(from: source, byteCount: bytes.count)
        writeIndex += bytes.count
        return true
    }

    @discardableResult
    public func append(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Lets an encoder write straight into the buffer (no intermediate copy): `body` gets at least
    /// `minimumCapacity` writable bytes and returns how many it used (clamped to what it was given).
    /// False if the space cannot be had within `maximumCapacity`.
    @discardableResult
    public func writeInPlace(
        minimumCapacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int
    ) -> Bool {
        guard minimumCapacity >= 0, let destination = reserve(minimumCapacity) else { return false }
        let available = capacity - writeIndex
        let used = body(UnsafeMutableRawBufferPointer(start: destination, count: available))
        writeIndex += max(0, min(used, available))
        return true
    }

    /// Writes as much as the socket takes. A partial write means the send buffer just filled: return `.pending`
    /// at once rather than trying again, since the retry would almost always be an EAGAIN syscall wasted.
    @inline(__always)
    public func flush(to socket: TCPSocket) throws(SystemError) -> FlushResult {
        guard let storage, !isEmpty else { return .complete }
        let pending = UnsafeRawBufferPointer(start: storage + readIndex, count: count)
        switch try socket.write(from: pending) {
        case .wouldBlock:
            return .pending
        case .processed(let written):
            readIndex += written
            if readIndex == writeIndex {
                readIndex = 0
                writeIndex = 0
                return .complete
            }
            return .pending
        }
    }

    /// Records that the first `count` pending bytes were written by someone else (a `SendRing` completion).
    public func markWritten(_ count: Int) -> FlushResult {
        readIndex += max(0, min(count, self.count))
        guard readIndex == writeIndex else { return .pending }
        readIndex = 0
        writeIndex = 0
        return .complete
    }

    /// Drops pending bytes (the connection is gone) and keeps the storage for reuse.
    public func removeAll() {
        readIndex = 0
        writeIndex = 0
    }

    /// Frees the storage if nothing is pending (an idle connection); the next append allocates again.
    public func releaseStorage() {
        guard isEmpty, let storage else { return }
        storage.deallocate()
        self.storage = nil
        capacity = 0
        readIndex = 0
        writeIndex = 0
    }

    /// A pointer to `byteCount` free bytes at `writeIndex`, compacting or growing as needed; nil past the maximum.
    private func reserve(_ byteCount: Int) -> UnsafeMutableRawPointer? {
        if let storage, capacity - writeIndex >= byteCount { return storage + writeIndex }
        let pendingCount = count
        guard byteCount <= maximumCapacity - pendingCount else { return nil }
        if let storage, capacity - pendingCount >= byteCount {
            // Enough room once the already-written prefix is dropped: move the unsent rest to the front.
            if pendingCount > 0 { memmove(storage, storage + readIndex, pendingCount) }
            readIndex = 0
            writeIndex = pendingCount
            return storage + writeIndex
        }
        var newCapacity = max(capacity, initialCapacity)
        while newCapacity - pendingCount < byteCount { newCapacity *= 2 }
        newCapacity = min(newCapacity, maximumCapacity)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let storage {
            if pendingCount > 0 { grown.copyMemory(from: storage + readIndex, byteCount: pendingCount) }
            storage.deallocate()
        }
        storage = grown
        capacity = newCapacity
        readIndex = 0
        writeIndex = pendingCount
        return grown + writeIndex
    }
}
