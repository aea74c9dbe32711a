import Glibc

/// A connection's pending outbound bytes: packets are appended during a lane turn and flushed once per turn, so a
/// batch of small MQTT packets costs one write(2) instead of one each.
///
/// Storage is one contiguous block, allocated on first use and reused: after it reaches the connection's working
/// size the steady path allocates nothing. Bytes are appended at `writeIndex` and flushed from `readIndex`; when
/// space runs out the unsent rest is moved to the front before growing. An idle client can give its block back
/// with `releaseStorage()` so tens of thousands of idle connections do not each hold a buffer.
///
/// With a `pool` (one per lane), a first-size block comes from the pool and goes back to it the moment a flush
/// leaves the buffer empty: a connection holds a block only while it has bytes waiting, so ten thousand
/// vehicles publishing every 10 s share the few blocks one turn needs instead of holding 2 KiB each, and the
/// steady path still allocates nothing (the pool hands the same blocks round). A block that had to grow past
/// the first size is the connection's own, kept as without a pool.
public final class OutboundBuffer {
    private var storage: UnsafeMutableRawPointer?
    /// Where first-size blocks come from and go back to; nil: the buffer keeps its block until `releaseStorage`.
    public private(set) var pool: OutboundBlockPool?
    // Sizes and indexes in 32 bits (a buffer never exceeds `maximumCapacity`, checked to fit): every client has
    // one of these objects, 56 bytes with malloc's header instead of 72 (a 64-byte block instead of an 80-byte one).
    private var capacity32: Int32 = 0
    private var readIndex32: Int32 = 0
    private var writeIndex32: Int32 = 0
    private let initialCapacity32: Int32
    private let maximumCapacity32: Int32
    public private(set) var capacity: Int {
        get { Int(capacity32) }
        set { capacity32 = Int32(truncatingIfNeeded: newValue) }
    }
    private var readIndex: Int {
        get { Int(readIndex32) }
        set { readIndex32 = Int32(truncatingIfNeeded: newValue) }
    }
    private var writeIndex: Int {
        get { Int(writeIndex32) }
        set { writeIndex32 = Int32(truncatingIfNeeded: newValue) }
    }
    /// First allocation size.
    public var initialCapacity: Int { Int(initialCapacity32) }
    /// Appends that would grow past this are refused: the caller treats it as backpressure (a slow broker),
    /// instead of letting memory grow without bound.
    public var maximumCapacity: Int { Int(maximumCapacity32) }

    /// What a flush left behind.
    public enum FlushResult: Sendable, Equatable {
        /// Everything was written: EPOLLOUT interest can be dropped.
        case complete
        /// Bytes remain (the socket's send buffer is full): ask for EPOLLOUT and flush again when writable.
        case pending
    }

    public init(initialCapacity: Int = 4096, maximumCapacity: Int = 4 << 20) {
        precondition(initialCapacity > 0 && maximumCapacity >= initialCapacity, "bad OutboundBuffer capacities")
        precondition(maximumCapacity <= Int(Int32.max), "OutboundBuffer capacities are kept in 32 bits")
        self.initialCapacity32 = Int32(initialCapacity)
        self.maximumCapacity32 = Int32(maximumCapacity)
        self.pool = nil
    }

    /// A buffer whose first-size blocks (`pool.blockSize`, its initial capacity) are lent by `pool`.
    public convenience init(pool: OutboundBlockPool, maximumCapacity: Int = 4 << 20) {
        self.init(initialCapacity: pool.blockSize, maximumCapacity: maximumCapacity)
        self.pool = pool
    }

    /// From now on first-size blocks come from `pool` (whose block size must be this buffer's initial
    /// capacity); a block held now is given up first (pending bytes are dropped: call it before first use).
    public func borrowBlocks(from pool: OutboundBlockPool) {
        precondition(pool.blockSize == initialCapacity, "OutboundBlockPool block size differs from the initial capacity")
        removeAll()
        releaseStorage()
        self.pool = pool
    }

    deinit { if let storage { dispose(storage) } }

    /// Whether the storage is a block lent by the pool (it goes back when the buffer empties).
    @inline(__always) private var holdsPoolBlock: Bool { pool != nil && capacity == initialCapacity }

    /// Gives a block back to the pool it came from, or to the allocator.
    @inline(__always) private func dispose(_ block: UnsafeMutableRawPointer) {
        if let pool, capacity == initialCapacity { pool.give(block) } else { block.deallocate() }
    }

    /// Emptied by a flush: a pool block goes back at once.
    @inline(__always) private func emptied() {
        readIndex = 0
        writeIndex = 0
        if holdsPoolBlock, let storage, let pool {
            pool.give(storage)
            self.storage = nil
            capacity = 0
        }
    }

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
        guard let storage, !isEmpty else {
            emptied()  // a pool block taken for nothing (an encoder that wrote no byte) goes back too
            return .complete
        }
        let pending = UnsafeRawBufferPointer(start: storage + readIndex, count: count)
        switch try socket.write(from: pending) {
        case .wouldBlock:
            return .pending
        case .processed(let written):
            readIndex += written
            if readIndex == writeIndex {
                emptied()
                return .complete
            }
            return .pending
        }
    }

    /// Records that the first `count` pending bytes were written by someone else (a `SendRing` completion).
    public func markWritten(_ count: Int) -> FlushResult {
        readIndex += max(0, min(count, self.count))
        guard readIndex == writeIndex else { return .pending }
        emptied()
        return .complete
    }

    /// Drops pending bytes (the connection is gone) and keeps the storage for reuse (a pool block goes back).
    public func removeAll() {
        emptied()
    }

    /// Frees the storage if nothing is pending (an idle connection); the next append allocates again.
    public func releaseStorage() {
        guard isEmpty, let storage else { return }
        dispose(storage)
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
        let grown = storage == nil && newCapacity == initialCapacity && pool != nil
            ? pool.unsafelyUnwrapped.take()
            : UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let storage {
            if pendingCount > 0 { grown.copyMemory(from: storage + readIndex, byteCount: pendingCount) }
            dispose(storage)
        }
        storage = grown
        capacity = newCapacity
        readIndex = 0
        writeIndex = pendingCount
        return grown + writeIndex
    }
}

/// First-size blocks of one lane's outbound buffers (`OutboundBuffer.init(pool:)`), lent while a connection has
/// bytes waiting and handed back when its flush empties it. At most `maximumFree` idle blocks are kept; past that a
/// returned block is freed, so a burst (every connection of a lane written at once) does not stay resident.
/// Used by one thread at a time (the lane's), like the buffers.
public final class OutboundBlockPool {
    public let blockSize: Int
    public let maximumFree: Int
    private var free: [UnsafeMutableRawPointer] = []
    /// Blocks lent and not yet given back.
    public private(set) var lent = 0

    public init(blockSize: Int, maximumFree: Int) {
        precondition(blockSize > 0 && maximumFree >= 0, "bad OutboundBlockPool sizes")
        self.blockSize = blockSize
        self.maximumFree = maximumFree
        free.reserveCapacity(maximumFree)
    }

    deinit { for block in free { block.deallocate() } }

    /// Idle blocks held for the next loans.
    public var freeCount: Int { free.count }

    /// A block of `blockSize` bytes: an idle one, or a new one when none is idle.
    func take() -> UnsafeMutableRawPointer {
        lent += 1
        return free.popLast() ?? .allocate(byteCount: blockSize, alignment: 16)
    }

    /// Takes a block back: kept for the next loan, or freed when `maximumFree` are idle already.
    func give(_ block: UnsafeMutableRawPointer) {
        lent -= 1
        if free.count < maximumFree { free.append(block) } else { block.deallocate() }
    }
}
