import MQTTCodec
import Testing
@testable import MQTTSession

@Suite("MQTTOutboundWindow: compaction of freed slots and stored copies")
struct MQTTOutboundWindowTests {
    static func message(_ packetID: UInt16, storedOffset: Int = 0, storedCount: Int = 0) -> MQTTOutboundMessage {
        MQTTOutboundMessage(awaiting: .pubAck, packetID: packetID, qos: .atLeastOnce, timeoutReported: false,
                            storedOffset: storedOffset, storedCount: storedCount, intendedAt: 0, sentAt: 0,
                            stageSentAt: 0, tag: UInt64(packetID))
    }

    @Test("compacts exactly when at most a quarter of the array is live", arguments: [
        (live: 0, capacity: 4, compacts: true),
        (live: 1, capacity: 4, compacts: true),
        (live: 2, capacity: 4, compacts: false),
        (live: 8, capacity: 32, compacts: true),
        (live: 9, capacity: 32, compacts: false),
        (live: 16, capacity: 32, compacts: false),
        (live: 32, capacity: 32, compacts: false),
    ])
    func compactionRule(live: Int, capacity: Int, compacts: Bool) {
        #expect(MQTTOutboundWindow.compacts(live: live, capacity: capacity) == compacts)
    }

    /// Fills the slot array to its capacity (at least 8), frees all but `live` from the head, appends one.
    static func fillFreeAppend(keeping live: (Int) -> Int) -> (window: MQTTOutboundWindow, capacity: Int, live: Int) {
        var window = MQTTOutboundWindow()
        window.slots.reserveCapacity(8)
        var packetID: UInt16 = 1
        while window.slots.count < window.slots.capacity {
            window.append(message(packetID), deadline: 100)
            packetID += 1
        }
        let capacity = window.slots.capacity
        let kept = live(capacity)
        for index in 0..<(capacity - kept) { window.free(at: index, deadline: 100) }
        window.append(message(packetID), deadline: 100)
        return (window, capacity, kept)
    }

    @Test("a full slot array with a quarter live is compacted in place: no growth, the head back at 0")
    func compactsAtAQuarter() {
        let (window, capacity, live) = Self.fillFreeAppend { $0 / 4 }
        #expect(window.slots.capacity == capacity)
        #expect(window.head == 0)
        #expect(window.slots.count == live + 1)
        #expect(window.count == live + 1)
        // The live slots kept their order, the new one last.
        #expect(window.slots.map(\.packetID) == (UInt16(capacity - live + 1)...UInt16(capacity + 1)).map { $0 })
    }

    @Test("a full slot array with more than a quarter live grows instead, the freed head left in place")
    func growsAboveAQuarter() {
        let (window, capacity, live) = Self.fillFreeAppend { $0 / 4 + 1 }
        #expect(window.slots.capacity > capacity)
        #expect(window.head == capacity - live)
        #expect(window.slots.count == capacity + 1)
        #expect(window.count == live + 1)
        #expect(window.index(of: UInt16(capacity - live + 1)) == capacity - live)
        #expect(window.index(of: UInt16(capacity - live)) == nil)
    }

    @Test("stored copies: compacted when the live bytes fill at most a quarter, else the array grows")
    func storedBytesCompaction() {
        for extraLive in [0, 1] {
            var window = MQTTOutboundWindow()
            window.storedBytes.reserveCapacity(64)
            let capacity = window.storedBytes.capacity
            let chunk = capacity / 8  // capacity is a multiple of 8 here: 64 bytes or more from malloc
            #expect(capacity % 8 == 0)
            var offsets: [Int] = []
            for index in 0..<8 {
                let bytes = [UInt8](repeating: UInt8(index), count: chunk)
                offsets.append(bytes.withUnsafeBytes { window.store($0) })
                window.slots.append(Self.message(UInt16(index + 1), storedOffset: offsets[index], storedCount: chunk))
                window.count += 1
            }
            #expect(window.storedBytes.count == capacity)
            // Free the oldest 7 (or 6): one (two) chunks live, then one more chunk is stored.
            let freed = 7 - extraLive
            for index in 0..<freed { window.free(at: index, deadline: 0) }
            #expect(window.storedStart == freed * chunk)
            let next = [UInt8](repeating: 0xEE, count: chunk)
            let offset = next.withUnsafeBytes { window.store($0) }
            let live = (8 - freed) * chunk + chunk
            if live * 4 <= capacity {
                #expect(extraLive == 0)
                #expect(window.storedStart == 0)
                #expect(offset == (8 - freed) * chunk)
                #expect(window.storedBytes.capacity == capacity)
                #expect(window.slots[freed].storedOffset == 0)
            } else {
                #expect(extraLive == 1)
                #expect(window.storedStart == freed * chunk)
                #expect(offset == capacity)
                #expect(window.storedBytes.capacity > capacity)
                #expect(window.slots[freed].storedOffset == freed * chunk)
            }
            // Either way the live copies are intact.
            for index in freed..<8 {
                let slot = window.slots[index]
                #expect(Array(window.storedBytes[slot.storedOffset..<(slot.storedOffset + chunk)])
                        == [UInt8](repeating: UInt8(index), count: chunk))
            }
            #expect(Array(window.storedBytes[offset..<(offset + chunk)]) == next)
        }
    }

    @Test("a window of 32 refilled in halves for 1,000 rounds: every PUBACK matches, the arrays stay under 8 windows")
    func refillInHalves() {
        var harness = Harness(MQTTSessionSettings(version: .v3_1_1, inFlightWindow: 32))
        harness.connected(connAck: connAckV3)
        var nextID: UInt16 = 1
        var oldest: UInt16 = 1
        var acknowledged = 0
        var largestSlots = 0
        var largestStored = 0
        for round in 0..<1_000 {
            while harness.session.inFlightCount < 32 {
                #expect(harness.publish("t/a", [UInt8](repeating: 7, count: 64), qos: .atLeastOnce, at: UInt64(round))
                        == .sent(packetID: nextID))
                nextID = nextID == 65_535 ? 1 : nextID + 1
            }
            _ = harness.sent()
            var acks: [UInt8] = []
            for _ in 0..<16 {
                acks += [0x40, 0x02, UInt8(oldest >> 8), UInt8(oldest & 0xFF)]
                oldest = oldest == 65_535 ? 1 : oldest + 1
            }
            harness.feed(acks, at: UInt64(round))
            for event in harness.takeEvents() {
                if case .publishAcknowledged = event { acknowledged += 1 } else { Issue.record("unexpected \(event)") }
            }
            largestSlots = max(largestSlots, harness.session.outbound.slots.capacity)
            largestStored = max(largestStored, harness.session.outbound.storedBytes.capacity)
        }
        #expect(acknowledged == 16_000)
        #expect(harness.session.inFlightCount == 16)
        #expect(largestSlots < 8 * 32)
        // 32 copies of 73 bytes (fixed header 2, topic 2 + 3, packet id 2, payload 64) live at most.
        #expect(largestStored < 8 * 32 * 73)
    }
}
