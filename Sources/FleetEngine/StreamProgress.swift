import Synchronization

/// How many messages each stream has published so far (its next sequence number), written by the lane that owns
/// the stream and read by any lane when one of its subscribers gains or loses the right to a stream's messages
/// (SUBACK, disconnect). Relaxed atomics: a publish costs one plain store on the owning lane; readers need no
/// order with the message bytes, because the count is stored before the lane writes the message to its socket
/// (so a subscriber that reads n after its SUBACK can only miss sequence numbers below n).
final class StreamProgress: @unchecked Sendable {
    let count: Int
    private let values: UnsafeMutablePointer<Atomic<UInt64>>

    init(streams: Int) {
        count = max(streams, 0)
        values = .allocate(capacity: max(count, 1))
        for index in 0..<count { (values + index).initialize(to: Atomic(0)) }
    }

    deinit {
        values.deinitialize(count: count)
        values.deallocate()
    }

    /// The next sequence number of `stream`: every sequence number below it was handed to a connection.
    @inline(__always)
    func published(_ stream: Int) -> UInt64 { values[stream].load(ordering: .relaxed) }

    /// Only the lane owning `stream` calls this.
    @inline(__always)
    func setPublished(_ stream: Int, _ value: UInt64) { values[stream].store(value, ordering: .relaxed) }
}

/// One stretch of time a subscriber was entitled to a stream's messages, in the stream's sequence numbers:
/// messages `start..<end` (from its SUBACK) were published while it was subscribed and must arrive. What was
/// numbered before `start` and after the previous window still arrived counts as owed too (see the engine's
/// expected counts): the broker had the subscription when it got those.
public struct EntitlementWindow: Sendable, Equatable {
    public var start: UInt64
    public var end: UInt64

    public init(start: UInt64, end: UInt64) {
        self.start = min(start, end)
        self.end = end
    }
}
