import FleetTransport
import Glibc
import FleetTestSupport

/// A test client over the transport layers as the engine will stack them: TCP, then optionally TLS, then
/// optionally WebSocket, carrying MQTT bytes. It blocks (through epoll, each wait bounded at `waitBound`) only so tests
/// read straight through; the layers themselves are the non-blocking ones under test.
final class LayeredTestClient {
    let socket: TCPSocket
    let outbound = OutboundBuffer()
    let tls: TLSConnection?
    var websocket: WebSocketClientFraming?
    /// MQTT bytes received and not yet taken by `receivePackets`.
    var mqttBytes: [UInt8] = []
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)
    private var scratch = [UInt8](repeating: 0, count: 16_384)
    /// Bytes below WebSocket that arrived together with the upgrade response.
    private var pendingStream: [UInt8] = []
    /// Hand TLS one ciphertext byte per call (handshake and decrypt), to prove records may arrive in any split.
    var feedCiphertextByteByByte = false
    /// Ciphertext read with the last handshake flight but fed after it (only when feeding byte by byte).
    private var pendingCiphertext: [UInt8] = []

    struct EndOfStream: Error, CustomStringConvertible {
        var description: String { "the broker closed the connection" }
    }

    /// No test waits for this client's silence, so the bound only ends a broken exchange: it is long enough for a
    /// TLS exchange with a broker on a machine running the whole suite on 2 cores (5 s timed out there once).
    static let waitBound: Int32 = 20_000

    struct Timeout: Error, CustomStringConvertible {
        let waitingFor: String
        var description: String { "no answer within \(LayeredTestClient.waitBound / 1000) s while waiting for \(waitingFor)" }
    }

    private init(socket: TCPSocket, tls: TLSConnection?) {
        self.socket = socket
        self.tls = tls
    }

    deinit { try? socket.close() }

    /// Connects to 127.0.0.1:`port`; with `tls`, completes the handshake for `serverName`; with `websocketPath`,
    /// completes the upgrade. Throws TLSError or WebSocketError with the layer's own reason.
    static func connect(
        port: UInt16, tls context: TLSClientContext? = nil, serverName: String = "127.0.0.1",
        clientCertificate: TLSClientCertificate? = nil, identity: TLSClientIdentity? = nil, websocketPath: String? = nil,
        subprotocols: [String] = ["mqtt"], maskSeed: UInt64 = 42, feedCiphertextByteByByte: Bool = false
    ) throws -> LayeredTestClient {
        let socket = try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: port))
        let tls = try identity.map { identity in try context?.makeConnection(serverName: serverName, identity: identity) }
            ?? context?.makeConnection(serverName: serverName, clientCertificate: clientCertificate)
        let client = LayeredTestClient(socket: socket, tls: tls)
        client.feedCiphertextByteByByte = feedCiphertextByteByByte
        if let tls { try client.handshake(tls) }
        if let websocketPath {
            try client.upgrade(port: port, path: websocketPath, subprotocols: subprotocols, maskSeed: maskSeed)
        }
        return client
    }

    private func handshake(_ tls: TLSConnection) throws {
        var input: [UInt8] = []
        while true {
            var status = tls.handshake(input: feedCiphertextByteByByte ? [] : input, outbound: outbound)
            if feedCiphertextByteByByte {
                for (index, byte) in input.enumerated() {
                    status = tls.handshake(input: [byte], outbound: outbound)
                    if status == .done {
                        pendingCiphertext = Array(input[(index + 1)...])
                        break
                    }
                }
            }
            try flush()
            switch status {
            case .done: return
            case .failure(let error): throw error
            case .wantWrite: input = []
            case .wantRead:
                guard let bytes = try readSocket() else {
                    throw TLSError(.protocolError, "the broker closed the connection during the TLS handshake")
                }
                input = bytes
            }
        }
    }

    private func upgrade(port: UInt16, path: String, subprotocols: [String], maskSeed: UInt64) throws {
        var generator = TestRandom(seed: maskSeed)
        let request = try WebSocketUpgradeRequest(
            host: "127.0.0.1", port: port, secure: tls != nil, path: path, subprotocols: subprotocols,
            nonce: WebSocketUpgradeRequest.randomNonce(using: &generator))
        try writeStream(request.bytes)
        var parser = WebSocketUpgradeResponseParser(request: request)
        while true {
            guard let bytes = try readStream() else { throw parser.endOfStreamError() }
            if case .upgraded(let consumed, _) = try parser.parse(bytes) {
                websocket = WebSocketClientFraming(maskSeed: maskSeed)
                pendingStream = Array(bytes[consumed...])
                return
            }
        }
    }

    /// Sends MQTT bytes: one WebSocket binary frame when upgraded, then TLS records when secure, then the socket.
    func sendMQTT(_ packet: [UInt8]) throws {
        if var websocket {
            let framed = OutboundBuffer()
            try websocket.send(packet, into: framed)
            self.websocket = websocket
            try writeStream(Array(framed.readableBytes))
        } else {
            try writeStream(packet)
        }
    }

    /// Receives until `count` whole MQTT packets are buffered; returns them, one array per packet.
    func receivePackets(_ count: Int) throws -> [[UInt8]] {
        var packets: [[UInt8]] = []
        while true {
            while packets.count < count, let packet = Self.takePacket(from: &mqttBytes) { packets.append(packet) }
            if packets.count == count { return packets }
            try receiveMore()
        }
    }

    /// One read's worth of MQTT bytes into `mqttBytes` (through TLS and WebSocket as configured).
    func receiveMore() throws {
        let stream: [UInt8]
        if !pendingStream.isEmpty {
            stream = pendingStream
            pendingStream = []
        } else {
            guard let bytes = try readStream() else { throw EndOfStream() }
            stream = bytes
        }
        guard var websocket else {
            mqttBytes += stream
            return
        }
        let replies = OutboundBuffer()
        var delivered: [UInt8] = []
        let status = try websocket.receive(stream, outbound: replies) { delivered.append(contentsOf: $0) }
        self.websocket = websocket
        mqttBytes += delivered
        if !replies.isEmpty { try writeStream(Array(replies.readableBytes)) }
        if case .closed = status { throw EndOfStream() }
    }

    /// MQTT §2.2: fixed header byte, remaining length (variable byte integer), then that many bytes.
    static func takePacket(from bytes: inout [UInt8]) -> [UInt8]? {
        var length = 0
        var multiplier = 1
        var index = 1
        while true {
            guard index < bytes.count, index <= 4 else { return nil }
            let digit = Int(bytes[index])
            length += (digit & 0x7F) * multiplier
            multiplier *= 128
            index += 1
            if digit & 0x80 == 0 { break }
        }
        guard bytes.count >= index + length else { return nil }
        let packet = Array(bytes[0..<(index + length)])
        bytes.removeFirst(index + length)
        return packet
    }

    /// Bytes below WebSocket: encrypted when TLS is on, then written out completely.
    func writeStream(_ bytes: [UInt8]) throws {
        if let tls { try tls.encrypt(bytes, into: outbound) } else { outbound.append(bytes) }
        try flush()
    }

    /// One read of bytes below WebSocket (decrypted when TLS is on); nil at end of stream.
    func readStream() throws -> [UInt8]? {
        while true {
            var ciphertext: [UInt8]
            if !pendingCiphertext.isEmpty {
                ciphertext = pendingCiphertext
                pendingCiphertext = []
            } else {
                guard let bytes = try readSocket() else { return nil }
                ciphertext = bytes
            }
            guard let tls else { return ciphertext }
            var plaintext: [UInt8] = []
            var status = TLSConnection.ReadStatus.open
            for piece in feedCiphertextByteByByte ? ciphertext.map({ [$0] }) : [ciphertext] where status == .open {
                status = try scratch.withUnsafeMutableBytes { scratchBuffer in
                    try piece.withUnsafeBytes { input in
                        try tls.decrypt(input, outbound: outbound, scratch: scratchBuffer) { plaintext.append(contentsOf: $0) }
                    }
                }
            }
            try flush()
            if status == .closedByPeer && plaintext.isEmpty { return nil }
            if !plaintext.isEmpty { return plaintext }
            // Only TLS records without application data (a TLS 1.3 session ticket): read on.
        }
    }

    /// One read from the socket, waiting up to 5 s; nil at end of stream.
    func readSocket() throws -> [UInt8]? {
        while true {
            let result = try readBuffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            switch result {
            case .bytes(let count): return Array(readBuffer[0..<count])
            case .endOfStream: return nil
            case .wouldBlock:
                guard try awaitEvents(.readable, on: socket.fileDescriptor, timeoutMilliseconds: Self.waitBound) != nil else {
                    throw Timeout(waitingFor: "bytes")
                }
            }
        }
    }

    func flush() throws {
        while try outbound.flush(to: socket) == .pending {
            guard try awaitEvents(.writable, on: socket.fileDescriptor, timeoutMilliseconds: Self.waitBound) != nil else {
                throw Timeout(waitingFor: "the socket to take our bytes")
            }
        }
    }
}

