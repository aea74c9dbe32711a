import FleetMetrics
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

private let second: UInt64 = 1_000_000_000
private let ms: UInt64 = 1_000_000

/// One client as the lane drives it, without sockets: the connection machine, a real MQTT session, a manual
/// clock and the client's timers. What the machine asks for is applied here the way `Lane` applies it; the
/// bytes the session writes are kept for the test to read, and the broker's answers are fed in as bytes.
private struct ClientUnderTest {
    var machine = ClientConnectionMachine()
    var session: MQTTClientSession
    var pacer = ConnectPacer(ratePerSecond: nil, maxInFlight: 1, now: 0)
    var random = SeededRandom(seed: 7)
    var policy: ReconnectPolicy
    var stopping = false
    let connectTimeout: UInt64 = 12 * second
    let subscriptions: [MQTTSubscription]
    var now: UInt64 = 0
    var timers: [TimerKind: UInt64] = [:]
    var output = MQTTByteBuffer(capacity: 256)
    /// What the lane would have done, in order.
    var socketsOpened: [UInt64] = []
    var teardowns: [Teardown] = []
    var connectFailures: [ConnectFailureReason: Int] = [:]
    var disconnects: [DisconnectReason: Int] = [:]
    var connectedAt: [UInt64] = []
    var socketOpen = false

    /// `keepsSubscriptions: false`: as the engine's clients, the lane (here: the test) subscribes again when
    /// the broker lost the session.
    init(policy: ReconnectPolicy, keepAliveSeconds: UInt16 = 60, subscriptions: [MQTTSubscription] = [],
         keepsSubscriptions: Bool = true) {
        self.policy = policy
        self.subscriptions = subscriptions
        let timeouts = MQTTAckTimeouts(connAck: 10 * second, pingResp: 8 * second)
        session = MQTTClientSession(settings: MQTTSessionSettings(version: .v3_1_1, cleanStart: true,
                                                                  keepAliveSeconds: keepAliveSeconds, timeouts: timeouts),
                                    clientID: "car-1", keepsSubscriptions: keepsSubscriptions)
        timers[.connect] = 0
    }

    var reconnect: ClientConnectionMachine.Reconnect { .init(policy: policy, stopping: stopping) }

    /// Bytes the session wrote since the last call.
    mutating func written() -> [UInt8] {
        let bytes = output.readableBytes
        output.clear()
        return bytes
    }

    /// Moves the clock to the earliest timer (not past `limit`) and fires it; false when none is due by then.
    @discardableResult
    mutating func fireNextTimer(until limit: UInt64 = .max) -> Bool {
        guard let (kind, deadline) = timers.min(by: { ($0.value, $0.key.rawValue) < ($1.value, $1.key.rawValue) }),
              deadline <= limit else { return false }
        timers[kind] = nil
        now = max(now, deadline)
        switch kind {
        case .connect: connectTimerFired()
        case .connectTimeout:
            switch machine.connectTimeoutFired(now: now, reconnect: reconnect, random: &random) {
            case .none, .handshakeTimedOut: break
            case .tcpTimedOut(let teardown), .connAckTimedOut(let teardown): apply(teardown)
            }
        case .session:
            var events = Events()
            session.checkDeadlines(now: now, output: &output, events: &events)
            handle(events)
        default: Issue.record("timer \(kind) is not the connection's")
        }
        scheduleSessionDeadline()
        return true
    }

    /// Fires every timer due by `limit`, in deadline order, then moves the clock to `limit`.
    mutating func run(until limit: UInt64) {
        while fireNextTimer(until: limit) {}
        now = max(now, limit)
    }

    mutating func connectTimerFired() {
        switch machine.connectTimerFired(now: now, stopping: stopping, pacer: &pacer, tick: ms,
                                         connectTimeout: connectTimeout) {
        case .none: break
        case .paced(let retryAt): timers[.connect] = retryAt
        case .open(_, let timeoutAt):
            socketsOpened.append(now)
            socketOpen = true
            timers[.connectTimeout] = timeoutAt
        }
    }

    /// The TCP connect completed (a plain endpoint: CONNECT goes out at once).
    mutating func tcpEstablished() {
        timers[.connectTimeout] = machine.connectWritten(now: now, connAckTimeout: session.settings.timeouts.connAck)
        session.connect(now: now, into: &output)
        scheduleSessionDeadline()
    }

    /// The broker's bytes arrive at `now`.
    mutating func receive(_ bytes: [UInt8]) {
        var decoder = MQTTDecoder(version: .v3_1_1)
        decoder.feed(bytes)
        var events = Events()
        session.receive(from: &decoder, now: now, output: &output, events: &events)
        handle(events)
        scheduleSessionDeadline()
    }

    /// The socket reported end of stream or an error.
    mutating func lose(_ reason: DisconnectReason) {
        switch machine.linkLost(reason, now: now, reconnect: reconnect, random: &random) {
        case .ignored, .handshakeInterrupted: break
        case .tearDown(let teardown): apply(teardown)
        }
    }

    mutating func handle(_ events: Events) {
        if let code = events.refused {
            apply(machine.connAckRefused(code: code, now: now, reconnect: reconnect, random: &random))
            return
        }
        if let sessionPresent = events.connected,
           let connected = machine.connAckAccepted(sessionPresent: sessionPresent, now: now,
                                                   hasSubscriptions: !subscriptions.isEmpty,
                                                   resubscribes: !session.keepsSubscriptions) {
            timers[.connectTimeout] = nil
            pacer.finished()
            connectedAt.append(now)
            if connected.subscribe { _ = session.subscribe(subscriptions, now: now, into: &output) }
        }
        if events.subscribed { _ = machine.subAckReceived() }
        if let reason = events.close { lose(reason) }
    }

    mutating func scheduleSessionDeadline() {
        timers[.session] = socketOpen ? session.nextDeadline() : nil
    }

    /// As `Lane.tearDown`.
    mutating func apply(_ teardown: Teardown) {
        teardowns.append(teardown)
        switch teardown.record {
        case .connectFailure(let reason): connectFailures[reason, default: 0] += 1
        case .disconnect(let reason): disconnects[reason, default: 0] += 1
        case .nothing: break
        }
        if teardown.released == .connectSlot { pacer.finished() }
        socketOpen = false
        var discard = DiscardingSessionSink()
        session.connectionLost(now: now, events: &discard)
        timers[.session] = nil
        timers[.connectTimeout] = nil
        if case .reconnect(let at) = teardown.next { timers[.connect] = at }
    }
}

/// The session's events as `LaneSessionSink` notes them.
private struct Events: MQTTSessionEventHandler {
    var connected: Bool?
    var refused: UInt8?
    var subscribed = false
    var close: DisconnectReason?

    mutating func sessionEvent(_ event: MQTTSessionEvent) {
        switch event {
        case .connected(let sessionPresent): connected = sessionPresent
        case .connectionRefused(let code, _): refused = code.rawValue
        case .subscribed: subscribed = true
        case .closeConnection(let reason): close = DisconnectReason(sessionClose: reason)
        case .serverDisconnected(let code, _): close = .serverDisconnect(reasonCode: code.rawValue)
        default: break
        }
    }

    mutating func messageReceived(
        _ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) {}
}

/// CONNACK (3.1.1): session present flag and return code.
private func connAck(sessionPresent: Bool = false, code: UInt8 = 0) -> [UInt8] {
    [0x20, 0x02, sessionPresent ? 1 : 0, code]
}

private let mobileApp = ReconnectPolicy.immediateThenInterval(retries: 5, interval: 4 * second)

@Suite("ClientConnectionMachine: one client's connection lifecycle on a manual clock, no sockets")
struct ClientConnectionMachineTests {
    @Test("a broker that never answers the TCP connect: a timeout every 12 s, reconnects 5 at once, then every 4 s")
    func connectTimeoutThenMobileAppPolicy() {
        var client = ClientUnderTest(policy: mobileApp)
        client.run(until: 130 * second)
        // Connects at 0, then right after each timeout for 5 retries, then 4 s after each timeout.
        #expect(client.socketsOpened == [0, 12, 24, 36, 48, 60, 76, 92, 108, 124].map { $0 * second })
        #expect(client.connectFailures == [.timeout: 9])
        #expect(client.teardowns.allSatisfy { $0.released == .connectSlot && $0.close == .clean })
        #expect(client.machine.attempt == 9)
        #expect(client.machine.phase == .connecting)
        #expect(client.pacer.inFlight == 1)  // the 10th attempt; every failed one gave its slot back
        #expect(!client.machine.isReady)
    }

    @Test("an attempt limit: the last timeout finishes the client, which then counts as ready")
    func connectTimeoutGivesUp() {
        var client = ClientUnderTest(policy: .immediateThenInterval(retries: 1, interval: 4 * second, maxAttempts: 2))
        client.run(until: 200 * second)
        #expect(client.socketsOpened == [0, 12 * second, 28 * second])
        #expect(client.connectFailures == [.timeout: 3])
        #expect(client.teardowns.map(\.next) == [.reconnect(at: 12 * second), .reconnect(at: 28 * second), .finish])
        #expect(client.machine.phase == .finished)
        #expect(client.machine.isReady)
        #expect(client.timers.isEmpty)
        #expect(client.pacer.inFlight == 0)
    }

    @Test("CONNACK refused: counted per return code, and the client reconnects by its policy instead of spinning")
    func connAckRefused() {
        var client = ClientUnderTest(policy: mobileApp)
        var answered = 0
        // The broker answers every CONNECT 1 ms after it: not authorized (5), then bad credentials (4), by turns.
        while client.now < 20 * second {
            guard client.fireNextTimer(until: 20 * second) else { break }
            guard client.machine.phase == .connecting else { continue }
            client.tcpEstablished()
            #expect(client.written() == [0x10, 0x11, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3C,
                                         0x00, 0x05, 0x63, 0x61, 0x72, 0x2D, 0x31])
            client.now += ms
            client.receive(connAck(code: answered % 2 == 0 ? 5 : 4))
            answered += 1
        }
        // 0..5 ms: the first and 5 immediate retries; then one every 4 s after the refusal before it.
        let expected: [UInt64] = [0, 1 * ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms,
                                  4 * second + 6 * ms, 8 * second + 7 * ms, 12 * second + 8 * ms, 16 * second + 9 * ms]
        #expect(client.socketsOpened == expected)
        // Counted by the MQTT 5 reason code the 3.1.1 return code maps to (0x87 not authorized, 0x86 bad credentials).
        #expect(client.connectFailures == [.connackRefused(code: 0x87): 5, .connackRefused(code: 0x86): 5])
        #expect(client.connectedAt == [])
        #expect(client.machine.attempt == 10)
        #expect(client.pacer.inFlight == 0)
        #expect(client.timers == [.connect: 20 * second + 10 * ms])
    }

    @Test("a missing PINGRESP ends the connection at its deadline; the reconnect connects again and resets the attempts")
    func keepAliveTimeout() {
        var client = ClientUnderTest(policy: mobileApp, keepAliveSeconds: 10)
        client.fireNextTimer()
        client.tcpEstablished()
        _ = client.written()
        client.now = 5 * ms
        client.receive(connAck())
        #expect(client.connectedAt == [5 * ms])
        #expect(client.machine.phase == .connected)
        #expect(client.machine.isReady)  // no subscriptions: ready at CONNACK
        // PINGREQ a keepalive after CONNECT; no PINGRESP within 8 s closes the connection.
        client.run(until: 10 * second - 1)
        #expect(client.written() == [])
        client.run(until: 10 * second)
        #expect(client.written() == [0xC0, 0x00])
        client.run(until: 18 * second - 1)
        #expect(client.teardowns == [])
        client.run(until: 18 * second)
        #expect(client.teardowns == [Teardown(record: .disconnect(.ackTimeout(.pingresp)), released: .connection,
                                              close: .clean, next: .reconnect(at: 18 * second))])
        #expect(client.disconnects == [.ackTimeout(.pingresp): 1])
        #expect(client.machine.attempt == 1)
        // The reconnect went out at once (first retry, in the same instant); it connects.
        #expect(client.socketsOpened == [0, 18 * second])
        client.tcpEstablished()
        client.now += ms
        client.receive(connAck())
        #expect(client.connectedAt == [5 * ms, 18 * second + ms])
        #expect(client.machine.attempt == 0)
        #expect(client.timers == [.session: 28 * second])  // the next PINGREQ: a keepalive after this CONNECT
    }

    @Test("a tunnel cuts a subscribed client's link: RST, reconnect after the outage, the session (or the lane, when the session keeps no subscriptions) subscribes again",
          arguments: [true, false])
    func tunnelThenResubscribe(sessionKeepsSubscriptions: Bool) {
        let filter = MQTTSubscription(filter: "cmd/1", qos: .atLeastOnce)
        var client = ClientUnderTest(policy: mobileApp, subscriptions: [filter], keepsSubscriptions: sessionKeepsSubscriptions)
        let subscribe: [UInt8] = [0x82, 0x0A, 0x00, 0x01, 0x00, 0x05, 0x63, 0x6D, 0x64, 0x2F, 0x31, 0x01]
        client.fireNextTimer()
        client.tcpEstablished()
        _ = client.written()
        client.now = 2 * ms
        client.receive(connAck())
        #expect(client.written() == subscribe)
        #expect(!client.machine.isReady)
        client.now = 3 * ms
        client.receive([0x90, 0x03, 0x00, 0x01, 0x01])  // SUBACK, granted QoS 1
        #expect(client.machine.isReady)
        #expect(client.machine.subscribeSentAt == 2 * ms)

        client.now = 100 * second
        let cut = client.machine.linkCut(.tunnel, outage: 30 * second, now: client.now, reconnect: client.reconnect,
                                         random: &client.random)
        #expect(cut == Teardown(record: .disconnect(.tunnel), released: .connection, close: .abortive,
                                next: .reconnect(at: 130 * second)))
        client.apply(cut!)
        #expect(client.machine.phase == .idle)
        // A second cut finds nothing connected.
        #expect(client.machine.linkCut(.tunnel, outage: 30 * second, now: client.now, reconnect: client.reconnect,
                                       random: &client.random) == nil)

        client.fireNextTimer()
        #expect(client.socketsOpened == [0, 130 * second])
        client.tcpEstablished()
        _ = client.written()
        client.now = 130 * second + 4 * ms
        client.receive(connAck(sessionPresent: false))
        // The broker lost the session: the session subscribes again by itself (packet id 2), or the lane does
        // for a session that keeps no subscriptions; the same bytes either way.
        #expect(client.written() == [0x82, 0x0A, 0x00, 0x02, 0x00, 0x05, 0x63, 0x6D, 0x64, 0x2F, 0x31, 0x01])
        #expect(client.machine.subscribeSentAt == 130 * second + 4 * ms)
        client.receive([0x90, 0x03, 0x00, 0x02, 0x01])
        #expect(client.machine.subAckReceived() == nil)  // ready since the first SUBACK: no second subscribe latency
        #expect(client.disconnects == [.tunnel: 1])
        #expect(client.machine.attempt == 0)
    }

    @Test("an emulated outage under the policy none: the client is cut and finishes, counted ready")
    func outageWithoutReconnect() {
        var client = ClientUnderTest(policy: .none)
        client.fireNextTimer()
        client.tcpEstablished()
        client.receive(connAck())
        client.now = 7 * second
        let cut = client.machine.linkCut(.networkOutage, outage: 3 * second, now: client.now,
                                         reconnect: client.reconnect, random: &client.random)
        #expect(cut == Teardown(record: .disconnect(.networkOutage), released: .connection, close: .abortive, next: .finish))
        #expect(client.machine.phase == .finished)
        #expect(client.machine.isReady)
    }

    @Test("churn: a clean close and an immediate reconnect that is a reconnect but not a failed attempt")
    func churn() {
        var client = ClientUnderTest(policy: mobileApp)
        #expect(client.machine.churned(now: 0) == nil)  // not connected
        client.fireNextTimer()
        client.tcpEstablished()
        client.receive(connAck())
        client.now = 5 * second
        let churn = client.machine.churned(now: client.now)
        #expect(churn == Teardown(record: .disconnect(.churn), released: .connection, close: .clean,
                                  next: .reconnect(at: 5 * second)))
        client.apply(churn!)
        #expect(client.machine.attempt == 0)
        #expect(client.machine.connectTimerFired(now: 5 * second, stopping: false, pacer: &client.pacer, tick: ms,
                                                 connectTimeout: 12 * second)
                == .open(isReconnect: true, timeoutAt: 17 * second))
    }

    @Test("the end of the run: a connected client says goodbye, an attempt gives its slot back, nothing reconnects")
    func runEnded() {
        var connected = ClientUnderTest(policy: mobileApp)
        connected.fireNextTimer()
        connected.tcpEstablished()
        connected.receive(connAck())
        #expect(connected.machine.runEnded() == Teardown(record: .disconnect(.clientInitiated), released: .connection,
                                                          close: .clean, next: .finish))
        var connecting = ClientUnderTest(policy: mobileApp)
        connecting.fireNextTimer()
        #expect(connecting.machine.runEnded() == Teardown(record: .nothing, released: .connectSlot, close: .clean,
                                                           next: .finish))
        var idle = ClientUnderTest(policy: mobileApp)
        #expect(idle.machine.runEnded() == Teardown(record: .nothing, released: .nothing, close: .clean, next: .finish))
        #expect(idle.machine.connectTimerFired(now: 0, stopping: false, pacer: &idle.pacer, tick: ms,
                                               connectTimeout: 12 * second) == .none)
        // A connection lost while the run ends is not reconnected.
        var stopping = ClientUnderTest(policy: mobileApp)
        stopping.fireNextTimer()
        stopping.tcpEstablished()
        stopping.receive(connAck())
        stopping.stopping = true
        stopping.lose(.closedByPeer)
        #expect(stopping.teardowns.map(\.next) == [.finish])
        #expect(stopping.machine.phase == .finished)
        #expect(stopping.machine.attempt == 0)
    }

    @Test("losses before CONNACK are failed connects, by cause; a handshake's loss is the lane's to word")
    func lossesBeforeConnAck() {
        func failure(_ reason: DisconnectReason, afterConnect: Bool) -> ClientConnectionMachine.LinkLost {
            var client = ClientUnderTest(policy: mobileApp)
            client.fireNextTimer()
            if afterConnect { client.tcpEstablished() }
            return client.machine.linkLost(reason, now: 0, reconnect: client.reconnect, random: &client.random)
        }
        func teardown(_ reason: ConnectFailureReason) -> ClientConnectionMachine.LinkLost {
            .tearDown(Teardown(record: .connectFailure(reason), released: .connectSlot, close: .clean, next: .reconnect(at: 0)))
        }
        #expect(failure(.socketError(errno: ECONNREFUSED), afterConnect: false) == teardown(.refused))
        #expect(failure(.socketError(errno: ECONNRESET), afterConnect: false) == teardown(.socketError(errno: ECONNRESET)))
        #expect(failure(.closedByPeer, afterConnect: true) == teardown(.closedBeforeConnack))
        #expect(failure(.protocolError, afterConnect: true) == teardown(.protocolError))
        #expect(failure(.ackTimeout(.connack), afterConnect: true) == teardown(.connackTimeout))

        var layered = ClientUnderTest(policy: mobileApp)
        layered.fireNextTimer()
        layered.machine.handshakeStarted()
        #expect(layered.machine.linkLost(.closedByPeer, now: 0, reconnect: layered.reconnect, random: &layered.random)
                == .handshakeInterrupted)
        #expect(layered.machine.connectTimeoutFired(now: 12 * second, reconnect: layered.reconnect, random: &layered.random)
                == .handshakeTimedOut)
        var idle = ClientUnderTest(policy: mobileApp)
        #expect(idle.machine.linkLost(.closedByPeer, now: 0, reconnect: idle.reconnect, random: &idle.random) == .ignored)
    }

    @Test("no CONNACK within its deadline: counted as a CONNACK timeout, the attempt ends")
    func connAckTimeout() {
        var client = ClientUnderTest(policy: mobileApp)
        client.fireNextTimer()
        client.now = 20 * ms
        client.tcpEstablished()
        #expect(client.timers[.connectTimeout] == 10 * second + 20 * ms)
        let outcome = client.machine.connectTimeoutFired(now: 10 * second + 20 * ms, reconnect: client.reconnect,
                                                         random: &client.random)
        #expect(outcome == .connAckTimedOut(Teardown(record: .connectFailure(.connackTimeout), released: .connectSlot,
                                                     close: .clean, next: .reconnect(at: 10 * second + 20 * ms))))
    }

    @Test("the pacer: a second client waits for the in-flight slot, a rate spaces the starts")
    func pacing() {
        var pacer = ConnectPacer(ratePerSecond: nil, maxInFlight: 1, now: 0)
        var first = ClientConnectionMachine()
        var waiting = ClientConnectionMachine()
        #expect(first.connectTimerFired(now: 0, stopping: false, pacer: &pacer, tick: ms, connectTimeout: 12 * second)
                == .open(isReconnect: false, timeoutAt: 12 * second))
        #expect(waiting.connectTimerFired(now: 0, stopping: false, pacer: &pacer, tick: ms, connectTimeout: 12 * second)
                == .paced(retryAt: ms))
        #expect(waiting.phase == .idle)
        var rated = ConnectPacer(ratePerSecond: 10, maxInFlight: 100, now: 0)
        #expect(first.connectTimerFired(now: 0, stopping: false, pacer: &rated, tick: ms, connectTimeout: 1) == .none)
        #expect(waiting.connectTimerFired(now: 0, stopping: false, pacer: &rated, tick: ms, connectTimeout: 1)
                == .open(isReconnect: false, timeoutAt: 1))
        var third = ClientConnectionMachine()
        #expect(third.connectTimerFired(now: 0, stopping: false, pacer: &rated, tick: ms, connectTimeout: 1)
                == .paced(retryAt: 100 * ms))
    }
}
