import FleetMetrics
import FleetTransport
import Glibc

/// TLS and WebSocket layers between the socket and the MQTT session:
///
///     read:  socket -> TLS decrypt -> upgrade response (until upgraded) -> WebSocket frames -> MQTT packets
///     flush: the turn's MQTT bytes -> one WebSocket binary frame -> TLS records -> socket
///
/// Connect: TCP connect -> TLS handshake (`.tlsHandshake` latency) -> WebSocket upgrade (`.wsUpgrade`) -> CONNECT,
/// all within the connect timeout. A failure in a layer closes that one client with the layer's reason text,
/// kept in `ClientCounters.transportErrors`.
extension Lane {
    // MARK: Connect

    /// TCP is up: start the first layer of the endpoint.
    func startLayers(_ client: Int, _ endpoint: TransportEndpoint) {
        clients[client].connection.handshakeStarted()
        if let tls = endpoint.tls {
            let index = clients[client].indexInFleet
            let certificate = tls.clientCertificate?(index, clients[client].session.clientID)
            let connection: TLSConnection
            do {
                if index < tls.clientIdentities.count {
                    connection = try tls.context.makeConnection(serverName: tls.serverName, identity: tls.clientIdentities[index])
                } else {
                    connection = try tls.context.makeConnection(serverName: tls.serverName, clientCertificate: certificate)
                }
            } catch {
                transportConnectFailed(client, .tlsHandshakeFailed, error.description)
                return
            }
            let transport = ClientTransport(stage: .tlsHandshake, tls: connection, startedAt: now)
            clients[client].transport = transport
            _ = continueHandshake(client, transport, UnsafeRawBufferPointer(start: nil, count: 0))
        } else {
            let transport = ClientTransport(stage: .webSocketUpgrade, tls: nil, startedAt: now)
            clients[client].transport = transport
            startUpgrade(client, transport, endpoint)
        }
    }

    /// Feeds handshake ciphertext; false when the client was closed.
    private func continueHandshake(_ client: Int, _ transport: ClientTransport, _ input: UnsafeRawBufferPointer) -> Bool {
        guard let tls = transport.tls else { return false }
        switch tls.handshake(input: input, outbound: clients[client].outbound) {
        case .done:
            markDirty(client)
            metrics.fleets[clients[client].fleet].latency.record(.tlsHandshake, startedAt: transport.stageStartedAt, completedAt: now)
            if let endpoint = clients[client].endpoint, endpoint.webSocket != nil {
                transport.stage = .webSocketUpgrade
                transport.stageStartedAt = now
                startUpgrade(client, transport, endpoint)
            } else {
                transport.stage = .open
                startSession(client)
            }
            return clients[client].socket != nil
        case .wantRead:
            markDirty(client)
            return true
        case .wantWrite:
            // Only when 4 MiB of handshake bytes sit unsent: not a TLS server.
            transportConnectFailed(client, .tlsHandshakeFailed, "TLS handshake: outbound buffer full")
            return false
        case .failure(let error):
            transportConnectFailed(client, .tlsHandshakeFailed, error.description)
            return false
        }
    }

    /// Sends the HTTP/1.1 upgrade request (RFC 6455 §4.1), through TLS for wss.
    private func startUpgrade(_ client: Int, _ transport: ClientTransport, _ endpoint: TransportEndpoint) {
        guard let settings = endpoint.webSocket else { return }
        transport.stage = .webSocketUpgrade
        // Sec-WebSocket-Key from the client's seeded generator: the same run seed gives the same bytes.
        var nonce: [UInt8] = []
        nonce.reserveCapacity(16)
        for _ in 0..<2 {
            let value = clients[client].random.next()
            for shift in stride(from: 0, to: 64, by: 8) { nonce.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        do {
            let request = try WebSocketUpgradeRequest(
                host: settings.host, port: endpoint.port, secure: endpoint.tls != nil, path: settings.path,
                subprotocols: settings.subprotocols, extraHeaders: settings.headers.map { ($0.name, $0.value) },
                nonce: nonce)
            transport.upgrade = WebSocketUpgradeResponseParser(request: request)
            let outbound = clients[client].outbound
            if let tls = transport.tls {
                try tls.encrypt(request.bytes, into: outbound)
            } else if !outbound.append(request.bytes) {
                throw WebSocketError(.outboundFull, "outbound buffer full while sending the WebSocket upgrade")
            }
            markDirty(client)
        } catch let error as TLSError {
            transportConnectFailed(client, .tlsHandshakeFailed, error.description)
        } catch {
            transportConnectFailed(client, .websocketUpgradeFailed, "\(error)")
        }
    }

    /// Every layer is up: write CONNECT. The connect timeout is over; the CONNACK deadline counts from here.
    func startSession(_ client: Int) {
        let connAckTimeout = clients[client].session.settings.timeouts.connAck
        let deadline = clients[client].connection.connectWritten(now: now, connAckTimeout: connAckTimeout)
        wheel.schedule(client: client, kind: TimerKind.connectTimeout, deadline: deadline)
        clients[client].session.connect(now: now, into: &scratch)
        stage(client)
        scheduleSessionDeadline(client)
    }

    func handshakeTimedOut(_ client: Int) {
        if clients[client].transport?.stage == .webSocketUpgrade {
            transportConnectFailed(client, .websocketUpgradeFailed, "WebSocket upgrade timeout")
        } else {
            transportConnectFailed(client, .tlsHandshakeFailed, "TLS handshake timeout")
        }
    }

    /// The connection ended (or broke) during the TLS handshake or the WebSocket upgrade.
    func handshakeInterrupted(_ client: Int, reason: DisconnectReason) {
        let transport = clients[client].transport
        let duringUpgrade = transport?.stage == .webSocketUpgrade
        let layer = duringUpgrade ? "the WebSocket upgrade" : "the TLS handshake"
        var text: String
        switch reason {
        case .closedByPeer:
            text = "the broker closed the connection during \(layer)"
            if duringUpgrade, let parser = transport?.upgrade { text = parser.endOfStreamError().description }
        case .socketError(let code):
            text = "socket error during \(layer): \(String(cString: strerror(code)))"
        default:
            text = "\(layer) failed: \(reason.reportName)"
        }
        transportConnectFailed(client, duringUpgrade ? .websocketUpgradeFailed : .tlsHandshakeFailed, text)
    }

    func transportConnectFailed(_ client: Int, _ reason: ConnectFailureReason, _ text: String) {
        recordTransportError(client, text)
        connectFailed(client, reason: reason)
    }

    /// A layer failed on an established (or CONNECT-sent) connection: close that client with the reason.
    func transportLost(_ client: Int, _ text: String, reason: DisconnectReason = .protocolError) {
        recordTransportError(client, text)
        connectionLost(client, reason: reason)
    }

    func recordTransportError(_ client: Int, _ text: String) {
        metrics.fleets[clients[client].fleet].counters.recordTransportError(text)
    }

    // MARK: Reading

    /// `count` bytes just read into `readBuffer`, for a layered client. False when the client was closed.
    func receiveLayered(_ client: Int, _ transport: ClientTransport, count: Int) -> Bool {
        receiveLayered(client, transport, input: UnsafeRawBufferPointer(start: readBuffer.baseAddress, count: count))
    }

    /// Bytes as read from the socket, for a layered client. False when the client was closed.
    func receiveLayered(_ client: Int, _ transport: ClientTransport, input: UnsafeRawBufferPointer) -> Bool {
        // With a network profile, handshake bytes wait on the emulated link like MQTT bytes (`Lane+Network`).
        if let link = clients[client].network, !link.delivering, clients[client].phase == .handshaking {
            return queueInbound(client, link, input, raw: true)
        }
        if transport.stage == .tlsHandshake { return continueHandshake(client, transport, input) }
        guard let tls = transport.tls else { return receiveStream(client, transport, input) }
        tlsPlaintext.removeAll(keepingCapacity: true)
        let status: TLSConnection.ReadStatus
        do {
            status = try tls.decrypt(input, outbound: clients[client].outbound, scratch: tlsScratch) { chunk in
                self.tlsPlaintext.append(contentsOf: chunk)
            }
        } catch {
            transportLost(client, error.description)
            return false
        }
        if !clients[client].outbound.isEmpty { markDirty(client) }
        if !tlsPlaintext.isEmpty {
            let alive = tlsPlaintext.withUnsafeBytes { receiveStream(client, transport, $0) }
            if !alive || clients[client].socket == nil { return false }
        }
        if status == .closedByPeer {
            transportLost(client, "TLS close_notify from the broker", reason: .closedByPeer)
            return false
        }
        return true
    }

    /// Plaintext below WebSocket (or MQTT bytes when there is no WebSocket). False when the client was closed.
    private func receiveStream(_ client: Int, _ transport: ClientTransport, _ input: UnsafeRawBufferPointer) -> Bool {
        var bytes = input
        if transport.stage == .webSocketUpgrade {
            let progress: WebSocketUpgradeResponseParser.Progress?
            do {
                progress = try transport.upgrade?.parse(bytes)
            } catch {
                transportConnectFailed(client, .websocketUpgradeFailed, error.description)
                return false
            }
            guard case .upgraded(let consumed, _)? = progress else { return true }
            metrics.fleets[clients[client].fleet].latency.record(.wsUpgrade, startedAt: transport.stageStartedAt, completedAt: now)
            transport.upgrade = nil
            let maskSeed = configuration.seed ^ (UInt64(clients[client].globalIndex) &* 0x9E37_79B9_7F4A_7C15)
                ^ UInt64(clients[client].connection.attempt)
            transport.webSocket = WebSocketClientFraming(
                maskSeed: maskSeed, maximumPayloadLength: clients[client].endpoint?.webSocket?.maximumFrameLength ?? 1 << 20)
            transport.stage = .open
            startSession(client)
            if clients[client].socket == nil { return false }
            bytes = UnsafeRawBufferPointer(rebasing: bytes[min(consumed, bytes.count)...])
            if bytes.isEmpty { return true }
        }
        guard transport.webSocket != nil else { return receive(client, bytes: bytes) }
        webSocketPayload.removeAll(keepingCapacity: true)
        let replies = transport.tls == nil ? clients[client].outbound : transport.frames
        let status: WebSocketClientFraming.ReceiveStatus?
        do {
            status = try transport.webSocket?.receive(bytes, outbound: replies) { chunk in
                self.webSocketPayload.append(contentsOf: chunk)
            }
        } catch {
            transportLost(client, error.description)
            return false
        }
        if !replies.isEmpty { markDirty(client) }
        if !webSocketPayload.isEmpty {
            let alive = webSocketPayload.withUnsafeBytes { receive(client, bytes: $0) }
            if !alive || clients[client].socket == nil { return false }
        }
        if case .closed(let code, let reason)? = status {
            flush(client)  // our close reply
            if clients[client].socket == nil { return false }
            let codeText = code.map { " \($0)" } ?? ""
            transportLost(client, "WebSocket closed by the broker\(codeText)\(reason.isEmpty ? "" : ": \(reason)")",
                          reason: .closedByPeer)
            return false
        }
        return true
    }

    // MARK: Writing

    /// At flush: the turn's MQTT bytes as one binary frame (RFC 6455 §5.6), then TLS records, into the client's
    /// outbound buffer. False when the client was closed.
    func sealLayers(_ client: Int, _ transport: ClientTransport) -> Bool {
        guard transport.stage == .open else { return true }
        let outbound = clients[client].outbound
        do {
            if transport.webSocket != nil && !transport.plaintext.isEmpty {
                try transport.webSocket?.send(transport.plaintext.readableBytes,
                                              into: transport.tls == nil ? outbound : transport.frames)
                transport.plaintext.removeAll()
            }
            if let tls = transport.tls {
                let source = transport.webSocket == nil ? transport.plaintext : transport.frames
                if !source.isEmpty {
                    try tls.encrypt(source.readableBytes, into: outbound)
                    source.removeAll()
                }
            }
        } catch {
            transportLost(client, "\(error)", reason: .socketError(errno: ENOBUFS))
            return false
        }
        return true
    }

    /// A clean close: WebSocket close frame (1000, §7.4.1) and TLS close_notify (RFC 8446 §6.1), written once
    /// without waiting; the socket is closed right after.
    func closeLayers(_ client: Int, _ transport: ClientTransport, socket: TCPSocket) {
        guard transport.stage == .open else { return }
        let outbound = clients[client].outbound
        if transport.webSocket != nil {
            try? transport.webSocket?.close(outbound: transport.tls == nil ? outbound : transport.frames)
        }
        if let tls = transport.tls {
            if transport.webSocket != nil && !transport.frames.isEmpty {
                try? tls.encrypt(transport.frames.readableBytes, into: outbound)
            }
            tls.close(outbound: outbound)
        }
        _ = try? outbound.flush(to: socket)
    }

    func markDirty(_ client: Int) {
        if !clients[client].isDirty {
            clients[client].isDirty = true
            dirty.append(Int32(client))
        }
    }
}
