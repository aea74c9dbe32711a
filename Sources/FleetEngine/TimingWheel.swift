/// One hierarchical timing wheel per lane: every keepalive, publish slot, ack deadline, reconnect delay and
/// connect timeout of the lane's clients, driven by one tick.
///
/// There is no timer object: each (client index, timer kind) owns exactly one preallocated node in flat arrays,
/// linked into intrusive doubly-linked bucket lists. Scheduling an already scheduled timer moves it, cancelling
/// unlinks it; both are O(1) and allocation-free. Because a (client, kind) can only ever be in one place, no
/// generation counter is needed to ignore stale entries: there are none.
///
/// Layout (the idea of hashed hierarchical wheels, Varghese and Lauck 1987): 6 levels of 64 slots; level `l`
/// slots are 64^l ticks wide, so the wheel spans 2^36 ticks (795 days at 1 ms). A deadline further away is
/// parked in the farthest slot and re-inserted when that slot comes due, so any deadline works. A 64-bit
/// occupancy mask per level finds the next non-empty slot without walking empty ticks, so an idle lane can ask
/// for `nextExpiration` and sleep until then.
///
/// Timing: deadlines are rounded *up* to a tick, so an entry never fires before its deadline and at most one
/// tick after it (plus the caller's own delay in calling `advance`). A deadline at or before the last tick that
/// was advanced to fires at the next tick. Entries due in one `advance` are handed out in deadline order
/// (nanosecond deadline, then client, then kind).
///
/// Use: `advance(to: now)` moves every due entry into a ready list; `popExpired()` hands them out one by one.
/// Between pops the caller may schedule and cancel freely (including the entry just popped); entries
/// scheduled during the drain are due at the next tick at the earliest, so one turn's work is bounded.
public struct TimingWheel: Sendable {
    /// An entry handed out by `popExpired`.
    public struct Expired: Sendable, Equatable {
        public var client: Int
        public var kind: Int
        /// The deadline it was scheduled for (monotonic ns).
        public var deadline: UInt64

        public init(client: Int, kind: Int, deadline: UInt64) {
            self.client = client
            self.kind = kind
            self.deadline = deadline
        }
    }

    static let slotBits: UInt64 = 6
    static let slotsPerLevel = 64
    static let levelCount = 6
    /// Deadlines at most this many ticks away are placed exactly; further ones are parked and re-inserted.
    /// Half the top level's range keeps a parked slot from aliasing the current one.
    static let maxPlacementTicks: UInt64 = 1 << 35

    public let tickNanoseconds: UInt64
    public let origin: UInt64
    public let clientCapacity: Int
    public let kindsPerClient: Int

    /// Every tick up to and including this one has been processed.
    public private(set) var elapsedTicks: UInt64 = 0
    /// Timers currently scheduled (in buckets or waiting in the ready list).
    public private(set) var count: Int = 0

    // Per node (node = client * kindsPerClient + kind).
    private var deadlines: [UInt64]
    private var whenTicks: [UInt64]
    private var nextNode: [Int32]
    private var previousNode: [Int32]
    /// -1: not scheduled; 0..<384: bucket level * 64 + slot; `readyLocation`: in the ready list.
    private var location: [Int32]

    private var bucketHeads: [Int32]
    private var occupancy: [UInt64]
    private var readyHead: Int32 = -1
    private var readyTail: Int32 = -1
    /// Entries in the ready list (due, not yet popped).
    public private(set) var readyCount: Int = 0
    /// The answer of `nextExpiration` for the buckets (a tick; .max: none), valid while `earliestIsCurrent`.
    /// Working it out walks the earliest higher-level slot, which in a fleet that only receives holds every
    /// client's keep-alive deadline; the lane asks every turn, so the answer is kept and only worked out again
    /// after the entry that gave it may have left: it fired, was moved or cancelled, or a parked entry moved.
    /// Scheduling only lowers it (`insert`), and cascading a slot down leaves every entry's tick as it was.
    private var earliestTick: UInt64 = .max
    private var earliestIsCurrent = true
    /// Times the answer was worked out by walking (tests check the walk is not repeated needlessly).
    public private(set) var earliestRecomputations = 0

    private static let none: Int32 = -1
    private static let readyLocation = Int32(levelCount * slotsPerLevel)

    /// - Parameters:
    ///   - clientCapacity: client indices are `0..<clientCapacity`.
    ///   - kindsPerClient: timer kinds are `0..<kindsPerClient` (e.g. keepalive, publish, ack, reconnect).
    ///   - tickNanoseconds: resolution (1 ms = 1_000_000); must be > 0.
    ///   - origin: monotonic time of tick 0 (usually "now" when the lane starts).
    public init(clientCapacity: Int, kindsPerClient: Int, tickNanoseconds: UInt64, origin: UInt64) {
        precondition(clientCapacity >= 0 && kindsPerClient > 0, "TimingWheel needs kindsPerClient > 0")
        precondition(tickNanoseconds > 0, "TimingWheel needs a tick > 0 ns")
        let nodes = clientCapacity * kindsPerClient
        precondition(nodes < Int(Int32.max), "TimingWheel: too many timers for 32-bit links")
        self.tickNanoseconds = tickNanoseconds
        self.origin = origin
        self.clientCapacity = clientCapacity
        self.kindsPerClient = kindsPerClient
        deadlines = Array(repeating: 0, count: nodes)
        whenTicks = Array(repeating: 0, count: nodes)
        nextNode = Array(repeating: Self.none, count: nodes)
        previousNode = Array(repeating: Self.none, count: nodes)
        location = Array(repeating: Self.none, count: nodes)
        bucketHeads = Array(repeating: Self.none, count: Self.levelCount * Self.slotsPerLevel)
        occupancy = Array(repeating: 0, count: Self.levelCount)
    }

    // MARK: Scheduling

    /// Schedules (or moves) the timer of `kind` for `client` to fire at `deadline` (monotonic ns).
    public mutating func schedule(client: Int, kind: Int, deadline: UInt64) {
        let node = nodeIndex(client: client, kind: kind)
        if location[node] != Self.none { unlink(node) } else { count += 1 }
        deadlines[node] = deadline
        whenTicks[node] = max(tickCeiling(deadline), elapsedTicks &+ 1)
        insert(node)
    }

    /// Cancels the timer if scheduled (also when it is already due and waiting in the ready list).
    /// Returns whether it was scheduled.
    @discardableResult
    public mutating func cancel(client: Int, kind: Int) -> Bool {
        let node = nodeIndex(client: client, kind: kind)
        guard location[node] != Self.none else { return false }
        unlink(node)
        location[node] = Self.none
        count -= 1
        return true
    }

    /// Cancels every timer of one client (on close).
    public mutating func cancelAll(client: Int) {
        for kind in 0..<kindsPerClient { cancel(client: client, kind: kind) }
    }

    /// The deadline the timer is scheduled for, or nil.
    public func deadline(client: Int, kind: Int) -> UInt64? {
        let node = nodeIndex(client: client, kind: kind)
        return location[node] == Self.none ? nil : deadlines[node]
    }

    public func isScheduled(client: Int, kind: Int) -> Bool {
        location[nodeIndex(client: client, kind: kind)] != Self.none
    }

    // MARK: Advancing

    /// Processes every tick up to the one containing `now` and moves the due entries to the ready list.
    /// Returns how many entries are ready (including ones not yet popped from an earlier advance).
    @discardableResult
    public mutating func advance(to now: UInt64) -> Int {
        let nowTick = tickFloor(now)
        guard nowTick > elapsedTicks else { return readyCount }
        while let slot = nextOccupiedSlot(), slot.start <= nowTick {
            elapsedTicks = max(elapsedTicks, slot.start)
            processSlot(level: slot.level, slot: slot.slot)
        }
        elapsedTicks = nowTick
        return readyCount
    }

    /// The next due entry from the last `advance`, in deadline order; nil when the ready list is empty.
    public mutating func popExpired() -> Expired? {
        let node = readyHead
        guard node != Self.none else { return nil }
        let index = Int(node)
        unlink(index)
        location[index] = Self.none
        count -= 1
        return Expired(client: index / kindsPerClient, kind: index % kindsPerClient, deadline: deadlines[index])
    }

    /// The monotonic time at which `advance` will next have something to hand out (a tick boundary), or nil
    /// when nothing is scheduled; a lane with nothing else to do can sleep until then. Returns a time not
    /// after the last advanced tick when entries are ready. With deadlines parked beyond the 2^36-tick span
    /// it may answer earlier than the next entry (waking then is harmless: nothing fires early).
    public mutating func nextExpiration() -> UInt64? {
        if readyHead != Self.none { return tickTime(elapsedTicks) }
        if !earliestIsCurrent {
            earliestTick = earliestBucketTick()
            earliestIsCurrent = true
            earliestRecomputations &+= 1
        }
        return earliestTick == .max ? nil : tickTime(earliestTick)
    }

    /// `nextExpiration` worked out from the buckets every time (the model the cached answer is tested against).
    func nextExpirationWalking() -> UInt64? {
        if readyHead != Self.none { return tickTime(elapsedTicks) }
        let tick = earliestBucketTick()
        return tick == .max ? nil : tickTime(tick)
    }

    /// The tick `advance` next has something to hand out at, from the buckets alone (.max: they are empty).
    /// Every non-parked entry lies inside its slot's range and slots do not overlap, so the earliest slot's
    /// earliest entry is the earliest of all; a parked entry stands for its slot's start (where it is re-parked).
    private func earliestBucketTick() -> UInt64 {
        guard let slot = nextOccupiedSlot() else { return .max }
        // A level-0 slot spans one tick: whatever it holds is due at its start (no walk over its entries,
        // which are cold in cache: this runs every turn).
        if slot.level == 0 { return slot.start }
        var earliest = UInt64.max
        var node = bucketHeads[slot.level * Self.slotsPerLevel + slot.slot]
        while node != Self.none {
            earliest = min(earliest, whenTicks[Int(node)])
            node = nextNode[Int(node)]
        }
        // Entries of the earliest slot lie inside its range, unless they are parked far deadlines: then later
        // slots may hold earlier entries, so answer the slot's start, where advancing re-parks them.
        let slotEnd = slot.start &+ (1 << (UInt64(slot.level) * Self.slotBits))
        return earliest < slotEnd ? earliest : slot.start
    }

    // MARK: Internals

    @inline(__always)
    private func nodeIndex(client: Int, kind: Int) -> Int {
        precondition(client >= 0 && client < clientCapacity && kind >= 0 && kind < kindsPerClient,
                     "TimingWheel: client or kind out of range")
        return client * kindsPerClient + kind
    }

    @inline(__always)
    private func tickFloor(_ time: UInt64) -> UInt64 {
        time <= origin ? 0 : (time - origin) / tickNanoseconds
    }

    @inline(__always)
    private func tickCeiling(_ time: UInt64) -> UInt64 {
        guard time > origin else { return 0 }
        let offset = time - origin
        let ticks = offset / tickNanoseconds
        return offset % tickNanoseconds == 0 ? ticks : ticks + 1
    }

    @inline(__always)
    private func tickTime(_ tick: UInt64) -> UInt64 {
        let (product, overflow) = tick.multipliedReportingOverflow(by: tickNanoseconds)
        if overflow { return UInt64.max }
        let (sum, overflow2) = origin.addingReportingOverflow(product)
        return overflow2 ? UInt64.max : sum
    }


    /// Puts a node (whenTicks > elapsedTicks) into its bucket.
    @inline(__always)
    private mutating func insert(_ node: Int) {
        let when = whenTicks[node]
        // Far deadlines are parked at a closer placement tick and re-inserted when it comes due.
        let placement = when &- elapsedTicks > Self.maxPlacementTicks ? elapsedTicks &+ Self.maxPlacementTicks : when
        var masked = (elapsedTicks ^ placement) | UInt64(Self.slotsPerLevel - 1)
        let topBit = UInt64(Self.levelCount) * Self.slotBits
        if masked >= (1 << topBit) { masked = (1 << topBit) - 1 }
        let level = Int((63 - UInt64(masked.leadingZeroBitCount)) / Self.slotBits)
        if earliestIsCurrent {
            if level == Self.levelCount - 1 {
                // The top level, where parked entries are: in a slot that also holds a parked one, the answer
                // is the slot's start or its earliest near entry, worked out by the walk (12 days away at 1 ms).
                earliestIsCurrent = false
            } else if when < earliestTick {
                earliestTick = when
            }
        }
        let slot = Int((placement >> (UInt64(level) * Self.slotBits)) & 63)
        let bucket = level * Self.slotsPerLevel + slot
        let head = bucketHeads[bucket]
        nextNode[node] = head
        previousNode[node] = Self.none
        if head != Self.none { previousNode[Int(head)] = Int32(node) }
        bucketHeads[bucket] = Int32(node)
        location[node] = Int32(bucket)
        occupancy[level] |= 1 << UInt64(slot)
    }

    /// Removes a node from its bucket or the ready list (location is left for the caller to set).
    @inline(__always)
    private mutating func unlink(_ node: Int) {
        let where_ = location[node]
        let previous = previousNode[node]
        let next = nextNode[node]
        if where_ == Self.readyLocation {
            readyCount -= 1
            if previous != Self.none { nextNode[Int(previous)] = next } else { readyHead = next }
            if next != Self.none { previousNode[Int(next)] = previous } else { readyTail = previous }
        } else {
            let bucket = Int(where_)
            // The entry that gave the earliest tick may be leaving (parked entries sit on the top level only).
            if earliestIsCurrent
                && (whenTicks[node] <= earliestTick || bucket >= (Self.levelCount - 1) * Self.slotsPerLevel) {
                earliestIsCurrent = false
            }
            if previous != Self.none {
                nextNode[Int(previous)] = next
            } else {
                bucketHeads[bucket] = next
                if next == Self.none {
                    occupancy[bucket / Self.slotsPerLevel] &= ~(1 << UInt64(bucket % Self.slotsPerLevel))
                }
            }
            if next != Self.none { previousNode[Int(next)] = previous }
        }
        nextNode[node] = Self.none
        previousNode[node] = Self.none
    }

    private struct SlotPosition {
        var level: Int
        var slot: Int
        var start: UInt64
    }

    /// The earliest non-empty slot. Lower levels always hold earlier entries than higher ones, because an entry
    /// sits at the level of the highest bit in which its tick differs from `elapsedTicks`.
    private func nextOccupiedSlot() -> SlotPosition? {
        for level in 0..<Self.levelCount {
            let mask = occupancy[level]
            if mask == 0 { continue }
            let shift = UInt64(level) * Self.slotBits
            let slotRange: UInt64 = 1 << shift
            let levelRange: UInt64 = slotRange << Self.slotBits
            let position = Int((elapsedTicks >> shift) & 63)
            let rotated = (mask >> UInt64(position)) | (position == 0 ? 0 : mask << UInt64(64 - position))
            let slot = (position + rotated.trailingZeroBitCount) & 63
            let levelStart = elapsedTicks & ~(levelRange &- 1)
            var start = levelStart &+ UInt64(slot) &* slotRange
            if slot < position { start &+= levelRange }
            return SlotPosition(level: level, slot: slot, start: start)
        }
        return nil
    }

    /// Empties one slot: level 0 entries are due (sorted into the ready list); higher levels cascade down.
    private mutating func processSlot(level: Int, slot: Int) {
        let bucket = level * Self.slotsPerLevel + slot
        var node = bucketHeads[bucket]
        bucketHeads[bucket] = Self.none
        occupancy[level] &= ~(1 << UInt64(slot))
        // Due entries are linked through `nextNode` in a list of their own and sorted there (no scratch array:
        // one sized for every node of the lane was 4 bytes per timer, 20 per client).
        var dueHead = Self.none
        var dueTail = Self.none
        var dueCount = 0
        while node != Self.none {
            let index = Int(node)
            node = nextNode[index]
            nextNode[index] = Self.none
            previousNode[index] = Self.none
            if whenTicks[index] <= elapsedTicks {
                if dueTail == Self.none { dueHead = Int32(index) } else { nextNode[Int(dueTail)] = Int32(index) }
                dueTail = Int32(index)
                dueCount += 1
            } else {
                insert(index)
            }
        }
        // The top level's slot may hold parked entries, which stood for its start.
        if level == Self.levelCount - 1 { earliestIsCurrent = false }
        guard dueCount > 0 else { return }
        earliestIsCurrent = false  // the earliest entries fired
        var sorted = sortList(dueHead, count: dueCount)
        while sorted != Self.none {
            let next = nextNode[Int(sorted)]
            appendReady(Int(sorted))
            sorted = next
        }
    }

    @inline(__always)
    private mutating func appendReady(_ node: Int) {
        previousNode[node] = readyTail
        nextNode[node] = Self.none
        if readyTail != Self.none { nextNode[Int(readyTail)] = Int32(node) } else { readyHead = Int32(node) }
        readyTail = Int32(node)
        location[node] = Self.readyLocation
        readyCount += 1
    }

    @inline(__always)
    private func ordered(_ a: Int32, _ b: Int32) -> Bool {
        let da = deadlines[Int(a)], db = deadlines[Int(b)]
        return da != db ? da < db : a < b
    }

    /// Sorts the `count` entries linked through `nextNode` from `head` (the last one linking to none) by deadline,
    /// then node; returns the new head. A merge sort of the list in place: no allocation, O(n log n) when a whole
    /// fleet shares a tick, recursion depth log2(n).
    private mutating func sortList(_ head: Int32, count: Int) -> Int32 {
        guard count > 1 else { return head }
        let leftCount = count / 2
        var leftTail = head
        for _ in 1..<leftCount { leftTail = nextNode[Int(leftTail)] }
        let right = nextNode[Int(leftTail)]
        nextNode[Int(leftTail)] = Self.none
        let left = sortList(head, count: leftCount)
        let rightSorted = sortList(right, count: count - leftCount)
        return merge(left, rightSorted)
    }

    private mutating func merge(_ first: Int32, _ second: Int32) -> Int32 {
        var a = first
        var b = second
        var head = Self.none
        var tail = Self.none
        while a != Self.none && b != Self.none {
            let node: Int32
            if ordered(b, a) {
                node = b
                b = nextNode[Int(b)]
            } else {
                node = a
                a = nextNode[Int(a)]
            }
            if tail == Self.none { head = node } else { nextNode[Int(tail)] = node }
            tail = node
        }
        let rest = a != Self.none ? a : b
        if tail == Self.none { head = rest } else { nextNode[Int(tail)] = rest }
        return head
    }
}
