/// Store and forward while a client is offline, as vehicle SDKs do: messages that come due while the link is
/// down wait in a buffer of `capacity` messages and go out after the reconnect, each with its intended time (so
/// the latency shows the buffering). When more come due than fit, `overflow` decides which are lost.
public struct OfflineBuffer: Sendable, Equatable {
    public enum Overflow: String, Sendable, Equatable {
        /// A full buffer forgets its oldest message for each new one (the newest are kept).
        case dropOldest = "drop_oldest"
        /// A full buffer refuses new messages (the oldest are kept).
        case dropNewest = "drop_newest"
    }

    public var capacity: Int
    public var overflow: Overflow

    public init(capacity: Int, overflow: Overflow = .dropOldest) {
        self.capacity = capacity
        self.overflow = overflow
    }
}

/// Per client and stream: the backlog a reconnect found and the stream is still sending.
struct OfflineBacklog {
    /// Buffered messages still to send (the next ones the schedule hands out).
    var toFlush: UInt64 = 0
    /// `drop_newest`: slots after those that overflowed, skipped once the flush is out.
    var skipAfter: UInt64 = 0
}

/// Offline buffering counts of one fleet: `buffered` = `flushed` + `overflowed` + what was still buffered when
/// publishing stopped (counted in `unsent_at_end` too).
public struct OfflineCounts: Sendable, Equatable {
    /// Messages that came due while their client was offline.
    public var buffered: UInt64 = 0
    /// Buffered messages sent after the reconnect (subscribers are owed them).
    public var flushed: UInt64 = 0
    /// Buffered messages lost to a full buffer (never published, so no subscriber is owed them).
    public var overflowed: UInt64 = 0

    public init(buffered: UInt64 = 0, flushed: UInt64 = 0, overflowed: UInt64 = 0) {
        self.buffered = buffered
        self.flushed = flushed
        self.overflowed = overflowed
    }

    public mutating func add(_ other: OfflineCounts) {
        buffered &+= other.buffered
        flushed &+= other.flushed
        overflowed &+= other.overflowed
    }
}

extension PublishSchedule {
    /// Passes over the next `count` slots without handing them out (a full offline buffer's losses): they take
    /// no sequence number, so no subscriber expects them.
    mutating func skip(_ count: UInt64) {
        var left = count
        while left > 0, nextIntendedTime != nil {
            advance()
            left -= 1
        }
    }
}
