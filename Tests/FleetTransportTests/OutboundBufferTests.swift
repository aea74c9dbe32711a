import FleetTransport
import Glibc
import Testing

@Suite("OutboundBuffer: batching, compaction, limits")
struct OutboundBufferTests {
    /// A connected non-blocking AF_UNIX stream pair: same read/write semantics as TCP for these tests.
    func socketPair() throws -> (TCPSocket, TCPSocket) {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0 else {
            throw SystemError(call: "socketpair", errno: errno)
        }
        return (TCPSocket(adopting: pair[0]), TCPSocket(adopting: pair[1]))
    }

    @Test("appended packets leave in one write, in order")
    func batchesInOrder() throws {
        let (writer, reader) = try socketPair()
        defer {
            try? writer.close()
            try? reader.close()
        }
        let buffer = OutboundBuffer(initialCapacity: 16)
        #expect(buffer.capacity == 0)  // nothing allocated before first use
        buffer.append([0xC0, 0x00])  // PINGREQ, MQTT 3.1.1 §3.12
        buffer.append([0x30, 0x03, 0x00, 0x01, 0x74])  // QoS 0 PUBLISH to "t", empty payload, §3.3
        #expect(buffer.count == 7)
        #expect(Array(buffer.readableBytes) == [0xC0, 0x00, 0x30, 0x03, 0x00, 0x01, 0x74])
        #expect(try buffer.flush(to: writer) == .complete)
        #expect(buffer.isEmpty)
        #expect(try buffer.flush(to: writer) == .complete)  // nothing pending: no syscall, still complete
        #expect(try readBytes(7, from: reader) == [0xC0, 0x00, 0x30, 0x03, 0x00, 0x01, 0x74])
    }

    @Test("growth doubles from the initial capacity and keeps pending bytes")
    func grows() {
        let buffer = OutboundBuffer(initialCapacity: 8, maximumCapacity: 64)
        buffer.append(Array(0..<6))
        #expect(buffer.capacity == 8)
        buffer.append(Array(6..<20))
        #expect(buffer.capacity == 32)
        #expect(Array(buffer.readableBytes) == Array(0..<20))
    }

    @Test("an append past the maximum is refused whole and the buffer is unchanged")
    func refusesPastMaximum() {
        let buffer = OutboundBuffer(initialCapacity: 8, maximumCapacity: 16)
        #expect(buffer.append(Array(repeating: 1, count: 10)))
        #expect(!buffer.append(Array(repeating: 2, count: 7)))
        #expect(Array(buffer.readableBytes) == Array(repeating: 1, count: 10))
        #expect(buffer.append(Array(repeating: 3, count: 6)))
        #expect(buffer.count == 16)
        #expect(!buffer.writeInPlace(minimumCapacity: 1) { _ in 1 })
    }

    @Test("writeInPlace lets an encoder write directly; the count it returns is clamped to the space given")
    func writesInPlace() {
        let buffer = OutboundBuffer(initialCapacity: 8, maximumCapacity: 64)
        #expect(buffer.writeInPlace(minimumCapacity: 4) { space in
            space.storeBytes(of: 0xE0, toByteOffset: 0, as: UInt8.self)  // DISCONNECT, MQTT 3.1.1 §3.14
            space.storeBytes(of: 0x00, toByteOffset: 1, as: UInt8.self)
            return 2
        })
        #expect(Array(buffer.readableBytes) == [0xE0, 0x00])
        #expect(buffer.writeInPlace(minimumCapacity: 1) { space in space.count + 100 })
        #expect(buffer.count == buffer.capacity)
    }

    @Test("after a partial flush, appending compacts the unsent rest to the front instead of growing")
    func compactsAfterPartialFlush() throws {
        let (writer, reader) = try socketPair()
        defer {
            try? writer.close()
            try? reader.close()
        }
        try writer.setOption(level: SOL_SOCKET, name: SO_SNDBUF, value: 4096)
        // Fill the socket so the next flush is partial.
        let filler = [UInt8](repeating: 0xAA, count: 1 << 20)
        while case .processed = try filler.withUnsafeBytes({ try writer.write(from: $0) }) {}
        // Far more than the small send buffer (a few KiB) can take in one write, so the flush is always partial.
        let payload = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let buffer = OutboundBuffer(initialCapacity: 65_536, maximumCapacity: 65_536)
        buffer.append(payload)
        #expect(try buffer.flush(to: writer) == .pending)
        #expect(buffer.count == payload.count)  // socket full: nothing went out
        // The reader takes a little at a time until some of the buffer has gone out, but not all of it.
        var sink = [UInt8](repeating: 0, count: 1024)
        for _ in 0..<10_000 where buffer.count == payload.count {
            _ = try sink.withUnsafeMutableBytes { try reader.read(into: $0) }
            _ = try buffer.flush(to: writer)
        }
        let sent = payload.count - buffer.count
        #expect(sent > 0)
        #expect(buffer.count > 0)  // a partial flush: the unsent rest sits after a consumed prefix
        let blockStart = try #require(buffer.readableBytes.baseAddress) - sent
        let extra = [UInt8](repeating: 0x55, count: 65_536 - buffer.count)
        #expect(buffer.append(extra))  // fits only because the sent prefix was dropped
        #expect(buffer.capacity == 65_536)
        #expect(buffer.readableBytes.baseAddress == blockStart)  // same block, moved to its front: no reallocation
        #expect(Array(buffer.readableBytes) == Array(payload[sent...]) + extra)
    }

    @Test("markWritten: bytes another writer sent leave from the front; pending until all are gone")
    func marksWritten() {
        let buffer = OutboundBuffer(initialCapacity: 16)
        buffer.append(Array(0..<10))
        #expect(buffer.markWritten(0) == .pending)  // a send that took nothing
        #expect(Array(buffer.readableBytes) == Array(0..<10))
        #expect(buffer.markWritten(4) == .pending)  // partial
        #expect(buffer.count == 6)
        #expect(Array(buffer.readableBytes) == Array(4..<10))
        buffer.append([10, 11])  // appended after a partial send: still behind the unsent rest
        #expect(Array(buffer.readableBytes) == Array(4..<12))
        #expect(buffer.markWritten(8) == .complete)
        #expect(buffer.isEmpty)
        #expect(buffer.readableBytes.count == 0)
        // A count past what is pending (never from a real send) empties the buffer and no more.
        buffer.append([1, 2, 3])
        #expect(buffer.markWritten(100) == .complete)
        #expect(buffer.isEmpty)
        buffer.append([7])
        #expect(Array(buffer.readableBytes) == [7])
    }

    @Test("releaseStorage frees an idle buffer and keeps a busy one")
    func releasesIdleStorage() {
        let buffer = OutboundBuffer(initialCapacity: 8)
        buffer.append([1, 2, 3])
        buffer.releaseStorage()
        #expect(buffer.capacity == 8)  // bytes pending: kept
        buffer.removeAll()
        buffer.releaseStorage()
        #expect(buffer.capacity == 0)
        buffer.append([4])
        #expect(Array(buffer.readableBytes) == [4])
    }

    @Test("with a pool, a block is lent while bytes wait and given back when a flush empties the buffer")
    func poolLendsWhileBytesWait() throws {
        let (writer, reader) = try socketPair()
        defer {
            try? writer.close()
            try? reader.close()
        }
        let pool = OutboundBlockPool(blockSize: 16, maximumFree: 4)
        let first = OutboundBuffer(pool: pool)
        let second = OutboundBuffer(pool: pool)
        #expect(first.capacity == 0 && pool.lent == 0 && pool.freeCount == 0)
        first.append([1, 2, 3])
        #expect(first.capacity == 16 && pool.lent == 1 && pool.freeCount == 0)
        #expect(try first.flush(to: writer) == .complete)
        #expect(first.capacity == 0 && pool.lent == 0 && pool.freeCount == 1)
        #expect(first.readableBytes.count == 0)
        second.append([4, 5])
        #expect(second.capacity == 16 && pool.lent == 1 && pool.freeCount == 0)  // the same block, no allocation
        #expect(second.markWritten(1) == .pending)
        #expect(Array(second.readableBytes) == [5])
        #expect(pool.lent == 1)  // one byte still waits: the block stays
        #expect(second.markWritten(1) == .complete)
        #expect(second.capacity == 0 && pool.lent == 0 && pool.freeCount == 1)
        first.append([6])
        first.removeAll()  // the connection went away: the block goes back too
        #expect(first.capacity == 0 && pool.lent == 0 && pool.freeCount == 1)
        #expect(try readBytes(3, from: reader) == [1, 2, 3])
    }

    @Test("with a pool, a buffer that grows past the block gives the block back and keeps its own larger one")
    func poolGrowthKeepsOwnBlock() throws {
        let (writer, reader) = try socketPair()
        defer {
            try? writer.close()
            try? reader.close()
        }
        let pool = OutboundBlockPool(blockSize: 8, maximumFree: 4)
        let buffer = OutboundBuffer(pool: pool, maximumCapacity: 64)
        buffer.append(Array(0..<6))
        buffer.append(Array(6..<20))
        #expect(buffer.capacity == 32 && pool.lent == 0 && pool.freeCount == 1)
        #expect(Array(buffer.readableBytes) == Array(0..<20))
        #expect(try buffer.flush(to: writer) == .complete)
        #expect(buffer.capacity == 32 && pool.lent == 0 && pool.freeCount == 1)  // its own: kept for the next turn
        buffer.releaseStorage()
        #expect(buffer.capacity == 0 && pool.freeCount == 1)  // freed, not pooled (not the pool's size)
        #expect(try readBytes(20, from: reader) == Array(0..<20))
    }

    @Test("a pool keeps at most maximumFree idle blocks; the rest are freed")
    func poolKeepsAtMostMaximumFree() {
        let pool = OutboundBlockPool(blockSize: 8, maximumFree: 2)
        let buffers = (0..<3).map { _ in OutboundBuffer(pool: pool) }
        for buffer in buffers { buffer.append([1]) }
        #expect(pool.lent == 3 && pool.freeCount == 0)
        for buffer in buffers { buffer.removeAll() }
        #expect(pool.lent == 0 && pool.freeCount == 2)
    }

    @Test("borrowBlocks gives up the buffer's own block and lends from the pool from then on")
    func borrowBlocksLater() {
        let pool = OutboundBlockPool(blockSize: 8, maximumFree: 2)
        let buffer = OutboundBuffer(initialCapacity: 8)
        buffer.append([1])
        buffer.borrowBlocks(from: pool)
        #expect(buffer.capacity == 0 && buffer.isEmpty && pool.freeCount == 0)
        buffer.append([2])
        #expect(pool.lent == 1)
        #expect(buffer.markWritten(1) == .complete)
        #expect(pool.lent == 0 && pool.freeCount == 1)
    }
}
