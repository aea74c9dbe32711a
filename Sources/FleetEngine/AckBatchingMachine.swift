/// The in-flight window's wait and the batching of its acks by SO_RCVLOWAT on one connection, as a value.
///
/// A client whose window is full resumes once half of it is free (`resumeThreshold`), not at every ack. While it
/// waits, every ack it waits for is owed by the broker without anything more from the client, and each is 4 bytes
/// at least: a receive low watermark of 4 bytes per missing slot wakes the lane once per refill round instead of
/// once per ack. A broker with Nagle's algorithm on holds acks back below such a mark (its next small write waits
/// for our TCP acknowledgement), so a raised mark is probed (`probeFired`): a stall below it is read at once, and
/// stalls in a row make the connection fall back to a mark of 1, re-armed after a back-off counted in window
/// refills, on probation (`AckBatchingRetry`).
///
/// A broker without Nagle's algorithm can hold acks back too: its TCP sends at most its congestion window of
/// segments unacknowledged (each ack is a segment of its own), and a socket nobody reads acknowledges them only at
/// its delayed-ACK timer. With BBR on loopback that window was 14-40 segments, below the 16 acks of half a window
/// of 32, so such rounds stalled until a probe. When a stalled probe's look shows held acks after 2 acks or more
/// had come, that count is taken as what the broker sends before it waits (`capAcks`): the mark and the refill
/// wait for at most that many acks from then on, and the cap grows by one ack every `capGrowthRounds` rounds
/// without a stall (the broker's window grows when it is used). Only a stall after fewer than 2 acks (Nagle's
/// algorithm: one ack, then nothing until acknowledged) counts towards a fallback.
///
/// Pure: no sockets, no clock reads. Each event comes with the time it happened and what else the decision needs
/// (the window's size and fill, whether the lane may raise the mark at all, the bytes queued on the socket); it
/// returns what the lane must do, and the lane (`Lane+Connection`, `Lane+Session`) does it: set SO_RCVLOWAT, arm
/// or cancel the probe timer, read, acknowledge at once and look again, count a fallback or a re-arm, publish.
/// A closed connection starts over from `init()`.
struct AckBatchingMachine: Equatable {
    /// How long bytes may wait below a raised mark, unchanged, before they are read anyway. A broker with
    /// Nagle's algorithm on holds the rest until our delayed ACK (40 ms or more); a broker that is only busy
    /// sends more within this, except on a loaded machine. Checked twice: 5-10 ms.
    static let probeInterval: UInt64 = 5_000_000
    /// Refill rounds in a row with a stall that showed held acks after which a connection's broker is taken to
    /// hold acks back. A broker with Nagle's algorithm on stalls every round (once its first ack is
    /// acknowledged the rest may reach the mark); a busy one on a loaded machine now and then.
    static let heldAcksStallLimit: UInt8 = 3
    /// Rounds without a stall at a learned cap after which the cap grows by one ack.
    static let capGrowthRounds: UInt8 = 64

    // Laid out widest first: this is part of every `SimulatedClient` (24 bytes).

    /// The socket's SO_RCVLOWAT as last set (1: every byte wakes the lane).
    private(set) var mark: Int32 = 1
    /// Bytes queued below the raised mark at the last probe (-1: none taken since the last read).
    private(set) var lastProbe: Int32 = -1
    /// The back-off of the last fallback, in window refills (0: none since the last passed probation), and the
    /// refills still to go before the batching is re-armed.
    private(set) var backoff: UInt32 = 0
    private(set) var rearmIn: UInt32 = 0
    /// Refill rounds in a row in which bytes were found waiting below the raised mark.
    private(set) var stalls: UInt8 = 0
    /// The most acks the mark and the refill wait for: what the broker was seen sending before it waited for our
    /// acknowledgement (0: no cap). Grows by one every `capGrowthRounds` clean rounds (`capRounds`), and goes
    /// away once it reaches half the window.
    private(set) var capAcks: UInt8 = 0
    private(set) var capRounds: UInt8 = 0
    /// Rounds without a stall still needed after a re-arm before the back-off resets (0: not on probation).
    private(set) var probation: UInt8 = 0
    /// A message waits for the in-flight window.
    private(set) var awaitingWindow = false
    /// The current refill round had a stall.
    private(set) var stalledThisRound = false
    /// This connection's broker was seen holding acks back: the mark stays 1 and every ack refills.
    private(set) var brokerHoldsAcks = false
    /// SO_RCVLOWAT could not be set on this socket: the batching is never tried again on this connection.
    private(set) var unsettable = false

    /// How many more window slots must free up before a waiting client resumes publishing: half the window free,
    /// or `capAcks` (when not 0) if fewer.
    static func slotsMissing(window: Int, inFlight: Int, capAcks: UInt8 = 0) -> Int {
        let half = max(1, window / 2)
        return (capAcks > 0 ? min(half, Int(capAcks)) : half) - (window - inFlight)
    }

    // MARK: The window

    /// A message found the in-flight window full: it waits for an ack.
    mutating func windowFull() {
        awaitingWindow = true
    }

    /// A publishing turn starts (it hands out what is due, and may find the window full again).
    mutating func publishTurnStarted() {
        awaitingWindow = false
    }

    enum WindowOpened: Equatable {
        /// Not waiting for the window: publish what is due.
        case publish
        /// Waiting, and the window is not yet half free: nothing.
        case keepWaiting
        /// The wait ends: the client is sendable again from now; publish what is due. `rearmed`: this refill was
        /// the last of a fallback's back-off, the batching is tried again (count a re-arm).
        case resume(rearmed: Bool)
    }

    /// An ack freed a slot of the in-flight window (`window` is read only while the client waits).
    ///
    /// Against a broker seen holding acks back every ack refills (the broker sends the next ones only once these
    /// are acknowledged, and a PUBLISH carries that acknowledgement) and counts down the back-off. Otherwise a
    /// round of the window ends at half the window free: only rounds that stalled in a row count, and
    /// `retry.probationRounds` rounds in a row without a stall end a re-armed connection's probation.
    mutating func windowOpened(
        window: @autoclosure () -> (window: Int, inFlight: Int), retry: AckBatchingRetry
    ) -> WindowOpened {
        guard awaitingWindow else { return .publish }
        var rearmed = false
        if brokerHoldsAcks {
            rearmed = countDownToRearm(retry)
        } else {
            let (size, inFlight) = window()
            if Self.slotsMissing(window: size, inFlight: inFlight, capAcks: capAcks) > 0 { return .keepWaiting }
            if !stalledThisRound {
                stalls = 0
                if probation > 0 {
                    probation -= 1
                    if probation == 0 { backoff = 0 }
                }
                if capAcks > 0 {
                    capRounds &+= 1
                    if capRounds >= Self.capGrowthRounds {
                        capRounds = 0
                        capAcks &+= 1
                        if Int(capAcks) >= size / 2 { capAcks = 0 }
                    }
                }
            }
        }
        stalledThisRound = false
        return .resume(rearmed: rearmed)
    }

    /// A refill of a fallen-back connection: one step of its back-off; at the last the batching is re-armed, on
    /// probation. True when it was.
    private mutating func countDownToRearm(_ retry: AckBatchingRetry) -> Bool {
        guard !unsettable else { return false }
        rearmIn &-= 1
        guard rearmIn == 0 else { return false }
        brokerHoldsAcks = false
        stalls = 0
        probation = retry.probationRounds
        return true
    }

    // MARK: The mark

    /// The mark the next wakeup should have, or nil when it is the one set. Raised only while the window waits,
    /// not yet half free, for 2 acks or more (4 bytes each: a mark that can always be reached), on a connection
    /// whose broker was not seen holding acks back and that the lane allows (`eligible`: connected, plain TCP,
    /// nothing to write, no partial packet kept, no subscription, no emulated link: a message for the client must
    /// be read when it comes, not when the acks reach the mark). Otherwise 1.
    func wantedMark(
        eligible: @autoclosure () -> Bool, window: @autoclosure () -> (window: Int, inFlight: Int)
    ) -> Int32? {
        var wanted: Int32 = 1
        if awaitingWindow, !brokerHoldsAcks, eligible() {
            let (size, inFlight) = window()
            let missing = min(Self.slotsMissing(window: size, inFlight: inFlight, capAcks: capAcks), inFlight)
            if missing >= 2 { wanted = Int32(4 * missing) }
        }
        return wanted == mark ? nil : wanted
    }

    enum ProbeTimer: Equatable {
        case arm(at: UInt64)
        case cancel
    }

    /// The lane set the mark `wantedMark` asked for (`accepted`), or the socket refused it: then the mark is 1
    /// and the batching is never tried again on this connection. Returns the probe timer's action.
    mutating func markApplied(_ wanted: Int32, accepted: Bool, now: UInt64) -> ProbeTimer {
        var set = wanted
        if !accepted {
            set = 1
            brokerHoldsAcks = true
            unsettable = true
        }
        mark = set
        lastProbe = -1
        return set > 1 ? .arm(at: now &+ Self.probeInterval) : .cancel
    }

    /// The lane read the socket (and, unless it has bytes to write, applied `wantedMark`). A raised mark is
    /// probed again from now.
    mutating func readFinished(now: UInt64) -> UInt64? {
        lastProbe = -1
        return mark > 1 ? now &+ Self.probeInterval : nil
    }

    // MARK: Probing a raised mark

    /// Carried from a stalled probe to `heldAcksLooked`: whether the connection was on probation with bytes waiting.
    struct PendingLook: Equatable {
        fileprivate let probation: Bool
        /// The bytes that had come when the probe found the stall.
        fileprivate let queued: Int32
    }

    enum Probe: Equatable {
        /// The mark is 1 (the timer outlived it): nothing.
        case none
        /// Bytes arrived since the last probe (or none wait): probe again at this time.
        case again(at: UInt64)
        /// A stall, counted: set the mark to 1 and, when `read`, read the socket. `fellBack`: the connection
        /// fell back (count a fallback).
        case stalled(read: Bool, fellBack: Bool)
        /// A stall: set the mark to 1, read the socket, acknowledge what was read at once (TCP_QUICKACK), look at
        /// the receive queue again and tell `heldAcksLooked` (unless the read closed the connection).
        case lookForHeldAcks(PendingLook)
    }

    /// The probe timer of a raised mark fired. `queued`: the bytes waiting on the socket (FIONREAD, -1 when it
    /// failed), asked only while the mark is raised. A stall is bytes waiting below the mark, unchanged since the
    /// last probe; on probation any bytes waiting (a broker with Nagle's algorithm on can trickle its acks in, each
    /// released by our acknowledgement of the last: slowly enough to keep the window waiting, but never unchanged
    /// at two probes in a row). Where held acks cannot be looked for (FIONREAD failed; `retry.looksForHeldAcks`
    /// off) every stall counts as showing them, and a socket read through a receive ring is left to the ring
    /// (`read` false: lowering the mark wakes its receive). A ring's socket is looked at as any other: the lane
    /// keeps the ring's receive asleep while it reads and looks itself (`Lane.probeLowWatermark`).
    mutating func probeFired(
        queued: @autoclosure () -> Int32, readsThroughRing: Bool, now: UInt64, retry: AckBatchingRetry
    ) -> Probe {
        guard mark > 1 else { return .none }
        let queued = queued()
        let onProbation = probation > 0 && queued > 0
        guard queued != 0 && queued == lastProbe || queued < 0 || onProbation else {
            lastProbe = queued
            return .again(at: now &+ Self.probeInterval)
        }
        mark = 1
        if queued < 0 || !retry.looksForHeldAcks {
            let fellBack = countStall(heldAcksShown: true, probation: onProbation || queued < 0, retry: retry)
            return .stalled(read: !readsThroughRing, fellBack: fellBack)
        }
        return .lookForHeldAcks(PendingLook(probation: onProbation, queued: queued))
    }

    enum Look: Equatable {
        /// Held acks showed: read them (the read sets the next mark, 1 if the connection just fell back).
        case readHeldAcks(fellBack: Bool)
        /// Nothing more came, and the connection's broker is taken to hold acks back: set the mark again
        /// (`wantedMark`) unless the client has bytes to write.
        case adjustMark(fellBack: Bool)
        /// Nothing more came: nothing.
        case nothing
    }

    /// After a stalled probe's read the lane acknowledged at once and looked at the receive queue again: bytes
    /// there (`shown`) are acks the broker held until that acknowledgement (on loopback they arrive before the
    /// ioctl returns); none is a broker that was only slow. Held acks after 2 acks or more (off probation) are the
    /// broker's congestion window, not Nagle's algorithm: they set the cap, and the stall is not counted.
    mutating func heldAcksLooked(shown: Bool, _ look: PendingLook, retry: AckBatchingRetry) -> Look {
        let came = look.queued / 4
        if shown && !look.probation && came >= 2 && (capAcks == 0 || came < Int32(capAcks)) {
            capAcks = UInt8(clamping: came)
            capRounds = 0
            return .readHeldAcks(fellBack: false)
        }
        let fellBack = countStall(heldAcksShown: shown, probation: look.probation, retry: retry)
        if shown { return .readHeldAcks(fellBack: fellBack) }
        if brokerHoldsAcks { return .adjustMark(fellBack: fellBack) }
        return .nothing
    }

    /// A stall below a raised mark, counted once per refill round. Falls back at `heldAcksStallLimit` rounds in
    /// a row (at once on probation) when held acks showed, at `retry.unshownStallLimit` when they did not. True
    /// when it fell back.
    private mutating func countStall(heldAcksShown: Bool, probation onProbation: Bool, retry: AckBatchingRetry) -> Bool {
        if !stalledThisRound { stalls &+= 1 }
        stalledThisRound = true
        let limit = heldAcksShown ? Self.heldAcksStallLimit : retry.unshownStallLimit
        guard stalls >= limit || (onProbation && heldAcksShown) else { return false }
        fallBack(retry)
        return true
    }

    /// A fallback: the mark stays 1 for the next `backoff` window refills, twice the last fallback's unless a
    /// probation passed since, at most `retry.limit`.
    private mutating func fallBack(_ retry: AckBatchingRetry) {
        let previous = backoff
        backoff = previous == 0 ? retry.first : previous <= retry.limit / 2 ? previous * 2 : retry.limit
        rearmIn = backoff
        probation = 0
        brokerHoldsAcks = true
    }
}
