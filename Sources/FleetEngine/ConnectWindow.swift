/// Bounds the connects in flight to one broker address (TCP connect started, CONNACK not yet received) and adapts
/// the bound to retransmissions during the connect, the sign of a listener whose queues overflowed.
///
/// Why: a listener holds at most its listen backlog of connections that finished the TCP handshake and wait for
/// accept() (mosquitto 2.0: `listen(sock, 100)`, src/net.c). Past it the kernel drops the SYN (or the handshake's
/// last ACK) and the client's kernel sends it again only after its initial retransmission timeout, 1 s: a connect
/// that should take a millisecond takes a second. A fleet-wide cap cannot prevent that, since it does not know how
/// many of its connects go to each address; this bound is per address and starts at the configured value, which
/// should sit under the listener's backlog.
///
/// Adaptation (additive increase, multiplicative decrease, as TCP's congestion window): a connect that needed a
/// retransmission (its socket's `tcpi_total_retrans` > 0 at CONNACK: a SYN or the CONNECT sent again) halves the
/// bound, once per episode: connects started before the last decrease do not decrease it again, since they were
/// already in flight when it happened. Every `limit` clean connects in a row raise it by one, up to `ceiling`, the
/// configured bound, which is never exceeded.
public struct ConnectWindow: Sendable, Equatable {
    /// The configured bound: the window never allows more.
    public let ceiling: Int
    /// The current bound (1 ... ceiling).
    public private(set) var limit: Int
    public private(set) var inFlight: Int = 0
    /// The most connects ever in flight at once, and the lowest the bound fell to.
    public private(set) var peakInFlight: Int = 0
    public private(set) var lowestLimit: Int
    /// Connects that ended with a retransmission seen, and how often the bound was halved.
    public private(set) var retransmittedConnects: UInt64 = 0
    public private(set) var decreases: UInt64 = 0
    private var cleanInARow: Int = 0
    /// Monotonic time of the last decrease; connects started before it belong to that episode.
    private var lastDecreaseAt: UInt64?

    public init(ceiling: Int) {
        self.ceiling = max(ceiling, 1)
        limit = self.ceiling
        lowestLimit = self.ceiling
    }

    /// Whether one more connect may start now.
    public var mayStart: Bool { inFlight < limit }

    /// Records a connect started (callers check `mayStart` first; one started anyway is still counted).
    public mutating func started() {
        inFlight += 1
        peakInFlight = max(peakInFlight, inFlight)
    }

    /// Records that a connect ended. `retransmitted`: true when the connection needed a retransmission to get
    /// this far (at CONNACK), false when it did not, nil when unknown (a failure: refused, timed out, closed),
    /// which frees the place and changes nothing else. `startedAt` is when the connect started (monotonic ns).
    public mutating func finished(startedAt: UInt64, retransmitted: Bool?, now: UInt64) {
        if inFlight > 0 { inFlight -= 1 }
        guard let retransmitted else { return }
        if retransmitted {
            retransmittedConnects += 1
            cleanInARow = 0
            if let last = lastDecreaseAt, startedAt <= last { return }
            limit = max(1, limit / 2)
            lowestLimit = min(lowestLimit, limit)
            decreases += 1
            lastDecreaseAt = now
        } else {
            cleanInARow += 1
            if cleanInARow >= limit && limit < ceiling {
                limit += 1
                cleanInARow = 0
            }
        }
    }
}
