import Synchronization

/// How many messages each stream has published so far (its next sequence number), written by the lane that owns
/// the stream and read by any lane when one of its subscribers gains or loses the right to a stream's messages
/// (SUBACK, disconnect). Relaxed atomics: a publish costs one plain store on the owning lane; readers need no
/// order with the message bytes, because the count is stored before the lane writes the message to its socket
/// (so a subscriber that reads n after its SUBACK can only miss sequence numbers below n).
///
/// Only this segment's streams have a count (slots numbered densely, fleet by fleet, in client order): a stream
/// of another segment is never published by this process, so its count here is 0. A count per stream of the
/// whole run, in each of 7 workers of a 100,000-vehicle run, was 8 bytes per stream times 7 per vehicle.
final class StreamProgress: @unchecked Sendable {
    /// One fleet's streams: global stream ids `firstStream..<firstStream + clients * streamsPerClient`, its clients'
    /// global indexes from `firstClient`, and the slot of its first stream in this segment.
    struct Fleet: Sendable {
        var firstStream: Int
        var streamsPerClient: Int
        var firstClient: Int
        var clients: Int
        var firstSlot: Int
    }

    /// Counts kept (this segment's streams).
    let count: Int
    let fleets: [Fleet]
    let segmentIndex: Int
    let segmentCount: Int
    private let values: UnsafeMutablePointer<Atomic<UInt64>>

    /// A count for every stream of `streams` (no segments).
    convenience init(streams: Int) {
        self.init(fleets: [(firstStream: 0, streamsPerClient: 1, clients: max(streams, 0))], segmentIndex: 0, segmentCount: 1)
    }

    /// Counts for the streams of the clients in segment `segmentIndex` of `segmentCount` (global client index
    /// mod `segmentCount` == `segmentIndex`); fleets in run order, their clients numbered on from the previous.
    init(fleets runFleets: [(firstStream: Int, streamsPerClient: Int, clients: Int)], segmentIndex: Int, segmentCount: Int) {
        self.segmentIndex = segmentIndex
        self.segmentCount = max(segmentCount, 1)
        var fleets: [Fleet] = []
        var firstClient = 0
        var slots = 0
        for fleet in runFleets {
            fleets.append(Fleet(firstStream: fleet.firstStream, streamsPerClient: fleet.streamsPerClient,
                                firstClient: firstClient, clients: fleet.clients, firstSlot: slots))
            let local = Self.localBelow(firstClient + fleet.clients, segmentIndex: segmentIndex, segmentCount: self.segmentCount)
                - Self.localBelow(firstClient, segmentIndex: segmentIndex, segmentCount: self.segmentCount)
            slots += local * fleet.streamsPerClient
            firstClient += fleet.clients
        }
        self.fleets = fleets
        count = slots
        values = .allocate(capacity: max(count, 1))
        for index in 0..<count { (values + index).initialize(to: Atomic(0)) }
    }

    deinit {
        values.deinitialize(count: count)
        values.deallocate()
    }

    /// Global client indexes below `global` in the segment.
    @inline(__always)
    static func localBelow(_ global: Int, segmentIndex: Int, segmentCount: Int) -> Int {
        global <= segmentIndex ? 0 : (global - segmentIndex + segmentCount - 1) / segmentCount
    }

    /// The slot of global stream id `stream`, nil when its client is not in this segment (or no such stream).
    func slot(_ stream: Int) -> Int? {
        for fleet in fleets where stream >= fleet.firstStream && stream < fleet.firstStream + fleet.clients * fleet.streamsPerClient {
            let client = (stream - fleet.firstStream) / fleet.streamsPerClient
            let global = fleet.firstClient + client
            guard global % segmentCount == segmentIndex else { return nil }
            let ordinal = Self.localBelow(global, segmentIndex: segmentIndex, segmentCount: segmentCount)
                - Self.localBelow(fleet.firstClient, segmentIndex: segmentIndex, segmentCount: segmentCount)
            return fleet.firstSlot + ordinal * fleet.streamsPerClient + (stream - fleet.firstStream) % fleet.streamsPerClient
        }
        return nil
    }

    /// The next sequence number of global stream `stream` (0 for another segment's): every sequence number below
    /// it was handed to a connection.
    func published(_ stream: Int) -> UInt64 {
        guard let slot = slot(stream) else { return 0 }
        return values[slot].load(ordering: .relaxed)
    }

    /// The count in `slot` (`StreamState.progressSlot`: the per-message path needs no lookup).
    @inline(__always)
    func published(slot: Int) -> UInt64 { values[slot].load(ordering: .relaxed) }

    /// Only the lane owning the stream in `slot` calls this.
    @inline(__always)
    func setPublished(slot: Int, _ value: UInt64) { values[slot].store(value, ordering: .relaxed) }

    /// Messages of every stream so far.
    var total: UInt64 {
        var total: UInt64 = 0
        for slot in 0..<count { total &+= values[slot].load(ordering: .relaxed) }
        return total
    }
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
