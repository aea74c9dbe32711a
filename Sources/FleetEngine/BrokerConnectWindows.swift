import FleetTransport

/// A lane's `ConnectWindow` per broker address, and the clients waiting for a place in each, first come first
/// served. A client that finds its broker's window full waits here instead of polling every tick; each connect
/// that ends wakes as many waiting clients as the window has free places (none while a decrease left more in
/// flight than the bound), so the clients in flight never exceed the bound and a bound that grows again is
/// filled again.
struct BrokerConnectWindows {
    private(set) var windows: [ConnectWindow]
    private let slots: [SocketAddress: Int]
    private var waiting: [[Int32]]
    private var heads: [Int]

    /// `brokers`: each address a client of the lane connects to, with its bound (duplicates keep the first).
    init(brokers: [(address: SocketAddress, ceiling: Int)]) {
        var slots: [SocketAddress: Int] = [:]
        var windows: [ConnectWindow] = []
        for broker in brokers where slots[broker.address] == nil {
            slots[broker.address] = windows.count
            windows.append(ConnectWindow(ceiling: broker.ceiling))
        }
        self.slots = slots
        self.windows = windows
        waiting = Array(repeating: [], count: windows.count)
        heads = Array(repeating: 0, count: windows.count)
    }

    /// The window of `address` (an address the lane was built with).
    func slot(of address: SocketAddress) -> Int { slots[address] ?? 0 }

    /// How many clients wait for a place at `slot`.
    func waitingCount(_ slot: Int) -> Int { waiting[slot].count - heads[slot] }

    /// Whether `client` may start connecting to the broker of `slot` now; if not, it is queued (at the back) and
    /// `finished` wakes it later. A woken client that finds the place taken again is queued again.
    mutating func admit(_ client: Int, slot: Int) -> Bool {
        if windows[slot].mayStart { return true }
        waiting[slot].append(Int32(truncatingIfNeeded: client))
        return false
    }

    mutating func started(slot: Int) { windows[slot].started() }

    /// Records the end of a connect at `slot` (see `ConnectWindow.finished`) and calls `wake` for each waiting
    /// client that now has a place. Returns whether the bound was halved.
    @discardableResult
    mutating func finished(slot: Int, startedAt: UInt64, retransmitted: Bool?, now: UInt64,
                           wake: (Int) -> Void) -> Bool {
        let decreasesBefore = windows[slot].decreases
        windows[slot].finished(startedAt: startedAt, retransmitted: retransmitted, now: now)
        var free = windows[slot].limit - windows[slot].inFlight
        while free > 0, heads[slot] < waiting[slot].count {
            wake(Int(waiting[slot][heads[slot]]))
            heads[slot] += 1
            free -= 1
        }
        if heads[slot] == waiting[slot].count {
            waiting[slot].removeAll(keepingCapacity: true)
            heads[slot] = 0
        } else if heads[slot] >= 4096 && heads[slot] * 2 >= waiting[slot].count {
            waiting[slot].removeFirst(heads[slot])
            heads[slot] = 0
        }
        return windows[slot].decreases != decreasesBefore
    }
}
