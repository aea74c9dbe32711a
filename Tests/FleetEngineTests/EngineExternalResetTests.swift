import Dispatch
import FleetBroker
import FleetMetrics
import FleetTestSupport
import FleetTransport
import Foundation
import Glibc
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// A connection destroyed from outside the process (as a NAT or firewall dropping it would), not by the engine
/// nor the broker: `ss -K` asks the kernel (SOCK_DESTROY) to abort the one client socket bound to 127.0.0.3.
/// Needs root (CAP_NET_ADMIN) and iproute2's `ss`; skipped otherwise.
@Suite("Engine against an externally destroyed socket")
struct EngineExternalResetTests {
    static let canDestroySockets = geteuid() == 0 && access("/usr/bin/ss", X_OK) == 0

    @Test("a socket the kernel aborts is counted as a socket error once and the client reconnects",
          .enabled(if: canDestroySockets))
    func kernelAbortedSocket() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let fleet = EngineFleet(name: "cars", count: 2, clientID: { "cut-\($0)" },
                                session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30),
                                reconnect: .immediateThenInterval(retries: 1, interval: 1_000_000_000))
        // Global client 0 binds 127.0.0.2, client 1 binds 127.0.0.3: the filter below matches client 1 only.
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)],
            sourceAddresses: [try SocketAddress(ipAddress: "127.0.0.2", port: 0),
                              try SocketAddress(ipAddress: "127.0.0.3", port: 0)],
            lanes: 2, drainTimeout: 0)
        let engine = try Engine(configuration: configuration)
        let port = broker.port
        let done = DispatchGroup()
        done.enter()
        TestThread.start {
            defer { done.leave() }
            guard EngineWillTests.waitUntilReady(engine) else { return }
            let ss = Process()
            ss.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
            ss.arguments = ["-K", "-t", "src", "127.0.0.3", "dport", "=", ":\(port)"]
            ss.standardOutput = FileHandle.nullDevice
            ss.standardError = FileHandle.nullDevice
            try? ss.run()
            ss.waitUntilExit()
        }
        // Publishing lasts long enough for a slow spawn of `ss` on a loaded machine to land inside the run.
        let result = engine.run(duration: 2_500_000_000)
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success)
        let counters = result.counters
        #expect(counters.connectsAttempted == 3)
        #expect(counters.connectsSucceeded == 3, "counters: \(counters)")
        #expect(counters.reconnects == 1)
        #expect(counters.disconnects == [.socketError(errno: ECONNABORTED): 1, .clientInitiated: 2])
    }
}
