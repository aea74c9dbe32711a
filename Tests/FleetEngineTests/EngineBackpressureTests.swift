import Dispatch
import FleetTestSupport
import FleetTransport
import Foundation
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// A broker stand-in that accepts `connections` clients, answers each CONNECT with CONNACK, then reads nothing
/// until `release()`: the clients' sockets fill and their writes come back partial or would-block. After the
/// release it reads every connection to its end and counts the PUBLISH packets (mosquitto cannot be told to stop
/// reading; SIGSTOP would also stop it answering the connects).
final class StallingPeer: @unchecked Sendable {
    let port: UInt16
    private let listener: TCPListener
    private let connections: Int
    private let released = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var topicsByConnection: [[String: Int]] = []
    private var disconnectsSeen = 0
    private var problems: [String] = []

    init(connections: Int) throws {
        listener = try TCPListener.listen(on: SocketAddress(ipAddress: "127.0.0.1", port: 0))
        port = try listener.localAddress().port
        self.connections = connections
        Thread { [self] in serve() }.start()
    }

    func release() { released.signal() }

    /// PUBLISH count per topic, one dictionary per connection (in accept order); DISCONNECTs seen; anything
    /// that went wrong. Nil if the peer did not finish within 20 s.
    func outcome() -> (topics: [[String: Int]], disconnects: Int, problems: [String])? {
        guard finished.wait(timeout: .now() + .seconds(20)) == .success else { return nil }
        return lock.withLock { (topicsByConnection, disconnectsSeen, problems) }
    }

    private func note(_ problem: String) { lock.withLock { problems.append(problem) } }

    private static func waitReadable(_ descriptor: Int32, milliseconds: Int32 = 10_000) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) == 1
    }

    private func serve() {
        defer {
            try? listener.close()
            finished.signal()
        }
        var sockets: [TCPSocket] = []
        var decoders: [MQTTDecoder] = []
        defer { sockets.forEach { try? $0.close() } }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        // Accept and answer every CONNECT first.
        while sockets.count < connections {
            guard Self.waitReadable(listener.fileDescriptor), case .processed(let socket)? = try? listener.accept()
            else { return note("no connection to accept") }
            sockets.append(socket)
            var decoder = MQTTDecoder(version: .v3_1_1)
            var connected = false
            while !connected {
                guard Self.waitReadable(socket.fileDescriptor),
                      case .bytes(let count)? = try? chunk.withUnsafeMutableBytes({ try socket.read(into: $0) })
                else { return note("no CONNECT") }
                decoder.feed(Array(chunk[0..<count]))
                if case .connect? = try? decoder.next() { connected = true }
            }
            decoders.append(decoder)
            let connack = MQTTPacket.connAck(MQTTConnAck(sessionPresent: false, reasonCode: .success))
                .encoded(version: .v3_1_1)
            guard case .processed(connack.count)? = try? connack.withUnsafeBytes({ try socket.write(from: $0) })
            else { return note("CONNACK not written whole") }
        }
        lock.withLock { topicsByConnection = Array(repeating: [:], count: connections) }
        // Read nothing until released (bounded, so a failing test still ends).
        guard released.wait(timeout: .now() + .seconds(15)) == .success else { return note("never released") }
        // Then read every connection to its end.
        var open = Set(0..<connections)
        while !open.isEmpty {
            var entries = open.sorted().map { pollfd(fd: sockets[$0].fileDescriptor, events: Int16(POLLIN), revents: 0) }
            guard poll(&entries, nfds_t(entries.count), 10_000) > 0 else { return note("connections never ended") }
            for (index, entry) in zip(open.sorted(), entries) where entry.revents != 0 {
                let read = try? chunk.withUnsafeMutableBytes { try sockets[index].read(into: $0) }
                switch read {
                case .bytes(let count)?:
                    decoders[index].feed(Array(chunk[0..<count]))
                    do {
                        while let packet = try decoders[index].next() {
                            switch packet {
                            case .publish(let publish):
                                lock.withLock { topicsByConnection[index][publish.topic, default: 0] += 1 }
                            case .disconnect:
                                lock.withLock { disconnectsSeen += 1 }
                            default:
                                note("unexpected \(packet)")
                            }
                        }
                    } catch {
                        note("decode error \(error)")
                        open.remove(index)
                    }
                case .wouldBlock?:
                    continue
                case .endOfStream?, nil:
                    open.remove(index)
                }
            }
        }
    }
}

/// Publishers whose broker stops reading: their sockets fill, every write after that is partial or would block,
/// publishing pauses (EPOLLOUT interest), and once the broker reads again every message arrives exactly once.
/// Run on both write paths: partial and would-block completions of the lane's io_uring must be handled exactly
/// as send(2)'s are.
@Suite("Engine under backpressure from a broker that stops reading", .serialized)
struct EngineBackpressureTests {
    static let publishers = 2
    static let messages = 8_000
    static let payloadSize = 1_024

    @Test("both write paths: sockets fill, publishing pauses, then every message arrives exactly once",
          arguments: [true, false])
    func stalledBroker(batchedSends: Bool) throws {
        let peer = try StallingPeer(connections: Self.publishers)
        let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 30)
        // 8,000 x 1 KiB per publisher: more than twice what the kernel may buffer for one connection
        // (tcp_wmem's 4 MiB maximum; the receiver's buffer cannot grow while nothing reads it).
        let stream = EngineStream(topic: { index, _ in "stall/\(index)" }, qos: .atMostOnce,
                                  plan: .rate(perSecond: 1e9), behind: .catchUp, payloadSize: Self.payloadSize,
                                  messageLimit: UInt64(Self.messages))
        let fleet = EngineFleet(name: "publishers", count: Self.publishers, clientID: { "stall-\($0)" },
                                session: settings, streams: [stream])
        // One lane: both publishers are dirty in the same turns, so the batched path really uses the ring.
        var configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: peer.port)], lanes: 1,
            drainTimeout: 2_000_000_000)
        configuration.batchedSends = batchedSends
        let engine = try Engine(configuration: configuration)
        #expect(engine.lanes.allSatisfy { ($0.sendRing != nil) == (batchedSends && EngineTests.ioUringAvailable) })

        // Once every publisher is connected, has bytes its socket did not take and waits for EPOLLOUT, the peer
        // reads again.
        let stalled = DispatchSemaphore(value: 0)
        let observer = DispatchGroup()
        observer.enter()
        TestThread.start {
            defer {
                peer.release()
                observer.leave()
            }
            for _ in 0..<500 {
                let blocked = engine.lanes.allSatisfy { lane in
                    lane.queue.sync {
                        lane.clients.allSatisfy { $0.phase == .connected && $0.wantsWritable && !$0.outbound.isEmpty }
                    }
                }
                if blocked {
                    stalled.signal()
                    return
                }
                usleep(20_000)
            }
        }
        let result = engine.run(duration: 5_000_000_000)
        #expect(observer.wait(timeout: .now() + .seconds(20)) == .success)
        #expect(stalled.wait(timeout: .now()) == .success, "the publishers' sockets never filled")
        let outcome = try #require(peer.outcome())
        #expect(outcome.problems == [])
        // Each connection carried one publisher's stream, whole.
        let byTopic = outcome.topics.sorted { ($0.keys.min() ?? "") < ($1.keys.min() ?? "") }
        #expect(byTopic == [["stall/0": Self.messages], ["stall/1": Self.messages]])
        #expect(outcome.disconnects == Self.publishers)
        #expect(result.counters.published.qos0 == UInt64(Self.publishers * Self.messages))
        #expect(result.counters.disconnects == [.clientInitiated: UInt64(Self.publishers)])
        #expect(result.counters.abandonedPublishes == 0)
        #expect(engine.lanes.allSatisfy { $0.sendRing?.isUsable ?? true })
    }
}
