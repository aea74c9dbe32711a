import CLinux
import Dispatch
import FleetTransport
import Glibc
import Synchronization

/// How a lane learns that its epoll set is ready.
public enum LaneDriver: Sendable, Equatable {
    /// A thread per lane blocks in epoll_wait and runs each turn through `queue.sync`, which an idle serial
    /// queue executes inline on the calling thread: no thread hop and no re-arming per wakeup.
    case thread
    /// A DispatchSourceRead on the epoll fd. libdispatch registers it one-shot, so every wakeup costs two
    /// epoll_ctl calls on its manager thread and a hop to a worker thread.
    case dispatchSource
}

/// The `.thread` driver's state, shared between the lane and its thread.
final class LaneThread: @unchecked Sendable {
    // @unchecked: `thread` is written once before the thread runs and read after it was told to stop.
    let shutdown = Atomic<Bool>(false)
    /// Turns run on the lane's queue, by the driver or not: the driver hands its events to the next turn only
    /// when no other turn ran since its wait began (else they may be stale: a socket closed, its index reused).
    let turns = Atomic<UInt64>(0)
    let wake: EventNotifier
    var thread = pthread_t()
    var started = false

    init() throws { wake = try EventNotifier() }
}

extension Lane {
    static let wakeToken: UInt64 = .max - 1
    /// Messages arrive at `heavyInboundRate` per second or more: the driver pauses before the next wait. A rate,
    /// not a count per turn: a lane that reads eagerly gets a few messages a turn at any load and would never
    /// pause. A request and its reply a few µs apart do not make a rate (two messages at least).
    static let heavyInboundRate: UInt64 = 64_000

    func isReceivingHeavily() -> Bool {
        Self.isReceivingHeavily(messages: messagesThisTurn, sinceLastTurn: sinceLastTurn)
    }

    /// `messages` received in a turn that began `sinceLastTurn` ns after the one before.
    static func isReceivingHeavily(messages: Int, sinceLastTurn: UInt64) -> Bool {
        ReceiveRateWindow.reaches(heavyInboundRate, messages: messages, over: sinceLastTurn)
    }

    /// At the end of a driver's turn: until when (monotonic ns) the driver waits before it looks for more (0: it
    /// looks at once), the turn's messages noted in the lane's `receiveRate`. A heavy stream's pause runs its whole
    /// length from the turn's start; a steady stream's ends at the lane's next timer at the latest (`armedDeadline`:
    /// publishers on the lane keep their schedule). Counted in `ClientCounters.receiveCoalescingPauses` (heavy)
    /// or `receiveBatchingPauses` (steady).
    func pauseUntilAfterTurn() -> UInt64 {
        receiveRate.note(messages: messagesThisTurn, turnStart: turnStartedAt)
        let heavy = isReceivingHeavily()
        guard let pause = Self.pause(heavy: heavy, steady: receiveRate.steady, messages: messagesThisTurn,
                                     coalescing: configuration.receiveCoalescing,
                                     batching: configuration.receiveBatching) else { return 0 }
        let until = heavy ? turnStartedAt &+ pause
            : Self.batchingEnd(turnStart: turnStartedAt, batching: pause, nextTimer: armedDeadline, now: MonotonicClock.now())
        if until != 0 {
            if heavy { metrics.lane.receiveCoalescingPauses &+= 1 } else { metrics.lane.receiveBatchingPauses &+= 1 }
        }
        return until
    }

    /// A steady stream's pause: `batching` from the turn's start, cut at the next timer; 0 (none) when that
    /// leaves nothing to wait from `now`.
    static func batchingEnd(turnStart: UInt64, batching: UInt64, nextTimer: UInt64, now: UInt64) -> UInt64 {
        let end = min(turnStart &+ batching, nextTimer)
        return end > now ? end : 0
    }

    /// `coalescing` (`EngineConfiguration.receiveCoalescing`) while the lane receives heavily; `batching`
    /// (`receiveBatching`, never longer than `coalescing`, which stays the bound a report states) after a turn
    /// that received while the lane receives steadily; else nil. 0 in either turns that pause off, and 0
    /// `coalescing` both.
    static func pause(heavy: Bool, steady: Bool, messages: Int, coalescing: UInt64, batching: UInt64) -> UInt64? {
        guard coalescing > 0 else { return nil }
        if heavy { return coalescing }
        let batching = min(batching, coalescing)
        guard batching > 0, messages > 0, steady else { return nil }
        return batching
    }

    /// Starts the driver thread: wait until the epoll set is ready, run a turn, again, until stopped.
    func startThreadDriver() throws {
        let driver = try LaneThread()
        try epoll.add(driver.wake.fileDescriptor, events: .readable, token: Self.wakeToken)
        threadDriver = driver
        let retained = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&driver.thread, nil, { argument in
            guard let argument else { return nil }
            let lane = Unmanaged<Lane>.fromOpaque(argument).takeRetainedValue()
            lane.driveUntilShutdown()
            return nil
        }, retained)
        if result != 0 {
            Unmanaged<Lane>.fromOpaque(retained).release()
            throw SystemError(call: "pthread_create", errno: result)
        }
        driver.started = true
    }

    private func driveUntilShutdown() {
        guard let driver = threadDriver else { return }
        if let receiveRing {
            driveWithReceiveRing(driver, receiveRing)
            return
        }
        // The wait's events go to the turn (level-triggered: a turn that cannot use them fetches its own).
        let ready = EpollReadyList(capacity: epoll.capacity)
        var pauseUntil: UInt64 = 0
        while !driver.shutdown.load(ordering: .acquiring) {
            if pauseUntil != 0 {
                // A busy turn: let the next batch of messages gather (see `EngineConfiguration.receiveCoalescing`).
                var until = timespec(tv_sec: Int(pauseUntil / 1_000_000_000), tv_nsec: Int(pauseUntil % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil) == EINTR {}
                pauseUntil = 0
            }
            let turnsBefore = driver.turns.load(ordering: .relaxed)
            let count: Int
            do { count = try epoll.wait(timeoutMilliseconds: -1, into: ready) } catch { break }
            if driver.shutdown.load(ordering: .acquiring) { break }
            if count > 0 {
                pauseUntil = queue.sync {
                    let fresh = driver.turns.load(ordering: .relaxed) == turnsBefore
                    self.turn(prefetched: fresh ? ready : nil)
                    // From the turn's start: `now` moved on with every read of the turn.
                    return self.pauseUntilAfterTurn()
                }
            }
        }
    }

    /// Stops and joins the driver thread (call from outside the lane's queue, after `stop()`).
    func stopThreadDriver() {
        guard let driver = threadDriver, driver.started else { return }
        driver.shutdown.store(true, ordering: .releasing)
        try? driver.wake.signal()
        pthread_join(driver.thread, nil)
        driver.started = false
        queue.sync { try? epoll.remove(driver.wake.fileDescriptor) }
    }
}
