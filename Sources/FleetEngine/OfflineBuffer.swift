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
