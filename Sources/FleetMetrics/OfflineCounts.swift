/// Offline store-and-forward counts (publish streams with `offline`), of a fleet or a run, from the lane to
/// report.json: `buffered` = `flushed` + `overflowed` + what was still buffered when publishing stopped (counted
/// in `unsent_at_end` too).
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
