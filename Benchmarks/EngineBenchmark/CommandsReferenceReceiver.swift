import FleetEngine
import FleetTransport
import Foundation
import Glibc
import MQTTCodec
import Synchronization

// The floor of the commands workload (issue 18): the cheapest receiver of the same commands. One thread, one epoll
// set over every vehicle's socket, recv(2) per ready socket and one 4-byte PUBACK send(2) per command; no session,
// no timers, no accounting beyond a count. What it costs a core is what the kernel's loopback TCP work (the
// command's receive, the PUBACK's send and its delivery into the broker's socket, charged to the sender) and one
// wakeup per turn cost on this machine: the engine's figure is read against it.

/// What the reference receiver measured over the backend's publishing window.
struct CommandsReferenceFigures {
    var connected = 0
    var received = 0
    var pubacksSent = 0
    /// The receiving thread's CPU (µs) between the backend's start and its end.
    var threadCPU = 0.0
    var wallSeconds = 0.0
    var epollWaits = 0
    var error: String?
}

enum CommandsReferenceReceiver {
    /// `vehicles` clients (ids "ref-car-N"), each subscribed at QoS 1 to cmd/N (the engine's topics: the two never
    /// run at the same time), then one thread receiving while a backend publishes `vehicles` commands a second for
    /// `seconds`. Nil figures' `error` says what failed.
    static func run(port: UInt16, vehicles: Int, seconds: Int, runID: UInt64, brokerPid: Int32?) -> CommandsReferenceFigures {
        var figures = CommandsReferenceFigures()
        var sockets: [Int32] = []
        sockets.reserveCapacity(vehicles)
        defer { sockets.forEach { close($0) } }
        // Connects in windows of 256 (CONNECT written, CONNACK read), then every SUBSCRIBE and its SUBACK.
        let window = 256
        var index = 0
        while index < vehicles {
            let end = min(vehicles, index + window)
            var opened: [Int32] = []
            for vehicle in index..<end {
                guard let fd = ReferenceWriter.connectUnanswered(port: port, clientID: "ref-car-\(vehicle)") else {
                    opened.forEach { close($0) }
                    figures.error = "reference receiver: connect \(vehicle) failed: errno \(errno)"
                    return figures
                }
                opened.append(fd)
            }
            for fd in opened where !ReferenceWriter.readExactly(fd, count: 4) {
                opened.forEach { close($0) }
                figures.error = "reference receiver: no CONNACK"
                return figures
            }
            for (offset, fd) in opened.enumerated() {
                let subscribe = MQTTPacket.subscribe(MQTTSubscribe(
                    packetID: 1, subscriptions: [MQTTSubscription(filter: "cmd/\(index + offset)", qos: .atLeastOnce)]))
                guard ReferenceWriter.writeAll(fd, subscribe.encoded(version: .v3_1_1)) else {
                    opened.forEach { close($0) }
                    figures.error = "reference receiver: SUBSCRIBE not written"
                    return figures
                }
            }
            // SUBACK of one topic: 5 bytes (§3.9).
            for fd in opened where !ReferenceWriter.readExactly(fd, count: 5) {
                opened.forEach { close($0) }
                figures.error = "reference receiver: no SUBACK"
                return figures
            }
            sockets.append(contentsOf: opened)
            index = end
        }
        figures.connected = sockets.count
        guard let backend = ReferenceWriter.connect(port: port, clientID: "ref-backend") else {
            figures.error = "reference receiver: backend could not connect"
            return figures
        }
        defer { close(backend) }
        let backendFigures = CommandBackendFigures()
        let receiver = ReceiverThread(sockets: sockets, backend: backendFigures)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            receiver.run()
            done.signal()
        }
        // The backend starts once the receiver waits in epoll (its set is built).
        while !receiver.ready.load(ordering: .acquiring) { usleep(1_000) }
        let backendThread = Thread {
            runCommandBackend(fd: backend, vehicles: vehicles, rate: vehicles, seconds: seconds, runID: runID,
                              brokerPid: brokerPid, figures: backendFigures)
        }
        backendThread.start()
        done.wait()
        figures.received = receiver.received
        figures.pubacksSent = receiver.pubacksSent
        figures.threadCPU = receiver.windowCPU
        figures.wallSeconds = backendFigures.wallSeconds
        figures.epollWaits = receiver.epollWaits
        if let problem = receiver.problem ?? backendFigures.error { figures.error = problem }
        return figures
    }
}

/// The receiving thread: level-triggered epoll over every socket, recv per ready socket, a PUBACK per PUBLISH.
private final class ReceiverThread: @unchecked Sendable {
    // @unchecked: the counters are written by the receiving thread and read after it ended (`done`).
    let sockets: [Int32]
    let backend: CommandBackendFigures
    let ready = Atomic<Bool>(false)
    var received = 0
    var pubacksSent = 0
    var windowCPU = 0.0
    var epollWaits = 0
    var problem: String?

    init(sockets: [Int32], backend: CommandBackendFigures) {
        self.sockets = sockets
        self.backend = backend
    }

    func run() {
        let epoll: Epoll
        do {
            epoll = try Epoll(capacity: 1024)
            for (index, fd) in sockets.enumerated() {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                try epoll.add(fd, events: .readable, token: UInt64(index))
            }
        } catch {
            problem = "reference receiver: \(error)"
            ready.store(true, ordering: .releasing)
            return
        }
        // Bytes of a packet split across reads, per socket (commands are ~80 bytes: rare).
        var partial = [[UInt8]](repeating: [], count: sockets.count)
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        var puback: [UInt8] = [0x40, 0x02, 0, 0]
        var startCPU: Double?
        var stopAt: UInt64 = 0
        ready.store(true, ordering: .releasing)
        while true {
            if startCPU == nil, backend.started.load(ordering: .acquiring) { startCPU = threadCPUMicroseconds() }
            if stopAt == 0, backend.publishingEnded.load(ordering: .acquiring) {
                if let startCPU { windowCPU = threadCPUMicroseconds() - startCPU }
                // The broker's last deliveries: up to 10 s for the rest.
                stopAt = MonotonicClock.now() &+ 10_000_000_000
            }
            if stopAt != 0 && (received >= backend.sent || MonotonicClock.now() >= stopAt) { break }
            let count: Int
            do { count = try epoll.wait(timeoutMilliseconds: 100) } catch {
                problem = "reference receiver: \(error)"
                return
            }
            epollWaits += 1
            for slot in 0..<count {
                let index = Int(epoll.token(at: slot))
                let fd = sockets[index]
                let got = recv(fd, buffer, bufferSize, Int32(MSG_DONTWAIT))
                if got <= 0 {
                    if got < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                    problem = "reference receiver: connection \(index) ended (\(got), errno \(errno))"
                    try? epoll.remove(fd)
                    continue
                }
                let chunk = UnsafeRawBufferPointer(start: buffer, count: got)
                if partial[index].isEmpty {
                    let used = acknowledge(chunk, fd: fd, puback: &puback)
                    if used < got { partial[index] = Array(chunk[used...]) }
                } else {
                    var whole = partial[index]
                    whole.append(contentsOf: chunk)
                    let used = whole.withUnsafeBytes { acknowledge($0, fd: fd, puback: &puback) }
                    partial[index] = used < whole.count ? Array(whole[used...]) : []
                }
            }
        }
    }

    /// Whole packets in `bytes`: a PUBACK for each QoS 1 PUBLISH. Returns the bytes used.
    private func acknowledge(_ bytes: UnsafeRawBufferPointer, fd: Int32, puback: inout [UInt8]) -> Int {
        var offset = 0
        while offset + 2 <= bytes.count {
            let first = bytes[offset]
            var length = 0, shift = 0, cursor = offset + 1
            var complete = false
            while cursor < bytes.count && shift <= 21 {
                let byte = bytes[cursor]
                length |= Int(byte & 0x7F) << shift
                cursor += 1
                if byte & 0x80 == 0 { complete = true; break }
                shift += 7
            }
            guard complete, cursor + length <= bytes.count else { break }
            if first & 0xF0 == 0x30 {
                received += 1
                if (first >> 1) & 0x03 == 1, length >= 4 {
                    let topicLength = Int(bytes[cursor]) << 8 | Int(bytes[cursor + 1])
                    let id = cursor + 2 + topicLength
                    if id + 2 <= cursor + length {
                        puback[2] = bytes[id]
                        puback[3] = bytes[id + 1]
                        if puback.withUnsafeBytes({ send(fd, $0.baseAddress, 4, Int32(MSG_DONTWAIT)) }) == 4 {
                            pubacksSent += 1
                        }
                    }
                }
            }
            offset = cursor + length
        }
        return offset
    }
}
