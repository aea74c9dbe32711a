import FleetMetrics
import Glibc

/// The connection lifecycle of one simulated client as a value: connect, layers, CONNACK, SUBACK, the end of a
/// connection (failure, loss, fault, churn, end of run) and the reconnect that follows.
///
/// Pure: no sockets, no clock reads. Each event comes with the time it happened (`now`) and whatever else the
/// decision needs (the fleet's reconnect policy, the client's random generator, the fleet's pacer); it returns
/// what the lane must do, and the lane (`Lane+Connection`) does it: open a socket, arm or cancel a timer, write
/// CONNECT or SUBSCRIBE, count, close. The model is async-http-client's `HTTP1ConnectionStateMachine`.
///
/// Every ending is a `Teardown`, applied by the one `Lane.tearDown`. What happens on a live connection
/// (publishing, acks, keepalive) is the session's (`MQTTClientSession`); its fatal outcomes (an ack or ping
/// timeout, a protocol error, the broker's DISCONNECT) reach this machine as `linkLost`.
struct ClientConnectionMachine: Equatable {
    /// When the current attempt's TCP connect started, when its CONNECT was written, and when the client last
    /// wrote (or had the session write) a SUBSCRIBE (monotonic ns).
    private(set) var connectStartedAt: UInt64 = 0
    private(set) var connectSentAt: UInt64 = 0
    private(set) var subscribeSentAt: UInt64 = 0
    /// Failed connects or lost connections in a row (reset by a CONNACK): the reconnect policy's attempt.
    private(set) var attempt = 0
    private(set) var phase: ClientPhase = .idle
    private(set) var hasConnectedBefore = false
    /// Connected and subscribed once (or given up): counts toward the start-of-publishing barrier.
    private(set) var isReady = false

    /// What a reconnect decision depends on besides the machine: the fleet's policy and whether the run is
    /// ending (then nothing reconnects).
    struct Reconnect: Equatable {
        var policy: ReconnectPolicy
        var stopping: Bool
    }

    // MARK: Connecting

    enum ConnectStart: Equatable {
        /// Not idle (connecting, connected or finished already), or the run is ending.
        case none
        /// The pacer holds the connect back: the connect timer again at this time.
        case paced(retryAt: UInt64)
        /// Open a socket and start the TCP connect; arm the connect timeout at `timeoutAt`. Count an attempt (and
        /// a reconnect when the client was connected before).
        case open(isReconnect: Bool, timeoutAt: UInt64)
    }

    /// The connect timer fired. `tick`: when the pacer names no time (only its in-flight cap is full), try again
    /// this much later.
    mutating func connectTimerFired(
        now: UInt64, stopping: Bool, pacer: inout ConnectPacer, tick: UInt64, connectTimeout: UInt64
    ) -> ConnectStart {
        guard !stopping, phase == .idle else { return .none }
        guard pacer.mayStart(now: now) else {
            let next = pacer.nextAllowedTime(now: now) ?? (now &+ tick)
            return .paced(retryAt: max(next, now &+ 1))
        }
        pacer.started(now: now)
        connectStartedAt = now
        phase = .connecting
        return .open(isReconnect: hasConnectedBefore, timeoutAt: now &+ connectTimeout)
    }

    /// TCP is up and the endpoint has layers: the TLS handshake or WebSocket upgrade starts (within the connect
    /// timeout, which keeps running).
    mutating func handshakeStarted() {
        phase = .handshaking
    }

    /// Every layer is up and CONNECT is written. Returns the CONNACK deadline, which replaces the connect timeout.
    mutating func connectWritten(now: UInt64, connAckTimeout: UInt64) -> UInt64 {
        phase = .awaitingConnAck
        connectSentAt = now
        return now &+ connAckTimeout
    }

    enum ConnectTimeout: Equatable {
        /// Nothing was in progress (the timer outlived its attempt).
        case none
        /// During the TLS handshake or WebSocket upgrade: the lane names the layer and fails the connect.
        case handshakeTimedOut
        /// The TCP connect did not complete: the attempt ends.
        case tcpTimedOut(Teardown)
        /// CONNACK did not come (the session reports its own deadline; this backs it up): count a CONNACK ack
        /// timeout, and the attempt ends.
        case connAckTimedOut(Teardown)
    }

    mutating func connectTimeoutFired(now: UInt64, reconnect: Reconnect, random: inout SeededRandom) -> ConnectTimeout {
        switch phase {
        case .connecting:
            return .tcpTimedOut(connectFailed(.timeout, now: now, reconnect: reconnect, random: &random))
        case .handshaking:
            return .handshakeTimedOut
        case .awaitingConnAck:
            return .connAckTimedOut(connectFailed(.connackTimeout, now: now, reconnect: reconnect, random: &random))
        case .idle, .connected, .finished:
            return .none
        }
    }

    /// A connect that did not reach CONNACK (a socket error, a layer's failure, a timeout, a refusal).
    mutating func connectFailed(
        _ reason: ConnectFailureReason, now: UInt64, reconnect: Reconnect, random: inout SeededRandom
    ) -> Teardown {
        end(.connectFailure(reason), close: .clean, firstDelay: nil, now: now, reconnect: reconnect, random: &random)
    }

    /// CONNACK with a failure code: counted per code, and the client reconnects by its policy (the refusal
    /// counts as a failed attempt, so a policy's back-off and attempt limit hold: the client does not spin).
    mutating func connAckRefused(code: UInt8, now: UInt64, reconnect: Reconnect, random: inout SeededRandom) -> Teardown {
        connectFailed(.connackRefused(code: code), now: now, reconnect: reconnect, random: &random)
    }

    struct Connected: Equatable {
        /// Connect latency (CONNECT to CONNACK) counts from here.
        var connectSentAt: UInt64
        /// First connection of the client (not a reconnect).
        var firstTime: Bool
        /// Write the client's SUBSCRIBE now: its first connection, or (`resubscribes`) a later one without a
        /// session at the broker.
        var subscribe: Bool
    }

    /// CONNACK accepted. Nil when no CONNACK was awaited (the lane ignores it). The attempt count resets.
    /// `resubscribes`: the lane, not the session, subscribes again when the broker lost the session (a session
    /// that keeps no subscriptions, `MQTTClientSession.keepsSubscriptions`, and resubscribes when it is lost).
    mutating func connAckAccepted(sessionPresent: Bool, now: UInt64, hasSubscriptions: Bool,
                                  resubscribes: Bool = false) -> Connected? {
        guard phase == .awaitingConnAck else { return nil }
        phase = .connected
        attempt = 0
        let firstTime = !hasConnectedBefore
        hasConnectedBefore = true
        // Without a session the client subscribes again now (the session by itself, or the lane: `resubscribes`).
        if !sessionPresent { subscribeSentAt = now }
        let subscribe = hasSubscriptions && (firstTime || (resubscribes && !sessionPresent))
        if subscribe {
            subscribeSentAt = now
        } else if firstTime {
            isReady = true
        }
        return Connected(connectSentAt: connectSentAt, firstTime: firstTime, subscribe: subscribe)
    }

    /// SUBACK. Returns when the first SUBSCRIBE was written when this one makes the client ready (subscribe
    /// latency counts from there), nil for a later one.
    mutating func subAckReceived() -> UInt64? {
        guard !isReady else { return nil }
        isReady = true
        return subscribeSentAt
    }

    // MARK: Endings

    enum LinkLost: Equatable {
        /// No connection was up or in progress.
        case ignored
        /// During the TLS handshake or WebSocket upgrade: the lane words the layer's failure and calls
        /// `connectFailed`.
        case handshakeInterrupted
        case tearDown(Teardown)
    }

    /// The connection ended or broke: end of stream, a socket error, or the session's verdict (ack or ping
    /// timeout, protocol error, the broker's DISCONNECT). Before CONNACK it is a failed connect.
    mutating func linkLost(
        _ reason: DisconnectReason, now: UInt64, reconnect: Reconnect, random: inout SeededRandom
    ) -> LinkLost {
        switch phase {
        case .handshaking:
            return .handshakeInterrupted
        case .connecting, .awaitingConnAck:
            let failure: ConnectFailureReason
            switch reason {
            case .protocolError: failure = .protocolError
            case .ackTimeout(.connack): failure = .connackTimeout
            case .socketError(let code): failure = code == ECONNREFUSED ? .refused : .socketError(errno: code)
            default: failure = .closedBeforeConnack
            }
            return .tearDown(connectFailed(failure, now: now, reconnect: reconnect, random: &random))
        case .connected:
            return .tearDown(end(.disconnect(reason), close: .clean, firstDelay: nil, now: now, reconnect: reconnect,
                                 random: &random))
        case .idle, .finished:
            return .ignored
        }
    }

    /// A fault cuts a connected client's link abruptly (a tunnel, an emulated drop or outage): RST, no
    /// DISCONNECT, so the broker publishes the will. `outage` replaces the policy's first delay (not its
    /// decision). Nil when the client is not connected or the run is ending.
    mutating func linkCut(
        _ reason: DisconnectReason, outage: UInt64?, now: UInt64, reconnect: Reconnect, random: inout SeededRandom
    ) -> Teardown? {
        guard !reconnect.stopping, phase == .connected else { return nil }
        return end(.disconnect(reason), close: .abortive, firstDelay: outage, now: now, reconnect: reconnect,
                   random: &random)
    }

    /// Churn, after the client's DISCONNECT went out: a clean close and a reconnect at once (paced by the
    /// fleet's pacer). Not a failure: the attempt count is untouched. Nil when the client is not connected
    /// (any more: writing the DISCONNECT may have failed).
    mutating func churned(now: UInt64) -> Teardown? {
        guard phase == .connected else { return nil }
        phase = .idle
        return Teardown(record: .disconnect(.churn), released: .connection, close: .clean, next: .reconnect(at: now))
    }

    /// The run is over (after a connected client's DISCONNECT went out): close, never again.
    mutating func runEnded() -> Teardown {
        let held = self.held
        phase = .finished
        return Teardown(record: held == .connection ? .disconnect(.clientInitiated) : .nothing, released: held,
                        close: .clean, next: .finish)
    }

    /// What the connection or attempt in progress holds.
    private var held: Teardown.Held {
        switch phase {
        case .connected: return .connection
        case .connecting, .handshaking, .awaitingConnAck: return .connectSlot
        case .idle, .finished: return .nothing
        }
    }

    /// Ends the connection or attempt and decides what follows by the policy.
    private mutating func end(
        _ record: Teardown.Record, close: Teardown.Close, firstDelay: UInt64?, now: UInt64, reconnect: Reconnect,
        random: inout SeededRandom
    ) -> Teardown {
        let held = self.held
        if reconnect.stopping {
            phase = .finished
            return Teardown(record: record, released: held, close: close, next: .finish)
        }
        attempt += 1
        switch reconnect.policy.decision(forAttempt: attempt, random: &random) {
        case .retry(let delay):
            phase = .idle
            return Teardown(record: record, released: held, close: close, next: .reconnect(at: now &+ (firstDelay ?? delay)))
        case .giveUp:
            phase = .finished
            isReady = true
            return Teardown(record: record, released: held, close: close, next: .finish)
        }
    }
}

/// How a client's connection (or connect attempt) ends and what follows: decided by `ClientConnectionMachine`,
/// applied by `Lane.tearDown`, the one way any connection of the lane ends.
struct Teardown: Equatable {
    /// What the fleet's counters record.
    enum Record: Equatable {
        case connectFailure(ConnectFailureReason)
        case disconnect(DisconnectReason)
        /// The end of the run for a client that was not connected.
        case nothing
    }

    /// What the ended attempt or connection held, to give back.
    enum Held: Equatable {
        case nothing
        /// A connect in progress: its slot of the fleet's pacer (its in-flight cap).
        case connectSlot
        /// A connection: its place in the connected gauges and its entitlement windows.
        case connection
    }

    enum Close: Equatable {
        /// FIN, after the layers' close frames (WebSocket close, TLS close_notify).
        case clean
        /// RST (SO_LINGER 0), nothing written first.
        case abortive
    }

    enum Next: Equatable {
        /// The connect timer at this time.
        case reconnect(at: UInt64)
        /// Never again: the policy gave up, or the run is over.
        case finish
    }

    var record: Record
    var released: Held
    var close: Close
    var next: Next
}
