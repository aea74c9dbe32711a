import CLinux
import Dispatch
import FleetMetrics
import FleetTransport
import Glibc
import MQTTCodec
import MQTTSession

/// One lane: a serial DispatchQueue that owns its clients outright. All client state, the timing wheel and the
/// metrics are touched only on `queue`, so the per-message path takes no lock.
///
/// Readiness: one epoll instance per lane holds every socket of the lane and a timerfd armed for the wheel's
/// next deadline: far less memory per client than a dispatch source per socket (docs/performance.md, "Figures
/// behind engine defaults"; docs/architecture.md for the lane's place in the engine). By default
/// a thread per lane blocks in epoll_wait and runs each turn on the queue with the events it got (`LaneDriver`);
/// while the lane receives heavily it pauses between turns (`EngineConfiguration.receiveCoalescing`).
/// A turn: read the clock once, handle the ready events, fire due timers, flush every connection written to (in
/// one io_uring submission when the kernel allows it: see `SendRing`).
final class Lane: @unchecked Sendable {
    let index: Int
    let queue: DispatchQueue
    let fleets: [FleetRuntime]
    let configuration: EngineConfiguration
    var clients: [SimulatedClient]
    var wheel: TimingWheel
    var metrics: LaneMetrics
    var pacers: [ConnectPacer]
    /// Connects in flight per broker address (`BrokerConnectWindows`), over the lane's fleets.
    var connectWindows: BrokerConnectWindows
    let epoll: Epoll
    let timer: Int32
    var armedDeadline: UInt64 = .max
    private var source: DispatchSourceRead?
    var threadDriver: LaneThread?

    /// Read scratch shared by the lane's clients: only partial packets are kept per client.
    var readBuffer: UnsafeMutableRawBufferPointer
    /// TLS plaintext records of one read (16 KiB: a whole record), and the stream bytes each layer handed on.
    let tlsScratch: UnsafeMutableRawBufferPointer
    var tlsPlaintext: [UInt8] = []
    var webSocketPayload: [UInt8] = []
    /// The first-size blocks of the clients' outbound buffers, lent while a client has bytes to write.
    let outboundBlocks: OutboundBlockPool
    /// The in-flight windows' slot arrays, lent to its clients' sessions while they have messages in flight.
    let windowStorage: MQTTWindowStoragePool
    static let outboundBlockSize = 2048
    /// Session output of one call, appended to the client's outbound buffer afterwards.
    var scratch = MQTTByteBuffer(capacity: 64 * 1024)
    /// Requests received during one session call, answered right after it (the session cannot publish while
    /// it is handing over a message): their bytes in `replyArena`, reused so steady state allocates little.
    var pendingReplies: [PendingReply] = []
    /// Filters a broker refused, by client: left out when the lane subscribes the client again
    /// (`subscriptions(of:)`). Empty unless a SUBACK refused something.
    var refusedFilters: [Int: [String]] = [:]
    var replyArena: [UInt8] = []
    /// Per global stream id: false for streams without delivery accounting (fixed text, requests), whose
    /// copies a subscriber receives are not tracked. Set by the engine before the run.
    var streamTracked: [Bool] = []
    /// Rendered template payloads, one at a time.
    var renderBuffer: [UInt8] = []
    /// Wall clock minus monotonic clock (ns) at lane creation, for templates' `{ts_ms}`.
    let wallClockOffset: UInt64
    /// The run id written into every header; arrivals with another one are foreign.
    let runID: UInt64
    /// Every stream's published count, shared by the lanes (set by the engine before the run).
    var progress = StreamProgress(streams: 0)
    /// Clients with bytes to flush at the end of the turn.
    var dirty: [Int32] = []
    /// The end-of-turn writes in one system call (`EngineConfiguration.batchedSends`); nil: one send(2) each.
    let sendRing: SendRing?
    /// Why `sendRing` is nil although batched sends were asked for (no io_uring in this kernel, or forbidden).
    let sendRingError: SystemError?
    /// Multishot receives for the lane's plain TCP sockets (`EngineConfiguration.ringReceives`); nil: epoll and
    /// recv(2). See `LaneReceiveRing`.
    let receiveRing: LaneReceiveRing?
    /// Why `receiveRing` is nil although ring receives were asked for (no io_uring, forbidden, or too old a kernel).
    let receiveRingError: SystemError?
    /// How this lane's writes went out (a ring that failed mid-run fell back to send(2)).
    var sendPath: SendPath {
        guard let sendRing else { return .send }
        return sendRing.isUsable ? .ioUring : .mixed
    }
    /// Connected clients across every lane (exact run-wide peaks), shared by the engine's lanes.
    let gauges: ConnectedGauges
    var now: UInt64 = 0
    /// PUBLISH packets received in the current turn, and the time since the turn before began (see
    /// `EngineConfiguration.receiveCoalescing`).
    var messagesThisTurn = 0
    var sinceLastTurn: UInt64 = 0
    /// When the current turn began (`now` moves on within a turn: it is read again after every socket read).
    var turnStartedAt: UInt64 = 0
    /// Whether the lane receives a steady stream (`pauseUntilAfterTurn`, `EngineConfiguration.receiveBatching`).
    var receiveRate = ReceiveRateWindow()

    /// Run phase, set by the engine through `queue.async`.
    var publishing = false
    /// Segmented runs: a SUBACK after this (monotonic ns, the segments' common publishing start) is entitled
    /// to other segments' streams only partly (`SimulatedClient.remoteEntitlementWhole`).
    var remoteEntitlementDeadline: UInt64 = .max
    var stopping = false
    var readyReported = false
    var onReady: (@Sendable (Int) -> Void)?
    /// Receives the lane's snapshot once a second (called on the lane's queue; it must only enqueue).
    var onSnapshot: (@Sendable (LaneSnapshot) -> Void)?
    var snapshotInterval: UInt64 = 1_000_000_000
    var nextSnapshotAt: UInt64 = .max
    var snapshotIndex = 0
    /// Churn faults in progress on this lane, and the earliest next churn.
    var churns: [ChurnPlan] = []
    var nextChurnAt: UInt64 = .max
    /// The lane's clients of each fleet (lane client indices), for picking fault victims.
    let fleetClients: [[Int]]
    var brokers: [SocketAddress]
    var sourceAddresses: [SocketAddress]

    static let timerToken: UInt64 = .max
    /// Some fleet of the run emulates network conditions: subscribers then also record the broker-side
    /// end-to-end latency (`Lane+Network`), whoever published.
    let networkEmulation: Bool

    init(index: Int, fleets: [FleetRuntime], clients: [SimulatedClient], windowStorage: MQTTWindowStoragePool,
         configuration: EngineConfiguration, laneCount: Int, start: UInt64, gauges: ConnectedGauges) throws {
        self.index = index
        self.windowStorage = windowStorage
        self.gauges = gauges
        self.queue = DispatchQueue(label: "fleetbench.lane.\(index)", qos: .userInitiated)
        self.fleets = fleets
        self.configuration = configuration
        // Idle blocks kept: as many as one turn can dirty (the epoll batch), at most one per client.
        let outboundBlocks = OutboundBlockPool(blockSize: Self.outboundBlockSize, maximumFree: min(clients.count, 1024))
        self.outboundBlocks = outboundBlocks
        // The buffers are objects: lending them the pool leaves the array (still shared with the engine) as it is.
        for client in clients { client.outbound.borrowBlocks(from: outboundBlocks) }
        self.clients = clients
        self.metrics = LaneMetrics(fleetCount: fleets.count, start: start)
        var fleetSizes = Array(repeating: 0, count: fleets.count)
        for client in clients { fleetSizes[client.fleet] += 1 }
        var fleetClients: [[Int]] = fleetSizes.map { size in
            var positions: [Int] = []
            positions.reserveCapacity(size)  // made at its final size, not grown by doubling
            return positions
        }
        for (position, client) in clients.enumerated() { fleetClients[client.fleet].append(position) }
        self.fleetClients = fleetClients
        self.brokers = configuration.brokers
        self.sourceAddresses = configuration.sourceAddresses
        // Four more timers per client only where some client emulates a network: others pay nothing for it.
        let emulatesNetwork = clients.contains { $0.network != nil }
        self.networkEmulation = configuration.fleets.contains { $0.network != nil }
        self.wheel = TimingWheel(clientCapacity: max(clients.count, 1),
                                 kindsPerClient: emulatesNetwork ? TimerKind.countWithNetwork : TimerKind.count,
                                 tickNanoseconds: configuration.tickNanoseconds, origin: start)
        self.pacers = fleets.map { fleet in
            let rate = fleet.configuration.connectRate.map { $0 / Double(laneCount) }
            return ConnectPacer(ratePerSecond: rate, burst: Self.connectBurst(ratePerSecond: rate),
                                maxInFlight: max(1, fleet.configuration.maxConnectsInFlight / laneCount), now: start)
        }
        let share = Engine.connectWindowShare(configuration: configuration, laneCount: laneCount)
        self.connectWindows = BrokerConnectWindows(brokers: clients.map { ($0.broker, share($0.broker, $0.endpoint != nil)) })
        self.epoll = try Epoll(capacity: 1024)
        let timer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard timer >= 0 else { throw SystemError(call: "timerfd_create", errno: errno) }
        self.timer = timer
        try epoll.add(timer, events: .readable, token: Self.timerToken)
        if configuration.batchedSends {
            do {
                self.sendRing = try SendRing(capacity: 1024)
                self.sendRingError = nil
            } catch {
                self.sendRing = nil
                self.sendRingError = error
            }
        } else {
            self.sendRing = nil
            self.sendRingError = nil
        }
        (self.receiveRing, self.receiveRingError) = Self.makeReceiveRing(configuration, clients: clients.count)
        self.readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        self.tlsScratch = .allocate(byteCount: 16 * 1024, alignment: 16)
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let wallNanoseconds = UInt64(wall.tv_sec) &* 1_000_000_000 &+ UInt64(wall.tv_nsec)
        self.wallClockOffset = wallNanoseconds &- MonotonicClock.now()
        self.runID = configuration.runID
        self.now = start
        self.turnStartedAt = start
    }

    /// Connects one lane may start back to back: 10 ms worth at its rate, at least 2. Timers fire on ticks (up to
    /// 1 ms) and a paced connect is retried at the next tick after its slot, so each start comes up to a tick late;
    /// with no tolerance every late start pushed all later ones (a 1,000/s ramp ran at about 600/s, and at
    /// 490/s once every client was due). The long-run rate stays the configured one.
    static func connectBurst(ratePerSecond: Double?) -> Int {
        guard let ratePerSecond, ratePerSecond > 0 else { return 1 }
        return max(2, Int((ratePerSecond * 0.010).rounded()))
    }

    deinit {
        readBuffer.deallocate()
        tlsScratch.deallocate()
        Glibc.close(timer)
    }

    /// Starts watching the epoll fd and schedules every client's first connect.
    func start(origin: UInt64) {
        metrics = LaneMetrics(fleetCount: fleets.count, start: origin)
        nextSnapshotAt = origin &+ snapshotInterval
        if configuration.laneDriver == .thread, (try? startThreadDriver()) != nil {
            // Started; a failure falls back to the dispatch source below.
        } else {
            let source = DispatchSource.makeReadSource(fileDescriptor: epoll.fileDescriptor, queue: queue)
            source.setEventHandler { [unowned self] in self.turn() }
            self.source = source
            source.resume()
        }
        queue.async { [self] in
            now = MonotonicClock.now()
            for client in clients.indices {
                wheel.schedule(client: client, kind: TimerKind.connect,
                               deadline: firstConnectTime(client, origin: origin))
            }
            turn()
        }
    }

    // MARK: The turn

    /// `prefetched`: the events the driver thread's blocking wait returned, handled first, so a turn woken by
    /// the driver costs one epoll_wait, not two. Only a full list means more may be waiting.
    func turn(prefetched: EpollReadyList? = nil, ringDriven: Bool = false) {
        let previous = turnStartedAt
        now = MonotonicClock.now()
        turnStartedAt = now
        sinceLastTurn = now &- previous
        messagesThisTurn = 0
        threadDriver?.turns.add(1, ordering: .relaxed)
        if ringDriven {
            ringTurnReads()
        } else if let prefetched {
            handle(prefetched.count, token: prefetched.token(at:), flags: prefetched.events(at:))
            if prefetched.count == prefetched.capacity { drainEvents() }
        } else {
            if receiveRing != nil { handleRingCompletions() }
            drainEvents()
        }
        fireTimers()
        emitDueSnapshots()
        if now >= nextChurnAt { runDueChurns() }
        flushDirty()
        armTimer()
        if receiveRing != nil { submitRingRequests() }
        checkReady()
    }

    private func drainEvents() { _ = drainEventsCounting() }

    /// Returns how many events were handled.
    func drainEventsCounting() -> Int {
        var total = 0
        // Bounded: a lane that is flooded still gets to its timers every turn.
        for _ in 0..<8 {
            let count: Int
            do { count = try epoll.wait(timeoutMilliseconds: 0) } catch { return total }
            if count == 0 { return total }
            total += count
            handle(count, token: epoll.token(at:), flags: epoll.events(at:))
            if count < epoll.capacity { return total }
        }
        return total
    }

    @inline(__always)
    private func handle(_ count: Int, token: (Int) -> UInt64, flags: (Int) -> EpollEvents) {
        for event in 0..<count {
            let token = token(event)
            if token == Self.wakeToken {
                _ = try? threadDriver?.wake.drain()
                continue
            }
            if token == Self.timerToken {
                var expirations: UInt64 = 0
                _ = Glibc.read(timer, &expirations, 8)
                armedDeadline = .max
                continue
            }
            handleSocketEvent(client: Int(token), flags: flags(event))
        }
    }

    private func fireTimers() {
        wheel.advance(to: now)
        while let expired = wheel.popExpired() {
            switch TimerKind(wheelKind: expired.kind) {
            case .connect:
                // The shared entry: the connect timer of an idle client, otherwise the connect timeout.
                if clients[expired.client].phase == .idle { startConnect(expired.client) } else { connectTimedOut(expired.client) }
            case .session: sessionDeadline(expired.client)
            case .publish: publishDue(expired.client)
            case .connectTimeout: connectTimedOut(expired.client)
            case .lowWatermarkProbe: probeLowWatermark(expired.client)
            case .networkOut: releaseOutbound(expired.client)
            case .networkIn: releaseInbound(expired.client)
            case .networkDrop: networkDropDue(expired.client)
            case .networkOutage: networkOutageDue(expired.client)
            }
        }
    }

    func flushDirty() {
        // One connection to write gains nothing from the ring: a plain send(2) is the cheaper call.
        if dirty.count > 1, let sendRing, sendRing.isUsable {
            flushBatched(dirty, ring: sendRing)
        } else {
            for client in dirty { flush(Int(client)) }
        }
        dirty.removeAll(keepingCapacity: true)
    }

    /// Arms the timerfd for the wheel's next deadline (only when it moved earlier or fired).
    private func armTimer() {
        let next = min(wheel.nextExpiration() ?? .max, nextSnapshotAt, nextChurnAt)
        if next == .max || next >= armedDeadline { return }
        armedDeadline = next
        var spec = itimerspec()
        let target = max(next, now &+ 1)
        spec.it_value.tv_sec = Int(target / 1_000_000_000)
        spec.it_value.tv_nsec = Int(target % 1_000_000_000)
        timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME), &spec, nil)
    }

    // MARK: Ready barrier

    private func checkReady() {
        guard !readyReported else { return }
        for client in clients where !client.isReady { return }
        readyReported = true
        onReady?(index)
    }
}

/// Timer kinds per client in the lane's wheel. `wheelIndex` is the wheel's kind index: the connect timer and the
/// connect timeout share one entry, since a client waits for at most one of them (the connect timer only while
/// idle, the timeout only from the TCP connect to the CONNACK; every change of phase between them cancels or
/// moves the entry), and the lane tells them apart by the client's phase when it fires. 4 entries per client
/// instead of 5: 28 bytes less in each (docs/performance.md, "Memory per vehicle, fourth pass").
enum TimerKind: Int, CaseIterable {
    case connect = 0
    case session = 1
    case publish = 2
    case lowWatermarkProbe = 3
    /// Emulated network conditions (`Lane+Network`): only lanes with a client that has a profile have these.
    case networkOut = 4
    case networkIn = 5
    case networkDrop = 6
    case networkOutage = 7
    /// In the wheel as `connect` (`wheelIndex`).
    case connectTimeout = 8

    /// Wheel entries per client in a lane without emulated networks (the network kinds come last and are left
    /// out), and with them.
    static let count = 4
    static let countWithNetwork = 8

    /// The wheel's kind index.
    @inline(__always)
    var wheelIndex: Int { self == .connectTimeout ? TimerKind.connect.rawValue : rawValue }

    /// The kind of an entry the wheel handed out: only kinds scheduled through `TimerKind` are in the wheel.
    /// The shared connect entry comes out as `.connect` (`Lane.fireTimers` looks at the phase).
    @inline(__always)
    init(wheelKind: Int) {
        guard wheelKind < TimerKind.connectTimeout.rawValue, let kind = TimerKind(rawValue: wheelKind) else {
            preconditionFailure("timer kind \(wheelKind) unknown")
        }
        self = kind
    }
}

/// The wheel's calls with a `TimerKind` (the wheel itself knows kinds only as indices).
extension TimingWheel {
    @inline(__always)
    mutating func schedule(client: Int, kind: TimerKind, deadline: UInt64) {
        schedule(client: client, kind: kind.wheelIndex, deadline: deadline)
    }

    @inline(__always)
    @discardableResult
    mutating func cancel(client: Int, kind: TimerKind) -> Bool {
        cancel(client: client, kind: kind.wheelIndex)
    }

    @inline(__always)
    func deadline(client: Int, kind: TimerKind) -> UInt64? {
        deadline(client: client, kind: kind.wheelIndex)
    }
}
