import Foundation
import Glibc
import MQTTCodec

/// The floor the engine is compared with: what mosquitto absorbs from the cheapest possible client.
/// Every PUBLISH is encoded once up front; each of the publishing sockets then writes one large batch
/// of identical packets again and again with blocking write(). No session, no schedule, no accounting.
struct ReferenceWriter {
    let port: UInt16
    let publishers: Int
    let messagesPerPublisher: Int
    let payloadSize: Int
    let withSubscriber: Bool

    struct Result {
        var seconds: Double
        var messages: Int
        var delivered: Int
        /// CPU of the reading thread alone (µs): what receiving the delivered messages costs a minimal reader.
        var readerCPUMicroseconds: Double
    }

    /// A blocking TCP socket connected to the broker with a CONNACK received, or nil.
    static func connect(port: UInt16, clientID: String) -> Int32? {
        guard let fd = connectUnanswered(port: port, clientID: clientID) else { return nil }
        // CONNACK is 4 bytes in 3.1.1 (§3.2).
        guard readExactly(fd, count: 4) else { close(fd); return nil }
        return fd
    }

    /// A blocking TCP socket connected to the broker with its CONNECT written, the CONNACK left for the caller, or nil.
    static func connectUnanswered(port: UInt16, clientID: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { close(fd); return nil }
        let connect = MQTTPacket.connect(MQTTConnect(version: .v3_1_1, clientID: clientID, keepAlive: 60))
        guard writeAll(fd, connect.encoded(version: .v3_1_1)) else { close(fd); return nil }
        return fd
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return false }
                offset += written
            }
            return true
        }
    }

    static func readExactly(_ fd: Int32, count: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, count - got) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            got += n
        }
        return true
    }

    func run() -> Result? {
        let packetsPerBatch = 1000
        var subscriber: Int32?
        var packetSize = 0
        if withSubscriber {
            guard let fd = Self.connect(port: port, clientID: "ref-sub") else { return nil }
            let subscribe = MQTTPacket.subscribe(MQTTSubscribe(
                packetID: 1, subscriptions: [MQTTSubscription(filter: "ref/+/data", qos: .atMostOnce)]))
            guard Self.writeAll(fd, subscribe.encoded(version: .v3_1_1)), Self.readExactly(fd, count: 5) else {
                close(fd); return nil
            }
            subscriber = fd
        }
        var sockets: [Int32] = []
        var batches: [[UInt8]] = []
        for index in 0..<publishers {
            guard let fd = Self.connect(port: port, clientID: "ref-pub-\(index)") else {
                sockets.forEach { close($0) }
                return nil
            }
            sockets.append(fd)
            let packet = MQTTPacket.publish(MQTTPublish(
                topic: "ref/\(index)/data", payload: [UInt8](repeating: 0x5A, count: payloadSize)))
                .encoded(version: .v3_1_1)
            packetSize = packet.count
            var batch: [UInt8] = []
            batch.reserveCapacity(packet.count * packetsPerBatch)
            for _ in 0..<packetsPerBatch { batch.append(contentsOf: packet) }
            batches.append(batch)
        }
        let total = publishers * messagesPerPublisher
        let expectedBytes = total * packetSize
        // Written by the reading thread before it leaves `group`: [0] messages delivered, [1] its CPU in µs.
        let readerResults = UnsafeMutablePointer<Int>.allocate(capacity: 2)
        readerResults.initialize(repeating: 0, count: 2)
        defer { readerResults.deallocate() }
        let group = DispatchGroup()
        let start = DispatchTime.now().uptimeNanoseconds
        if let subscriber {
            let subscriberBox = subscriber
            let size = packetSize
            let target = UnsafeMutableSendablePointer(readerResults)
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var buffer = [UInt8](repeating: 0, count: 1 << 20)
                var received = 0
                while received < expectedBytes {
                    let n = buffer.withUnsafeMutableBytes { read(subscriberBox, $0.baseAddress!, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }  // timeout (30 s) or close: the count says what arrived
                    received += n
                }
                target.pointer[0] = received / size
                var cpu = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu)
                target.pointer[1] = cpu.tv_sec * 1_000_000 + cpu.tv_nsec / 1000
            }
        }
        let sendGroup = DispatchGroup()
        for (index, fd) in sockets.enumerated() {
            let batch = batches[index]
            let rounds = messagesPerPublisher / packetsPerBatch
            let remainder = messagesPerPublisher % packetsPerBatch
            sendGroup.enter()
            Thread.detachNewThread {
                defer { sendGroup.leave() }
                for _ in 0..<rounds { if !Self.writeAll(fd, batch) { return } }
                if remainder > 0 { _ = Self.writeAll(fd, Array(batch[0..<(remainder * batch.count / packetsPerBatch)])) }
                // The writes may all sit in socket buffers; mosquitto handles a connection's packets in order,
                // so its PINGRESP (2 bytes, §3.13) proves it has read every PUBLISH before.
                if Self.writeAll(fd, MQTTPacket.pingReq.encoded(version: .v3_1_1)) { _ = Self.readExactly(fd, count: 2) }
            }
        }
        // Bounded: the writers block at most as long as mosquitto keeps reading; give up after 120 s.
        _ = sendGroup.wait(timeout: .now() + .seconds(120))
        _ = group.wait(timeout: .now() + .seconds(60))
        let end = DispatchTime.now().uptimeNanoseconds
        for fd in sockets { close(fd) }
        if let subscriber { close(subscriber) }
        return Result(seconds: Double(end - start) / 1e9, messages: total,
                      delivered: withSubscriber ? readerResults[0] : 0,
                      readerCPUMicroseconds: Double(readerResults[1]))
    }
}

struct UnsafeMutableSendablePointer: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Int>
    init(_ pointer: UnsafeMutablePointer<Int>) { self.pointer = pointer }
}
