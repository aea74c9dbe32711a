import Glibc
import MQTTCodec

/// Why a `BrokerConnection` call failed. Equatable so tests can expect an exact error.
enum BrokerConnectionError: Error, Equatable, CustomStringConvertible {
    /// A socket call failed with `errno`.
    case systemCall(String, errno: Int32)
    /// Nothing (or only part of a packet) arrived within the receive timeout.
    case timedOut(seconds: Int, bufferedBytes: Int)
    /// The broker closed the connection (read returned 0).
    case closedByBroker
    /// The broker reset the connection (ECONNRESET).
    case resetByBroker
    /// The broker's bytes are not a valid packet in this connection's version.
    case decode(MQTTDecodeError)

    var description: String {
        switch self {
        case .systemCall(let call, let code):
            return "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .timedOut(let seconds, let buffered):
            return "no whole packet from the broker within \(seconds) s (\(buffered) bytes buffered)"
        case .closedByBroker: return "the broker closed the connection"
        case .resetByBroker: return "the broker reset the connection"
        case .decode(let error): return "the broker sent an invalid packet: \(error)"
        }
    }
}

/// One blocking TCP connection to a broker on 127.0.0.1, speaking `version`: packets are encoded with the codec
/// and the broker's bytes decoded with `MQTTDecoder`. Test-only: simple, blocking, one thread.
final class BrokerConnection {
    let version: MQTTProtocolVersion
    private var socket: Int32
    private var decoder: MQTTDecoder

    init(port: UInt16, version: MQTTProtocolVersion) throws(BrokerConnectionError) {
        self.version = version
        decoder = MQTTDecoder(version: version)
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw .systemCall("socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let descriptor = socket
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if connected != 0 {
            let code = errno
            close()
            throw .systemCall("connect", errno: code)
        }
        // Small packets go out at once instead of waiting for Nagle's algorithm.
        var noDelay: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    /// Closes the socket without sending DISCONNECT (an abrupt client loss, as far as the broker can tell).
    func close() {
        if socket >= 0 { Glibc.close(socket) }
        socket = -1
    }

    /// Encodes `packet` in this connection's version (a CONNECT in its own) and writes all of it.
    func send(_ packet: MQTTPacket) throws(BrokerConnectionError) {
        try sendBytes(packet.encoded(version: version))
    }

    /// Writes raw bytes: packets the codec would not produce (unknown protocol levels, reserved flags).
    func sendBytes(_ bytes: [UInt8]) throws(BrokerConnectionError) {
        var sent = 0
        while sent < bytes.count {
            // MSG_NOSIGNAL: a write after the broker closed must fail with EPIPE, not kill the test process.
            let result = bytes.withUnsafeBytes { raw in
                Glibc.send(socket, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw .systemCall("send", errno: errno)
            }
            sent += result
        }
    }

    /// The next whole packet from the broker. Throws `.timedOut` when one read waits longer than `timeout`
    /// seconds, `.closedByBroker` at end of stream.
    func receive(timeout: Int = 5) throws(BrokerConnectionError) -> MQTTPacket {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            do {
                if let packet = try decoder.next() { return packet }
            } catch {
                throw .decode(error)
            }
            var interval = timeval(tv_sec: timeout, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            let descriptor = socket
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress!, $0.count, 0) }
            if count > 0 {
                decoder.feed(Array(chunk[0..<count]))
                continue
            }
            if count == 0 { throw .closedByBroker }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: throw .timedOut(seconds: timeout, bufferedBytes: decoder.bufferedByteCount)
            case ECONNRESET: throw .resetByBroker
            case let code: throw .systemCall("recv", errno: code)
            }
        }
    }

    /// Sends `packet` and returns the broker's next packet.
    func exchange(_ packet: MQTTPacket) throws(BrokerConnectionError) -> MQTTPacket {
        try send(packet)
        return try receive()
    }

    /// PINGREQ as a barrier: mosquitto handles one connection's packets in order, so whatever it queued for this
    /// client before our PINGREQ arrives ahead of the PINGRESP. Returns the packets received before the PINGRESP,
    /// which lets a test show that nothing (no will, no retained message) was sent, without waiting on a clock.
    func packetsBeforePingResponse() throws(BrokerConnectionError) -> [MQTTPacket] {
        try send(.pingReq)
        var packets: [MQTTPacket] = []
        while true {
            let packet = try receive()
            if packet == .pingResp { return packets }
            packets.append(packet)
        }
    }
}
