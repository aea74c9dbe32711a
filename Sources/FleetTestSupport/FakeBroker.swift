import Foundation
import Glibc
import MQTTCodec

/// What a `FakeBroker` does in answer to one packet from a client.
public enum FakeBrokerAction: Sendable, Equatable {
    /// Encode and send a packet in the connection's protocol version.
    case send(MQTTPacket)
    /// Send raw bytes as they are: malformed packets, half-written packets.
    case sendBytes([UInt8])
    /// Close the connection with FIN.
    case close
    /// Close the connection with RST (SO_LINGER 0), as a crashed broker or a cut tunnel would.
    case closeAbortively
}

/// A scriptable MQTT broker on a loopback port, for faults a real broker will not produce: acks withheld,
/// malformed packets, a packet written halfway and then silence, sudden resets. Happy paths are tested
/// against a real mosquitto, never against this.
///
/// Each connection runs on its own thread with blocking sockets: simplicity over scale, it serves tests.
public final class FakeBroker: @unchecked Sendable {
    /// Decides the answer to each packet a client sends. Called on the connection's thread.
    public typealias Behaviour = @Sendable (_ connection: Int, _ packet: MQTTPacket, _ version: MQTTProtocolVersion)
        -> [FakeBrokerAction]

    public let port: UInt16
    private let listener: Int32
    private let behaviour: Behaviour
    private let lock = NSLock()
    private var clientSockets: [Int32] = []
    /// Sockets not closed yet. `stop()` shuts down only these: a descriptor number closed earlier may already
    /// belong to another socket of this process (another test's broker or engine running in parallel).
    private var openSockets: Set<Int32> = []
    private var listenerClosed = false
    private var packets: [(connection: Int, packet: MQTTPacket)] = []
    /// Each connection's protocol version, as its CONNECT set it (for `send(_:toConnection:)`).
    private var versions: [Int: MQTTProtocolVersion] = [:]
    private var decodeErrors: [MQTTDecodeError] = []
    private var stopped = false
    private let acceptThread: Thread

    /// Starts listening on 127.0.0.1 at a free port.
    public init(behaviour: @escaping Behaviour = FakeBroker.standardResponse) throws {
        self.behaviour = behaviour
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw FakeBrokerError(call: "socket", errno: errno) }
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 128) == 0 else {
            let code = errno
            Glibc.close(listener)
            throw FakeBrokerError(call: "bind/listen", errno: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        self.port = UInt16(bigEndian: address.sin_port)
        let box = AcceptLoop()
        self.acceptThread = Thread { box.broker?.acceptLoop() }
        box.broker = self
        acceptThread.start()
    }

    deinit { stop() }

    /// Every packet received so far, in arrival order, with the number of the connection (0, 1, ...).
    public var receivedPackets: [(connection: Int, packet: MQTTPacket)] {
        lock.withLock { packets }
    }

    /// Decode errors met on client bytes (the connection is closed after one).
    public var receivedDecodeErrors: [MQTTDecodeError] { lock.withLock { decodeErrors } }

    /// How many connections were accepted so far.
    public var connectionCount: Int { lock.withLock { clientSockets.count } }

    /// Sends `action`'s bytes on connection `connection` now, from the caller's thread: for a test that answers
    /// later than the behaviour could (acks withheld, then released one at a time). Only `.send` and
    /// `.sendBytes`, and only small packets: the write is one non-blocking send made under the broker's lock
    /// (so the descriptor cannot be closed and its number reused meanwhile). False when the connection is
    /// gone or the socket did not take every byte at once.
    @discardableResult
    public func send(_ action: FakeBrokerAction, toConnection connection: Int) -> Bool {
        lock.withLock {
            guard connection < clientSockets.count, openSockets.contains(clientSockets[connection]) else { return false }
            let bytes: [UInt8]
            switch action {
            case .send(let packet): bytes = packet.encoded(version: versions[connection] ?? .v3_1_1)
            case .sendBytes(let raw): bytes = raw
            case .close, .closeAbortively: return false
            }
            let sent = bytes.withUnsafeBytes {
                Glibc.send(clientSockets[connection], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            return sent == bytes.count
        }
    }

    /// Stops accepting and closes every connection.
    public func stop() {
        // Under the lock, so no descriptor is closed (and its number reused) between the check and the shutdown.
        lock.withLock {
            if stopped { return }
            stopped = true
            if !listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            for socket in openSockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// The answer a well-behaved broker gives: CONNACK success, SUBACK granting what was asked, UNSUBACK,
    /// PUBACK / PUBREC / PUBCOMP, PINGRESP. PUBLISH is not routed anywhere.
    public static let standardResponse: Behaviour = { _, packet, version in
        switch packet {
        case .connect:
            return [.send(.connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success)))]
        case .subscribe(let subscribe):
            let granted = subscribe.subscriptions.map { subscription -> MQTTReasonCode in
                switch subscription.options.qos {
                case .atMostOnce: return .grantedQoS0
                case .atLeastOnce: return .grantedQoS1
                case .exactlyOnce: return .grantedQoS2
                }
            }
            return [.send(.subAck(MQTTSubAck(packetID: subscribe.packetID, reasonCodes: granted)))]
        case .unsubscribe(let unsubscribe):
            let codes = version == .v5 ? unsubscribe.filters.map { _ in MQTTReasonCode.success } : []
            return [.send(.unsubAck(MQTTUnsubAck(packetID: unsubscribe.packetID, reasonCodes: codes)))]
        case .publish(let publish):
            switch publish.qos {
            case .atMostOnce: return []
            case .atLeastOnce: return [.send(.pubAck(MQTTPubAck(packetID: publish.packetID)))]
            case .exactlyOnce: return [.send(.pubRec(MQTTPubRec(packetID: publish.packetID)))]
            }
        case .pubRel(let release):
            return [.send(.pubComp(MQTTPubComp(packetID: release.packetID)))]
        case .pingReq:
            return [.send(.pingResp)]
        case .disconnect:
            return [.close]
        default:
            return []
        }
    }

    // MARK: Threads

    private final class AcceptLoop: @unchecked Sendable { weak var broker: FakeBroker? }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                lock.withLock {
                    listenerClosed = true
                    Glibc.close(listener)
                }
                return
            }
            let number: Int? = lock.withLock {
                if stopped { return nil }
                clientSockets.append(client)
                openSockets.insert(client)
                return clientSockets.count - 1
            }
            guard let number else {
                Glibc.close(client)
                continue
            }
            let thread = Thread { [self] in serve(client, number: number) }
            thread.start()
        }
    }

    private func serve(_ client: Int32, number: Int) {
        defer {
            lock.withLock {
                openSockets.remove(client)
                Glibc.close(client)
            }
        }
        var decoder = MQTTDecoder(version: .v3_1_1)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            decoder.feed(Array(chunk[0..<count]))
            while true {
                let packet: MQTTPacket?
                do {
                    packet = try decoder.next()
                } catch {
                    lock.withLock { decodeErrors.append(error) }
                    return
                }
                guard let packet else { break }
                lock.withLock {
                    packets.append((number, packet))
                    versions[number] = decoder.version
                }
                for action in behaviour(number, packet, decoder.version) {
                    if !perform(action, on: client, version: decoder.version) { return }
                }
            }
        }
    }

    /// Returns false when the connection is closed.
    private func perform(_ action: FakeBrokerAction, on client: Int32, version: MQTTProtocolVersion) -> Bool {
        switch action {
        case .send(let packet):
            return sendAll(packet.encoded(version: version), to: client)
        case .sendBytes(let bytes):
            return sendAll(bytes, to: client)
        case .close:
            shutdown(client, Int32(SHUT_RDWR))
            return false
        case .closeAbortively:
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        }
    }

    private func sendAll(_ bytes: [UInt8], to client: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }
}

/// A socket call of the fake broker failed.
public struct FakeBrokerError: Error, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public var description: String { "fake broker: \(call) failed: \(String(cString: strerror(errno)))" }
}
