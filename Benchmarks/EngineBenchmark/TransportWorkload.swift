import FleetBroker
import FleetEngine
import FleetTransport
import Foundation
import Glibc
import MQTTCodec
import MQTTSession

// The `transports` workload: the same QoS 0 load and the same idle fleet on tcp, tls, ws and wss in one run.
// One mosquitto serves tcp, ws and mqtts (so tcp and ws compare on the same broker); FleetBroker has one TLS
// listener per broker, so wss gets a second, identically configured one.


@MainActor
func transports(messages: Int, idleClients: Int) {
    let certificates: ThrowawayCertificates
    do { certificates = try ThrowawayCertificates.make(label: "bench-certs") } catch {
        print(json(["workload": "transports", "error": "certificates: \(error)"])); return
    }
    defer { certificates.remove() }
    var mainConfiguration = brokerConfiguration
    mainConfiguration.websocketsListener = true
    mainConfiguration.tlsListener = MosquittoTLSListener(
        caFile: certificates.caFile, certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey)
    var secureWebSocketConfiguration = mainConfiguration
    secureWebSocketConfiguration.websocketsListener = false
    secureWebSocketConfiguration.tlsListener?.websockets = true
    let main: MosquittoBroker
    let secure: MosquittoBroker
    do {
        main = try MosquittoBroker(configuration: mainConfiguration)
        secure = try MosquittoBroker(configuration: secureWebSocketConfiguration)
    } catch {
        print(json(["workload": "transports", "error": "mosquitto did not start: \(error)"])); return
    }
    defer {
        main.stop()
        secure.stop()
    }
    let endpoints: [(String, EngineBrokerEndpoint)]
    do {
        let tls = EngineTLS(context: try TLSClientContext(configuration: .init(caFile: certificates.caFile)),
                            serverName: "127.0.0.1")
        let webSocket = EngineWebSocket(host: "127.0.0.1", path: "/mqtt")
        func address(_ port: UInt16?) throws -> SocketAddress { try SocketAddress(ipAddress: "127.0.0.1", port: port ?? 0) }
        endpoints = [
            ("tcp", EngineBrokerEndpoint(address: try address(main.port))),
            ("tls", EngineBrokerEndpoint(address: try address(main.tlsPort), transport: .tls(tls))),
            ("ws", EngineBrokerEndpoint(address: try address(main.layout.websocketsPort), transport: .webSocket(webSocket))),
            ("wss", EngineBrokerEndpoint(address: try address(secure.tlsPort), transport: .secureWebSocket(tls, webSocket))),
        ]
    } catch {
        print(json(["workload": "transports", "error": "\(error)"])); return
    }

    // QoS 0 throughput per transport: publish only (the client's own cost: framing, encryption, writes), then
    // with one subscriber to every publisher (the delivered rate, usually bound by the broker).
    for subscriber in [false, true] {
        var rates: [String: Double] = [:]
        for (name, endpoint) in endpoints {
            guard let figures = engineThroughput(qos: .atMostOnce, window: 32, publishers: 10, messages: messages,
                                                 subscriber: subscriber, endpoint: endpoint,
                                                 brokerPid: name == "wss" ? secure.pid : main.pid) else {
                print(json(["workload": "transports", "transport": name, "error": "engine did not start"])); continue
            }
            rates[name] = figures.messagesPerSecond
            var line = throughputLine("transports", ["transport": name, "publishers": 10,
                                                     "messages_per_publisher": messages, "subscriber": subscriber], figures)
            if name != "tcp", let tcp = rates["tcp"] { line["rate_over_tcp"] = round3(figures.messagesPerSecond / tcp) }
            if name == "ws" && subscriber { line["target_rate_over_tcp_min"] = 0.7 }
            print(json(finite(line)))
        }
    }

    // Idle clients per transport: RSS per connected client, connect (and TLS handshake) rate.
    for (name, endpoint) in endpoints {
        transportIdle(name: name, endpoint: endpoint, clients: idleClients)
    }
}

@MainActor
func transportIdle(name: String, endpoint: EngineBrokerEndpoint, clients: Int) {
    let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 60)
    var fleet = EngineFleet(name: "idle", count: clients, clientID: { "idle-\(name)-\($0)" }, session: settings,
                            maxConnectsInFlight: 256)
    fleet.endpoints = [endpoint]
    // Freed memory of the earlier workloads back to the system, so it is not reused unseen by this one.
    _ = releaseFreeHeap(0)
    let rssBefore = residentKiB()
    let configuration = EngineConfiguration(fleets: [fleet], brokers: [brokerAddress],
                                            readyTimeout: 60_000_000_000, drainTimeout: 1_000_000_000)
    let engine: Engine
    do { engine = try Engine(configuration: configuration) } catch {
        print(json(["workload": "transports_idle", "transport": name, "error": "\(error)"])); return
    }
    // Sampled at every stop poll: the largest RSS is the one with every client connected (no client publishes),
    // the last CPU reading excludes the final disconnects. Connect time from the engine's own phase times.
    final class Samples: @unchecked Sendable {
        var peakRSS = 0
        var lastCPU = 0.0
    }
    let samples = Samples()
    let cpuBefore = cpuMicroseconds()
    let result = engine.run(duration: 300_000_000, shouldStop: {
        samples.peakRSS = max(samples.peakRSS, residentKiB())
        samples.lastCPU = cpuMicroseconds()
        return false
    })
    let connectSeconds = Double((result.phases.allReady ?? result.phases.publishStart) &- result.phases.connectStart) / 1e9
    let connectCPU = samples.lastCPU - cpuBefore
    let connected = max(result.peakConnected, 1)
    let perClient = Double(samples.peakRSS - rssBefore) * 1024 / Double(connected)
    let rate = Double(result.counters.connectsSucceeded) / connectSeconds
    var line: [String: Any] = [
        "workload": "transports_idle", "transport": name, "clients": clients,
        "connects_succeeded": result.counters.connectsSucceeded, "peak_connected": result.peakConnected,
        "connect_seconds": round3(connectSeconds), "connects_per_second": rate.rounded(),
        "cpu_us_per_connect": (connectCPU / Double(max(result.counters.connectsSucceeded, 1))).rounded(),
        "rss_bytes_per_client": perClient.rounded(), "failures_by_reason": failures(result.counters),
        "transport_errors": result.counters.transportErrors,
    ]
    let handshakes = result.latency.histogram(.tlsHandshake, from: .sent)
    if handshakes.totalCount > 0 {
        line["tls_handshakes_per_second"] = (Double(handshakes.totalCount) / connectSeconds).rounded()
        line["tls_handshake_p50_us"] = handshakes.valueAtPercentile(50)
        line["tls_handshake_p99_us"] = handshakes.valueAtPercentile(99)
        line["target_rss_bytes_per_client_max"] = 40_960
    }
    let upgrades = result.latency.histogram(.wsUpgrade, from: .sent)
    if upgrades.totalCount > 0 {
        line["ws_upgrade_p50_us"] = upgrades.valueAtPercentile(50)
        line["ws_upgrade_p99_us"] = upgrades.valueAtPercentile(99)
    }
    print(json(finite(line)))
}

/// Non-finite numbers (a rate over zero seconds) as strings: JSONSerialization refuses them.
func finite(_ line: [String: Any]) -> [String: Any] {
    line.mapValues { value in
        if let number = value as? Double, !number.isFinite { return "\(number)" }
        return value
    }
}

/// glibc's malloc_trim (not exported by the Glibc module): gives free heap pages back to the kernel.
@_silgen_name("malloc_trim")
func releaseFreeHeap(_ pad: Int) -> Int32
