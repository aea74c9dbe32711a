import MQTTCodec

/// One outbound QoS 1/2 message awaiting its acknowledgement.
struct MQTTOutboundMessage {
    /// The acknowledgement awaited: `.pubAck`, `.pubRec` or `.pubComp`; nil once the slot is free.
    var awaiting: MQTTAckKind?
    var packetID: UInt16
    var qos: MQTTQoS
    /// The deadline was reported (policy `.keepWaiting`): it no longer counts for `nextDeadline`.
    var timeoutReported: Bool
    /// Where the PUBLISH copy kept for retransmission sits in `MQTTOutboundWindow.storedBytes`.
    var storedOffset: Int
    var storedCount: Int
    var intendedAt: UInt64
    /// First write of the PUBLISH (kept across retransmission, so latency from the actual send is honest).
    var sentAt: UInt64
    /// Write of the packet whose acknowledgement is awaited (PUBLISH, its retransmission, or PUBREL): the
    /// deadline counts from here.
    var stageSentAt: UInt64
    var tag: UInt64
}

/// Slot arrays of emptied in-flight windows, lent to the windows of the sessions that share it (one engine lane's:
/// used only on that lane's queue, hence `@unchecked Sendable`). A window takes an array when its first message
/// of a burst goes in flight and gives it back when its last is acknowledged, so a vehicle publishing every 10 s
/// holds none between its messages: its own kept array (one 56-byte slot and the array's header, 88 bytes, and a
/// heap block) cost every idle publisher as much. Taking and giving move an array's storage in and out of a
/// reserved array: no allocation once the pool holds what the traffic needs.
public final class MQTTWindowStoragePool: @unchecked Sendable {
    /// Idle arrays kept; further ones given back are freed.
    public let maximumFree: Int
    private var free: [[MQTTOutboundMessage]] = []

    public init(maximumFree: Int) {
        precondition(maximumFree >= 0, "MQTTWindowStoragePool needs maximumFree >= 0")
        self.maximumFree = maximumFree
        free.reserveCapacity(maximumFree)
    }

    /// Idle arrays held for the next windows.
    public var freeCount: Int { free.count }

    /// An idle array (empty, with capacity), or an empty one without storage when none is idle.
    @inline(__always)
    func take() -> [MQTTOutboundMessage] { free.popLast() ?? [] }

    /// Takes `slots`' storage (emptied) back, or frees it when `maximumFree` are idle; `slots` is left without.
    @inline(__always)
    func give(_ slots: inout [MQTTOutboundMessage]) {
        var taken: [MQTTOutboundMessage] = []
        swap(&taken, &slots)
        guard taken.capacity > 0, free.count < maximumFree else { return }
        taken.removeAll(keepingCapacity: true)
        free.append(taken)
    }
}

/// Outbound QoS 1/2 messages in send order, plus the PUBLISH bytes kept for retransmission. Empty and
/// unallocated until the first QoS 1/2 publish. Acknowledgements usually arrive in send order, so lookups
/// scan from the head and usually stop at the first slot; a slot freed out of order stays as a hole
/// until the slots before it are freed (or the array is compacted when it is full).
struct MQTTOutboundWindow {
    var slots: [MQTTOutboundMessage] = []
    /// First slot that may be in use.
    var head = 0
    /// Messages in flight (slots in use).
    var count = 0
    /// PUBLISH copies in slot order; bytes before `storedStart` belong to freed messages.
    var storedBytes: [UInt8] = []
    var storedStart = 0
    /// Where the slot array comes from and goes back to while the window is empty (nil: it keeps its own).
    var storagePool: MQTTWindowStoragePool?
    /// Earliest unreported deadline among the slots, valid when `deadlineIsCurrent`.
    var cachedDeadline: UInt64 = .max
    /// Last, so a session's 1-byte fields after the window fill its padding.
    var deadlineIsCurrent = true

    var isEmpty: Bool { count == 0 }

    /// Whether a full array (slots or stored bytes) is compacted rather than grown: only when at most a quarter
    /// of it is live. Compacting whenever there was a hole moved the live half of the array at every refill of a
    /// window refilled in halves (the array stayed as large as the window); growing until the live part is a
    /// quarter makes a compaction rare (at most one per three arrays' worth of appends) and bounds the array at
    /// 4 to 8 times the live part.
    @inline(__always) static func compacts(live: Int, capacity: Int) -> Bool { live * 4 <= capacity }

    /// Index of the slot awaiting an acknowledgement for `packetID`.
    @inline(__always) func index(of packetID: UInt16) -> Int? {
        var index = head
        while index < slots.count {
            if slots[index].packetID == packetID, slots[index].awaiting != nil { return index }
            index += 1
        }
        return nil
    }

    /// Whether `packetID` is in use by an in-flight message.
    func contains(_ packetID: UInt16) -> Bool { index(of: packetID) != nil }

    mutating func append(_ message: MQTTOutboundMessage, deadline: UInt64) {
        if slots.capacity == 0, let storagePool { slots = storagePool.take() }
        if slots.count == slots.capacity, Self.compacts(live: count, capacity: slots.capacity) {
            // Full array, at least 3/4 of it freed slots: drop them in place (no allocation).
            slots.removeAll { $0.awaiting == nil }
            head = 0
        }
        slots.append(message)
        count += 1
        if deadlineIsCurrent, deadline < cachedDeadline { cachedDeadline = deadline }
    }

    /// Frees slot `index`; releases stored bytes no longer needed by any message before them.
    mutating func free(at index: Int, deadline: UInt64) {
        slots[index].awaiting = nil
        dropStoredCopy(at: index)
        count -= 1
        if deadline <= cachedDeadline { deadlineIsCurrent = false }
        if count == 0 {
            // Emptied in place: the storage stays for the next messages, or goes back to the pool.
            if let storagePool { storagePool.give(&slots) } else { slots.removeLast(slots.count) }
            head = 0
            storedBytes.removeLast(storedBytes.count)
            storedStart = 0
            cachedDeadline = .max
            deadlineIsCurrent = true
            return
        }
        while head < slots.count, slots[head].awaiting == nil { head += 1 }
    }

    /// Forgets the retransmission copy of slot `index` (after PUBREC, or when the slot is freed).
    mutating func dropStoredCopy(at index: Int) {
        guard slots[index].storedCount > 0 else { return }
        let offset = slots[index].storedOffset
        slots[index].storedCount = 0
        guard offset == storedStart else { return }
        // The oldest copy went: the next live copy (copies are in slot order) marks the new start.
        var next = index + 1
        while next < slots.count {
            if slots[next].awaiting != nil, slots[next].storedCount > 0 {
                storedStart = slots[next].storedOffset
                return
            }
            next += 1
        }
        storedBytes.removeLast(storedBytes.count)
        storedStart = 0
    }

    /// Appends a copy of `bytes`, returning its offset. Compacts in place before the array would grow.
    mutating func store(_ bytes: UnsafeRawBufferPointer) -> Int {
        let offset = reserveStored(bytes.count)
        bytes.withMemoryRebound(to: UInt8.self) { storedBytes.append(contentsOf: $0) }  // one memcpy
        return offset
    }

    /// Compacts the stored copies if `count` more bytes would otherwise make the array grow and the live copies
    /// with them fill at most a quarter of it (`compacts`); returns the offset the next appended byte gets.
    mutating func reserveStored(_ count: Int) -> Int {
        if storedStart > 0, storedBytes.capacity - storedBytes.count < count,
           Self.compacts(live: storedBytes.count - storedStart + count, capacity: storedBytes.capacity) {
            let shift = storedStart
            storedBytes.removeSubrange(0..<shift)
            storedStart = 0
            for index in head..<slots.count where slots[index].storedCount > 0 {
                slots[index].storedOffset -= shift
            }
        }
        return storedBytes.count
    }

    /// Appends a PUBLISH (DUP=0) built from parts, returning its offset and size: the retransmission copy
    /// of a message that was sent with a topic alias.
    mutating func storePublish(
        topic: UnsafeRawBufferPointer, packetID: UInt16, qos: MQTTQoS, retain: Bool, version: MQTTProtocolVersion,
        properties: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer
    ) -> (offset: Int, count: Int) {
        var body = 2 + topic.count + (qos == .atMostOnce ? 0 : 2) + payload.count
        if version.hasProperties { body += variableByteIntegerBytes(properties.count).count + properties.count }
        let lengthBytes = variableByteIntegerBytes(body)
        let size = 1 + lengthBytes.count + body
        let offset = reserveStored(size)
        storedBytes.append(0x30 | qos.rawValue << 1 | (retain ? 1 : 0))  // §3.3.1 fixed header
        storedBytes.append(contentsOf: lengthBytes)  // §2.1.4 remaining length
        storedBytes.append(UInt8(truncatingIfNeeded: topic.count >> 8))  // §3.3.2.1 topic name
        storedBytes.append(UInt8(truncatingIfNeeded: topic.count))
        topic.withMemoryRebound(to: UInt8.self) { storedBytes.append(contentsOf: $0) }
        if qos != .atMostOnce {  // §3.3.2.2 packet identifier
            storedBytes.append(UInt8(truncatingIfNeeded: packetID >> 8))
            storedBytes.append(UInt8(truncatingIfNeeded: packetID))
        }
        if version.hasProperties {  // 5.0 §3.3.2.3 properties
            storedBytes.append(contentsOf: variableByteIntegerBytes(properties.count))
            properties.withMemoryRebound(to: UInt8.self) { storedBytes.append(contentsOf: $0) }
        }
        payload.withMemoryRebound(to: UInt8.self) { storedBytes.append(contentsOf: $0) }  // §3.3.3
        return (offset, size)
    }

    /// Moves slot `index` to its next step (PUBREC received, PUBREL written at `now`).
    mutating func advance(at index: Int, to kind: MQTTAckKind, now: UInt64, oldDeadline: UInt64, newDeadline: UInt64) {
        slots[index].awaiting = kind
        slots[index].stageSentAt = now
        slots[index].timeoutReported = false
        dropStoredCopy(at: index)
        if oldDeadline <= cachedDeadline { deadlineIsCurrent = false }
        if deadlineIsCurrent, newDeadline < cachedDeadline { cachedDeadline = newDeadline }
    }

    /// Earliest deadline among unreported slots (recomputed only after the cached one was freed).
    mutating func earliestDeadline(_ timeouts: MQTTAckTimeouts) -> UInt64 {
        if deadlineIsCurrent { return cachedDeadline }
        var earliest = UInt64.max
        var index = head
        while index < slots.count {
            let slot = slots[index]
            if let kind = slot.awaiting, !slot.timeoutReported {
                earliest = min(earliest, slot.stageSentAt &+ timeouts.timeout(for: kind))
            }
            index += 1
        }
        cachedDeadline = earliest
        deadlineIsCurrent = true
        return earliest
    }
}

/// Variable Byte Integer (5.0 §1.5.5) of a length already bounded by the codec (rare path: allocates).
func variableByteIntegerBytes(_ value: Int) -> [UInt8] {
    var remaining = min(max(value, 0), 268_435_455)
    var bytes: [UInt8] = []
    repeat {
        var digit = UInt8(truncatingIfNeeded: remaining & 0x7F)
        remaining >>= 7
        if remaining > 0 { digit |= 0x80 }
        bytes.append(digit)
    } while remaining > 0
    return bytes
}
