import FleetBroker
import FleetMetrics
import FleetTransport
import MQTTCodec
import MQTTSession
import Testing
@testable import FleetEngine

/// Keepalive against mosquitto: an idle client pings and gets every PINGRESP back in time.
@Suite("Engine keepalive against mosquitto")
struct EngineKeepAliveTests {
    @Test("an idle 3.1.1 client with keepalive 1 s pings at least twice in 2.6 s and misses no PINGRESP")
    func idleClientPings() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let fleet = EngineFleet(name: "idle", count: 1, clientID: { "ka-\($0)" },
                                session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 1))
        let configuration = EngineConfiguration(
            fleets: [fleet], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1,
            drainTimeout: 0)
        let result = try Engine(configuration: configuration).run(duration: 2_600_000_000)
        let counters = result.counters
        // In: CONNACK (4 bytes, §3.2) then one PINGRESP (2 bytes, §3.13) per PINGREQ.
        let pings = (counters.bytesIn - 4) / 2
        #expect(counters.bytesIn == 4 + 2 * pings)
        #expect(pings >= 2)
        // Out: CONNECT (2 + 10 variable header + 2 + 4 client id "ka-0" = 18 bytes, §3.1), one PINGREQ (2 bytes,
        // §3.12) per PINGRESP received, DISCONNECT (2 bytes, §3.14).
        #expect(counters.bytesOut == 18 + 2 * pings + 2)
        #expect(counters.ackTimeouts.total == 0)
        #expect(counters.disconnects == [.clientInitiated: 1])
    }
}
