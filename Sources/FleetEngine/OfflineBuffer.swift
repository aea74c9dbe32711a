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
