import FleetMetrics
import Glibc

/// A one-way delay: fixed, or drawn per send from a log-normal fitted to a median and a 99th percentile
/// (radio links have a long right tail; a log-normal is the usual two-parameter fit for it).
public enum NetworkDelay: Sendable, Equatable {
    case fixed(UInt64)
    case distribution(p50: UInt64, p99: UInt64)

    /// The median (ns), which `NetworkShape` uses for the retransmission timeout.
    public var median: UInt64 {
        switch self {
        case .fixed(let value): return value
        case .distribution(let p50, _): return p50
        }
    }
}

/// What a TCP client sees of packet loss. TCP retransmits, so an application never sees a lost packet: it sees
/// its bytes stall for about one retransmission timeout, in bursts (Gilbert-Elliott: a good and a bad state),
/// and now and then a link that drops and ends the connection.
public struct NetworkLoss: Sendable, Equatable {
    /// Share of sends that hit a loss (the bad state's stationary probability), 0...1.
    public var rate: Double
    /// Mean number of sends in a row that hit a loss once one did (≥ 1).
    public var burst: Double
    /// Mean time between link drops that end the connection (ns, exponential gaps); 0: none.
    public var dropInterval: UInt64

    public init(rate: Double, burst: Double = 1, dropInterval: UInt64 = 0) {
        self.rate = rate
        self.burst = burst
        self.dropInterval = dropInterval
    }
}

/// Periods without any link (a tunnel, a car park): the connection ends and the vehicle reconnects when the
/// outage is over (by its fleet's reconnect policy).
public struct NetworkOutages: Sendable, Equatable {
    /// Mean time between outages (ns, exponential gaps, counted from each connect).
    public var meanInterval: UInt64
    /// Each outage lasts a uniform draw from this range (ns).
    public var duration: ClosedRange<UInt64>

    public init(meanInterval: UInt64, duration: ClosedRange<UInt64>) {
        self.meanInterval = meanInterval
        self.duration = duration
    }
}

/// The network conditions of (a fraction of) a fleet's vehicles, emulated in the lane: each direction's bytes
/// wait in a per-client queue until their release time. See `Lane+Network`.
public struct EngineNetworkProfile: Sendable, Equatable {
    /// The preset it came from ("lte"), or "custom".
    public var name: String
    /// Share of the fleet's clients with this profile, spread evenly over the indices (`applies(to:of:)`).
    public var fraction: Double = 1
    /// One-way delay vehicle → broker and broker → vehicle.
    public var latencyUp: NetworkDelay = .fixed(0)
    public var latencyDown: NetworkDelay = .fixed(0)
    /// Each delay draw is moved by a uniform amount in ±jitter (ns), never below 0.
    public var jitter: UInt64 = 0
    /// Bits per second; 0: unlimited.
    public var bandwidthUp: UInt64 = 0
    public var bandwidthDown: UInt64 = 0
    public var loss: NetworkLoss?
    public var outages: NetworkOutages?

    public init(name: String = "custom") { self.name = name }

    /// Whether client `index` of a fleet of `count` has the profile when it is the fleet's only one: exactly
    /// ⌊count × fraction⌋ clients, spread evenly (`assignment`).
    public func applies(to index: Int, of count: Int) -> Bool {
        Self.assignment(of: index, count: count, profiles: [self]) == 0
    }

    /// The profile (index into `profiles`) of client `index` of a fleet of `count`, nil for none. Profile k takes
    /// n_k = ⌊count × (f_1 + … + f_k)⌋ − ⌊count × (f_1 + … + f_(k−1))⌋ clients, spread evenly over the clients
    /// the profiles before it left (of m remaining, the j-th is taken when ⌊(j + 1)·n/m⌋ > ⌊j·n/m⌋, in integers).
    /// A function of the index within the fleet only, so every segment of a split run and every merge agrees,
    /// and a profile whose fractions add up to 1 leaves no client out. O(profiles) per client.
    public static func assignment(of index: Int, count: Int, profiles: [EngineNetworkProfile]) -> Int? {
        guard index >= 0, index < count else { return nil }
        var local = index
        var remaining = count
        for (position, share) in clientCounts(count: count, profiles: profiles).enumerated() {
            if share > 0 && remaining > 0 {
                let before = local * share / remaining
                if (local + 1) * share / remaining > before { return position }
                local -= before
            }
            remaining -= share
        }
        return nil
    }

    /// Clients of a fleet of `count` per profile (`assignment`'s n_k).
    public static func clientCounts(count: Int, profiles: [EngineNetworkProfile]) -> [Int] {
        FractionShares.counts(of: count, fractions: profiles.lazy.map(\.fraction))
    }

    /// Problems that make the profile unusable (the scenario layer reports them with a location first).
    public var validationError: String? {
        if !(fraction >= 0 && fraction <= 1) { return "network fraction must be from 0 to 1, got \(fraction)" }
        for delay in [latencyUp, latencyDown] {
            if case .distribution(let p50, let p99) = delay, p99 < p50 || p50 == 0 {
                return "network latency p99 must be at least its p50, and p50 greater than 0"
            }
        }
        if let loss {
            if !(loss.rate >= 0 && loss.rate < 1) { return "network loss rate must be from 0 to below 1, got \(loss.rate)" }
            if !(loss.burst >= 1 && loss.burst.isFinite) { return "network loss burst must be at least 1, got \(loss.burst)" }
        }
        if let outages, outages.meanInterval == 0 { return "network outages need a mean interval greater than 0" }
        return nil
    }
}

/// A profile turned into the numbers the lane uses per send, computed once per fleet and shared by its clients.
final class NetworkShape: Sendable {
    let profile: EngineNetworkProfile
    /// Log-normal parameters per direction (mu, sigma of ln(ns)); sigma 0 for a fixed delay.
    let upMu: Double, upSigma: Double, upFixed: UInt64
    let downMu: Double, downSigma: Double, downFixed: UInt64
    let jitter: UInt64
    /// ns per byte × 2^16 per direction (0: unlimited), and the burst a token bucket lets through at once (ns).
    let upNanosPerByte: UInt64, downNanosPerByte: UInt64
    let burstNanoseconds: UInt64
    /// Gilbert-Elliott transitions per send, as thresholds on 64 random bits (0: never).
    let goodToBad: UInt64, badToGood: UInt64
    /// One retransmission timeout: Linux's is the smoothed RTT plus at least 200 ms (its minimum RTO term).
    let retransmissionTimeout: UInt64
    /// Queued outbound bytes at which publishing waits, as a full socket send buffer makes it wait.
    let sendBufferBytes: Int
    /// Queued inbound bytes at which the lane stops reading the socket until half of them were delivered.
    let receiveBufferBytes: Int

    /// z of the 99th percentile of the standard normal.
    static let z99 = 2.326_347_874_040_841

    init(_ profile: EngineNetworkProfile) {
        self.profile = profile
        func parameters(_ delay: NetworkDelay) -> (Double, Double, UInt64) {
            switch delay {
            case .fixed(let value): return (0, 0, value)
            case .distribution(let p50, let p99):
                let mu = log(Double(max(p50, 1)))
                return (mu, max(0, (log(Double(max(p99, 1))) - mu) / Self.z99), 0)
            }
        }
        (upMu, upSigma, upFixed) = parameters(profile.latencyUp)
        (downMu, downSigma, downFixed) = parameters(profile.latencyDown)
        jitter = profile.jitter
        func nanosPerByte(_ bitsPerSecond: UInt64) -> UInt64 {
            bitsPerSecond == 0 ? 0 : UInt64((8e9 * 65536 / Double(bitsPerSecond)).rounded())
        }
        upNanosPerByte = nanosPerByte(profile.bandwidthUp)
        downNanosPerByte = nanosPerByte(profile.bandwidthDown)
        burstNanoseconds = 10_000_000
        if let loss = profile.loss, loss.rate > 0 {
            // Stationary bad share = p(G→B) / (p(G→B) + p(B→G)); mean bad run = 1 / p(B→G).
            let badToGood = 1 / loss.burst
            let goodToBad = min(1, loss.rate * badToGood / (1 - loss.rate))
            self.goodToBad = Self.threshold(goodToBad)
            self.badToGood = Self.threshold(badToGood)
        } else {
            goodToBad = 0
            badToGood = 0
        }
        retransmissionTimeout = 200_000_000 &+ profile.latencyUp.median &+ profile.latencyDown.median
        let upBytesPerSecond = profile.bandwidthUp / 8
        sendBufferBytes = upBytesPerSecond == 0 ? 4 << 20 : max(4096, Int(upBytesPerSecond))
        // A second of the downlink (at least 16 KiB, at most 4 MiB): what a radio link's buffers hold.
        let downBytesPerSecond = profile.bandwidthDown / 8
        receiveBufferBytes = downBytesPerSecond == 0 ? 4 << 20 : min(4 << 20, max(16 << 10, Int(downBytesPerSecond)))
    }

    static func threshold(_ probability: Double) -> UInt64 {
        if probability <= 0 { return 0 }
        if probability >= 1 { return .max }
        return UInt64(probability * 0x1p64)
    }
}

/// A cut of an emulated link, as recorded for tests (`NetworkLink.events`): which connection attempt of the
/// client it ended, how, and what that connection drew before it.
struct NetworkEvent: Equatable, Sendable {
    enum Kind: Equatable, Sendable { case drop, outage, tunnel }
    var attempt: UInt32
    var kind: Kind
    /// The outage's length (ns), 0 for a drop.
    var outage: UInt64
    /// Stalls and emulated delay (ns, both ways) of this connection up to the cut.
    var stalls: UInt64
    var delay: UInt64
}

/// One queued chunk: the bytes up to `end` (an offset into its queue's storage) leave at `release`.
struct NetworkChunk {
    var end: Int
    var release: UInt64
    var enqueuedAt: UInt64
    /// Outbound: the packet identifier of a QoS 1/2 PUBLISH (0: none), for the broker-side PUBACK time.
    var packetID: UInt16 = 0
    /// Inbound: bytes read during a TLS handshake or WebSocket upgrade, still to go through the layers.
    var raw = false
}

/// One direction's queue: the bytes in order, the chunk boundaries with their release times. Storage is reused
/// (`removeAll(keepingCapacity:)` once drained), so a steady client allocates nothing per send.
struct NetworkQueue {
    var bytes: [UInt8] = []
    var consumed = 0
    var chunks: [NetworkChunk] = []
    var firstChunk = 0
    /// Release time of the last chunk queued: a later chunk never leaves before it (TCP keeps order).
    var lastRelease: UInt64 = 0
    /// Token bucket as a virtual finish time: the link is busy sending queued bytes until then.
    var linkFreeAt: UInt64 = 0

    var isEmpty: Bool { firstChunk == chunks.count }
    var queuedBytes: Int { bytes.count - consumed }
    var nextRelease: UInt64? { isEmpty ? nil : chunks[firstChunk].release }

    mutating func append(_ input: UnsafeRawBufferPointer, release: UInt64, now: UInt64, packetID: UInt16 = 0,
                         raw: Bool = false) {
        bytes.append(contentsOf: input)
        chunks.append(NetworkChunk(end: bytes.count, release: release, enqueuedAt: now, packetID: packetID, raw: raw))
    }

    /// Drops the first chunk (after its bytes were handed on); empties the storage when nothing is left.
    mutating func popFirst() {
        consumed = chunks[firstChunk].end
        firstChunk += 1
        if firstChunk == chunks.count {
            bytes.removeAll(keepingCapacity: true)
            chunks.removeAll(keepingCapacity: true)
            consumed = 0
            firstChunk = 0
        } else if consumed >= 64 * 1024 && consumed * 2 >= bytes.count {
            // Compact now and then, so a queue that never drains fully does not grow without bound.
            bytes.removeSubrange(0..<consumed)
            for index in firstChunk..<chunks.count { chunks[index].end -= consumed }
            chunks.removeSubrange(0..<firstChunk)
            consumed = 0
            firstChunk = 0
        }
    }

    mutating func clear() {
        bytes = []
        chunks = []
        consumed = 0
        firstChunk = 0
        lastRelease = 0
        linkFreeAt = 0
    }
}

/// One client's emulated link, owned by its lane (a class so the lane mutates it in place through the client).
final class NetworkLink {
    let shape: NetworkShape
    /// Which of its fleet's profiles this is (index into `EngineFleet.networks`).
    let profile: Int
    /// Three streams of the run seed, apart from the client's generator and from each other, so that how often
    /// one is drawn from (reads come in timing-dependent pieces) never shifts another: delays, the
    /// Gilbert-Elliott chain (one step per MQTT packet each way), and the times of drops and outages. Drawn anew
    /// for every connection attempt (`beginAttempt`) from the seed, the client's global index and the attempt's
    /// number, so what one connection drew never shifts the next: a client's k-th connection gets the same
    /// draws in every run, however long its earlier connections lasted and however many packets they carried.
    var random: SeededRandom
    var lossRandom: SeededRandom
    var eventRandom: SeededRandom
    let seed: UInt64
    let globalIndex: Int
    /// Connection attempts so far (1 for the first); the streams of the current one are keyed by it.
    private(set) var attempts: UInt32 = 0
    /// The link's stalls and emulated delay when the current attempt began (its own share is the difference).
    private var stallsAtAttempt: UInt64 = 0
    private var delayAtAttempt: UInt64 = 0
    /// Every cut of this link, when the engine records them (`EngineConfiguration.recordsNetworkEvents`, for
    /// tests; nil otherwise, so a client pays nothing for it).
    var events: [NetworkEvent]?
    var up = NetworkQueue()
    var down = NetworkQueue()
    /// What this link did (summed per profile at the end of the run).
    var counters = NetworkCounters()
    /// Gilbert-Elliott state (shared by both directions: one radio link).
    var lossBad = false
    /// True while released inbound bytes are handed to the session (they must not be queued again), with the
    /// time they were read from the socket (the broker-side latencies end there).
    var delivering = false
    var deliveringReadAt: UInt64 = 0
    /// The last released QoS 1/2 PUBLISHes: (packet identifier, released at), for the broker-side PUBLISH-to-ack
    /// time of first sends and of resends after a reconnect alike. Empty (512 bytes saved per client) for
    /// clients that publish nothing at QoS 1.
    var released: [(UInt16, UInt64)]
    var releasedNext = 0
    /// Publishing waits while the queued outbound bytes exceed the shape's send buffer.
    var held = false
    /// The socket is not read while the inbound queue holds `shape.receiveBufferBytes` or more (backpressure:
    /// the broker's bytes wait in the kernel and then in the broker, as behind a slow radio link).
    var readPaused = false
    /// The TCP handshake's round trip is being waited out (the socket connected, the lane does not know yet).
    var connectPending = false
    /// Where the inbound MQTT stream is: bytes of the current packet still to come, or reading its fixed header
    /// (one loss step per packet, however the reads cut the stream).
    var downRemaining = 0
    var downHeaderLength = 0
    var downHeaderShift = 0
    var downInHeader = false
    /// The most inbound bytes queued at once on this link (bounded by backpressure).
    var downHighWater = 0

    init(shape: NetworkShape, seed: UInt64, globalIndex: Int, tracksAcks: Bool = true, profile: Int = 0) {
        self.shape = shape
        self.profile = profile
        released = tracksAcks ? Array(repeating: (0, 0), count: 32) : []
        self.seed = seed
        self.globalIndex = globalIndex
        (random, lossRandom, eventRandom) = Self.streams(seed: seed, globalIndex: globalIndex, attempt: 0)
    }

    /// The three streams of one connection attempt. Segments draw the same: they are keyed by the run seed, the
    /// client's global index and the attempt's number only.
    static func streams(seed: UInt64, globalIndex: Int, attempt: UInt32)
        -> (delays: SeededRandom, losses: SeededRandom, events: SeededRandom)
    {
        let stream = UInt64(UInt32(truncatingIfNeeded: globalIndex)) | UInt64(attempt) << 32
        return (SeededRandom(seed: seed ^ 0x6E65_7477_6F72_6B21, stream: stream),
                SeededRandom(seed: seed ^ 0x6C6F_7373_6C6F_7373, stream: stream),
                SeededRandom(seed: seed ^ 0x6576_656E_7473_2121, stream: stream))
    }

    /// A connection attempt begins (a socket is about to be opened): fresh streams for it, the loss chain back
    /// in its good state.
    func beginAttempt() {
        attempts &+= 1
        (random, lossRandom, eventRandom) = Self.streams(seed: seed, globalIndex: globalIndex, attempt: attempts)
        lossBad = false
        stallsAtAttempt = counters.stalls
        delayAtAttempt = counters.delayUpNanoseconds &+ counters.delayDownNanoseconds
    }

    /// Notes a cut of the current connection in `events` when recorded.
    func recordCut(_ kind: NetworkEvent.Kind, outage: UInt64 = 0) {
        guard events != nil else { return }
        events?.append(NetworkEvent(
            attempt: attempts, kind: kind, outage: outage, stalls: counters.stalls &- stallsAtAttempt,
            delay: counters.delayUpNanoseconds &+ counters.delayDownNanoseconds &- delayAtAttempt))
    }

    /// After inbound bytes were queued: true when the lane must stop reading the socket now, because the queue
    /// reached the shape's receive buffer (counted in `read_pauses`, once per pause). Keeps the high-water mark.
    /// `canPause`: false for a socket read by the receive ring (no read interest to drop).
    func pauseReadingIfFull(canPause: Bool = true) -> Bool {
        let queued = down.queuedBytes
        if queued > downHighWater { downHighWater = queued }
        guard canPause, !readPaused, queued >= shape.receiveBufferBytes else { return false }
        readPaused = true
        counters.readPauses &+= 1
        return true
    }

    /// After inbound bytes were delivered: true when the lane may read the socket again now, because less than
    /// half of the receive buffer is still queued.
    func resumeReadingIfDrained() -> Bool {
        guard readPaused, down.queuedBytes * 2 < shape.receiveBufferBytes else { return false }
        readPaused = false
        return true
    }

    /// One one-way delay draw (ns).
    @inline(__always)
    func delay(up isUp: Bool) -> UInt64 {
        let sigma = isUp ? shape.upSigma : shape.downSigma
        var value: Double
        if sigma == 0 && (isUp ? shape.upMu : shape.downMu) == 0 {
            value = Double(isUp ? shape.upFixed : shape.downFixed)
        } else {
            value = exp((isUp ? shape.upMu : shape.downMu) + sigma * normal())
        }
        if shape.jitter > 0 {
            value += (random.nextDouble() * 2 - 1) * Double(shape.jitter)
        }
        return value <= 0 ? 0 : UInt64(value)
    }

    /// A standard normal draw (Box-Muller; one of the pair is used, which keeps the state simple).
    @inline(__always)
    func normal() -> Double {
        let u1 = 1 - random.nextDouble()
        let u2 = random.nextDouble()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// The Gilbert-Elliott step for one MQTT packet: true when it hit a loss (and stalls one retransmission
    /// timeout). The chain's states depend on the draws only, never on which direction took a step, so the
    /// number of stalls of a client is fixed by its number of packets.
    @inline(__always)
    func lossStep() -> Bool {
        guard shape.goodToBad > 0 else { return false }
        let draw = lossRandom.next()
        if lossBad {
            if draw < shape.badToGood { lossBad = false }
        } else if draw < shape.goodToBad {
            lossBad = true
        }
        if lossBad { counters.stalls &+= 1 }
        return lossBad
    }

    /// When `count` bytes queued now in one direction leave the emulated link: after the token bucket let them
    /// through, the one-way delay and any stall, and never before the chunk queued before them. `packets` is
    /// the number of MQTT packets starting in these bytes (one loss step each).
    /// Returns the release time and whether the send stalled.
    @inline(__always)
    func releaseTime(count: Int, up isUp: Bool, now: UInt64, packets: Int = 1) -> (UInt64, Bool) {
        let nanosPerByte = isUp ? shape.upNanosPerByte : shape.downNanosPerByte
        var linkFreeAt = isUp ? up.linkFreeAt : down.linkFreeAt
        var ready = now
        if nanosPerByte > 0 {
            let earliest = now > shape.burstNanoseconds ? now - shape.burstNanoseconds : 0
            let start = max(earliest, linkFreeAt)
            linkFreeAt = start &+ (UInt64(count) &* nanosPerByte) >> 16
            ready = max(linkFreeAt, now)
        }
        var release = ready &+ delay(up: isUp)
        var stalled = false
        for _ in 0..<packets where lossStep() { stalled = true }
        if stalled { release &+= shape.retransmissionTimeout }
        if isUp {
            release = max(release, up.lastRelease)
            up.lastRelease = release
            up.linkFreeAt = linkFreeAt
        } else {
            release = max(release, down.lastRelease)
            down.lastRelease = release
            down.linkFreeAt = linkFreeAt
        }
        return (release, stalled)
    }

    /// How many MQTT packets start in `bytes`, the next piece of the inbound stream (the position is kept
    /// across calls, so a packet cut by two reads is counted once).
    @inline(__always)
    func countPacketStarts(_ bytes: UnsafeRawBufferPointer) -> Int {
        var starts = 0
        var position = 0
        let count = bytes.count
        while position < count {
            if downRemaining > 0 {
                let skip = min(downRemaining, count - position)
                downRemaining -= skip
                position += skip
                continue
            }
            if !downInHeader {
                // A fixed header's first byte: a new packet.
                starts += 1
                downInHeader = true
                downHeaderLength = 0
                downHeaderShift = 0
                position += 1
                continue
            }
            let byte = bytes[position]
            position += 1
            downHeaderLength |= Int(byte & 0x7F) << downHeaderShift
            downHeaderShift += 7
            if byte & 0x80 == 0 || downHeaderShift > 21 {
                downInHeader = false
                downRemaining = downHeaderLength
            }
        }
        return starts
    }

    func noteReleased(packetID: UInt16, releasedAt: UInt64) {
        guard !released.isEmpty, packetID != 0 else { return }
        released[releasedNext] = (packetID, releasedAt)
        releasedNext = (releasedNext + 1) & 31
    }

    /// The release time of the latest send of the PUBLISH with `packetID` on this connection, if still known.
    func releaseOfPublish(packetID: UInt16) -> UInt64? {
        guard !released.isEmpty, packetID != 0 else { return nil }
        for offset in 1...32 {
            let entry = released[(releasedNext - offset) & 31]
            if entry.0 == packetID && entry.1 != 0 { return entry.1 }
        }
        return nil
    }

    /// A new connection: nothing of the old one is in flight any more.
    func reset() {
        up.clear()
        down.clear()
        delivering = false
        held = false
        readPaused = false
        connectPending = false
        downRemaining = 0
        downInHeader = false
        for index in released.indices { released[index] = (0, 0) }
    }
}
