import FleetBroker
import Glibc
import FleetMetrics
import FleetTestSupport
import FleetTransport
import MQTTCodec
import MQTTSession
import Synchronization
import Testing
@testable import FleetEngine

/// Network conditions per vehicle (`Lane+Network`) against a real mosquitto: the emulated delay shows in the
/// vehicle-seen latencies and not in the broker-side ones, bandwidth caps the byte rate, drops and outages
/// are counted exactly.
@Suite("Engine network conditions against mosquitto", .serialized)
struct EngineNetworkTests {
    static func fleets(cars: Int, qos: MQTTQoS, perSecond: Double, messages: UInt64, payload: Int = 64,
                       network: EngineNetworkProfile?,
                       reconnect: ReconnectPolicy = .none) -> [EngineFleet] {
        let settings = MQTTSessionSettings(version: .v5, keepAliveSeconds: 30)
        var carFleet = EngineFleet(
            name: "cars", count: cars, clientID: { "car-\($0)" }, session: settings,
            streams: [EngineStream(topic: { index, _ in "cars/\(index)/telemetry" }, qos: qos,
                                   plan: .rate(perSecond: perSecond), payloadSize: payload, messageLimit: messages)],
            reconnect: reconnect)
        carFleet.network = network
        let backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" }, session: settings,
            subscriptions: { _, _ in [MQTTSubscription(filter: "cars/+/telemetry", qos: .atLeastOnce)] })
        return [carFleet, backend]
    }

    static func run(_ fleets: [EngineFleet], port: UInt16, seconds: Double, seed: UInt64 = 11) throws -> EngineResult {
        let configuration = EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: port)], lanes: 2, seed: seed,
            readyTimeout: 10_000_000_000, drainTimeout: 3_000_000_000)
        let engine = try Engine(configuration: configuration)
        return engine.run(duration: UInt64(seconds * 1e9))
    }

    @Test("100 ms one way: end-to-end ~+100 ms, PUBACK ~+200 ms; the broker-side figures hold neither")
    func fixedLatency() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var profile = EngineNetworkProfile()
        profile.latencyUp = .fixed(100_000_000)
        profile.latencyDown = .fixed(100_000_000)
        let result = try Self.run(Self.fleets(cars: 5, qos: .atLeastOnce, perSecond: 20, messages: 30, network: profile),
                                  port: broker.port, seconds: 2.5)
        let cars = try #require(result.fleets["cars"])
        let backend = try #require(result.fleets["backend"])
        #expect(cars.counters.published[.atLeastOnce] == 150)
        #expect(cars.counters.acked[.atLeastOnce] == 150)
        #expect(backend.counters.received[.atLeastOnce] == 150)
        #expect(backend.delivery[1].lost == 0)
        #expect(cars.networkClients == 5)
        // A fixed delay and no bandwidth limit: every chunk waited exactly 100 ms each way.
        #expect(cars.network.chunksUp > 0 && cars.network.chunksDown > 0)
        #expect(cars.network.delayUpNanoseconds == cars.network.chunksUp * 100_000_000)
        #expect(cars.network.delayDownNanoseconds == cars.network.chunksDown * 100_000_000)
        #expect(cars.network.stalls == 0)
        // The profile's delay is a floor (nothing arrives sooner); the loopback broker adds a few ms at most, and
        // a timer fires up to a tick (1 ms) after its deadline: 40 ms of room for a loaded 2-core machine.
        let endToEnd = backend.latency.histogram(.endToEnd, from: .intended)
        #expect(endToEnd.totalCount == 150)
        #expect(endToEnd.min >= 100_000)
        #expect((100_000...140_000).contains(endToEnd.valueAtPercentile(50)))
        let puback = cars.latency.histogram(.puback, from: .intended)
        #expect(puback.totalCount == 150)
        #expect(puback.min >= 200_000)
        #expect((200_000...240_000).contains(puback.valueAtPercentile(50)))
        let connect = cars.latency.histogram(.connect, from: .sent)
        #expect(connect.min >= 200_000)
        // Broker side: from leaving one emulated link to reaching the other, so without the 100/200 ms.
        let pubackBroker = cars.latency.histogram(.pubackBrokerSide, from: .sent)
        #expect(pubackBroker.totalCount == 150)
        #expect(pubackBroker.valueAtPercentile(50) < 40_000)
        let endToEndBroker = backend.latency.histogram(.endToEndBrokerSide, from: .sent)
        #expect(endToEndBroker.totalCount == 150)
        #expect(endToEndBroker.valueAtPercentile(50) < 40_000)
        #expect(cars.counters.disconnects == [.clientInitiated: 5])

        // The same run without the profile: the medians differ by the profile's 100 and 200 ms (a tick of timer
        // slack each way, and 30 ms of room for a loaded machine).
        let plain = try Self.run(Self.fleets(cars: 5, qos: .atLeastOnce, perSecond: 20, messages: 30, network: nil),
                                 port: broker.port, seconds: 2.5)
        let plainEndToEnd = try #require(plain.fleets["backend"]).latency.histogram(.endToEnd, from: .intended)
        let plainPuback = try #require(plain.fleets["cars"]).latency.histogram(.puback, from: .intended)
        #expect(plainEndToEnd.totalCount == 150 && plainPuback.totalCount == 150)
        let addedEndToEnd = Int64(endToEnd.valueAtPercentile(50)) - Int64(plainEndToEnd.valueAtPercentile(50))
        let addedPuback = Int64(puback.valueAtPercentile(50)) - Int64(plainPuback.valueAtPercentile(50))
        #expect((95_000...130_000).contains(addedEndToEnd), "end-to-end +\(addedEndToEnd) µs")
        #expect((195_000...230_000).contains(addedPuback), "PUBACK +\(addedPuback) µs")
    }

    @Test("over TLS, WebSocket and both: the MQTT bytes are delayed below the layers, every message arrives once",
          arguments: EngineTransportTests.Layers.allCases)
    func layered(layers: EngineTransportTests.Layers) throws {
        let certificates = try TestCertificates.get()
        let broker = try EngineTransportTests.broker(for: layers, certificates: certificates)
        defer { broker.stop() }
        let endpoint = try EngineTransportTests.endpoint(for: layers, broker: broker, caFile: certificates.caFile)
        var profile = EngineNetworkProfile()
        profile.latencyUp = .fixed(20_000_000)
        profile.latencyDown = .fixed(20_000_000)
        let fleets = EngineTests.fleets(version: .v5, qos: .atLeastOnce, publishers: 3, messages: 200, subscribers: 2)
            .map { fleet in
                var fleet = fleet
                fleet.network = profile
                return fleet
            }
        let configuration = EngineConfiguration(fleets: EngineTransportTests.withEndpoint(fleets, endpoint), brokers: [],
                                                lanes: 2, drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        EngineTests.expectExactRoundTrip(result, qos: .atLeastOnce)
        #expect(result.counters.transportErrors.isEmpty)
        // Up 20 ms and down 20 ms for the PUBACK; publisher's up and subscriber's down for a delivery.
        #expect(result.latency.histogram(.puback, from: .intended).min >= 40_000)
        #expect(result.latency.histogram(.endToEnd, from: .intended).min >= 40_000)
        #expect(result.latency.histogram(.endToEndBrokerSide, from: .sent).valueAtPercentile(50) < 40_000)
    }

    @Test("a 64 kbit/s uplink caps the client's byte rate within 5 %, and publishing waits for it")
    func bandwidthCap() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var profile = EngineNetworkProfile()
        profile.bandwidthUp = 64_000
        // Offered: 100 messages/s of ~215 bytes, about 2.7 times what the link carries.
        let result = try Self.run(Self.fleets(cars: 1, qos: .atMostOnce, perSecond: 100, messages: 1_000,
                                              payload: 200, network: profile),
                                  port: broker.port, seconds: 4)
        let cars = try #require(result.fleets["cars"])
        #expect(cars.network.heldForBandwidth > 0)
        // Steady state: from one second after publishing began to the end of publishing, by the snapshots'
        // cumulative byte counts and their exact times.
        let window = result.timeline.filter {
            $0.intervalEnd >= result.phases.publishStart + 1_000_000_000 && $0.intervalEnd <= result.phases.publishEnd
        }
        let first = try #require(window.first)
        let last = try #require(window.last)
        #expect(last.intervalEnd - first.intervalEnd >= 1_900_000_000)
        let bytes = Double(last.fleets[0].counters.bytesOut - first.fleets[0].counters.bytesOut)
        let rate = bytes / (Double(last.intervalEnd - first.intervalEnd) / 1e9)
        #expect(rate >= 8_000 * 0.95 && rate <= 8_000 * 1.05, "uplink rate \(rate) B/s, cap 8000 B/s")
        // Nothing is lost that was counted as published: the queue drains before the run ends.
        #expect(result.fleets["backend"]?.delivery[0].lost == 0)
    }

    @Test("a 64 kbit/s downlink: messages reach the subscriber's session no faster, within 5 %")
    func downlinkCap() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var profile = EngineNetworkProfile()
        profile.bandwidthDown = 64_000
        var fleets = Self.fleets(cars: 1, qos: .atMostOnce, perSecond: 50, messages: 1_000, payload: 200, network: nil)
        fleets[1].network = profile
        let result = try Self.run(fleets, port: broker.port, seconds: 4)
        #expect(result.fleets["backend"]?.networkClients == 1)
        // Each delivery is one 222-byte PUBLISH (2 fixed header, 2 + 16 topic, 1 property length, 200 payload);
        // 50 a second offered is 11,100 B/s against the cap's 8,000.
        let window = result.timeline.filter {
            $0.intervalEnd >= result.phases.publishStart + 1_000_000_000 && $0.intervalEnd <= result.phases.publishEnd
        }
        let first = try #require(window.first)
        let last = try #require(window.last)
        #expect(last.intervalEnd - first.intervalEnd >= 1_900_000_000)
        let messages = Double(last.fleets[1].counters.received.total - first.fleets[1].counters.received.total)
        let rate = messages * 222 / (Double(last.intervalEnd - first.intervalEnd) / 1e9)
        #expect(rate >= 8_000 * 0.95 && rate <= 8_000 * 1.05, "downlink rate \(rate) B/s, cap 8000 B/s")
    }

    @Test("link drops and outages end connections: counted exactly, each one reconnected")
    func dropsAndOutages() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var profile = EngineNetworkProfile()
        profile.latencyUp = .fixed(5_000_000)
        profile.latencyDown = .fixed(5_000_000)
        profile.loss = NetworkLoss(rate: 0.2, burst: 2, dropInterval: 600_000_000)
        profile.outages = NetworkOutages(meanInterval: 800_000_000, duration: 100_000_000...200_000_000)
        let result = try Self.run(Self.fleets(cars: 6, qos: .atLeastOnce, perSecond: 10, messages: 1_000, network: profile,
                                              reconnect: .immediateThenInterval(retries: 100, interval: 50_000_000)),
                                  port: broker.port, seconds: 3)
        let cars = try #require(result.fleets["cars"])
        let network = cars.network
        #expect(network.stalls > 0)
        #expect(network.drops > 0)
        #expect(network.outages > 0)
        #expect(cars.counters.disconnects[.networkDrop] == network.drops)
        #expect(cars.counters.disconnects[.networkOutage] == network.outages)
        // Every cut reconnects, except one per client at most that came too late in the run for it.
        let cuts = network.drops + network.outages
        #expect(cars.counters.reconnects <= cuts && cars.counters.reconnects + 6 >= cuts)
        #expect(network.outageNanoseconds >= network.outages * 100_000_000)
        #expect(network.outageNanoseconds <= network.outages * 200_000_000)
        // Each stall waited one retransmission timeout (200 ms + the 10 ms round trip), so the mean delay shows it.
        let chunks = network.chunksUp + network.chunksDown
        let delay = network.delayUpNanoseconds + network.delayDownNanoseconds
        #expect(delay >= chunks * 5_000_000 + network.stalls * 210_000_000 / 2)
    }

    /// Each client's link counters after a run, by global index (the lanes keep their clients).
    static func linkCounters(_ engine: Engine) -> [Int: (profile: Int, counters: NetworkCounters)] {
        var result: [Int: (profile: Int, counters: NetworkCounters)] = [:]
        for lane in engine.lanes {
            lane.queue.sync {
                for client in lane.clients {
                    if let link = client.network { result[client.globalIndex] = (link.profile, link.counters) }
                }
            }
        }
        return result
    }

    @Test("two profiles in one fleet: 7 and 3 of 10 clients, each with its own delay, counted per profile")
    func twoProfiles() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var near = EngineNetworkProfile(name: "near")
        near.fraction = 0.7
        near.latencyUp = .fixed(20_000_000)
        near.latencyDown = .fixed(20_000_000)
        var far = EngineNetworkProfile(name: "far")
        far.fraction = 0.3
        far.latencyUp = .fixed(150_000_000)
        far.latencyDown = .fixed(150_000_000)
        var fleets = Self.fleets(cars: 10, qos: .atLeastOnce, perSecond: 10, messages: 10, network: nil)
        fleets[0].networks = [near, far]
        let configuration = EngineConfiguration(
            fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2, seed: 5,
            readyTimeout: 10_000_000_000, drainTimeout: 3_000_000_000)
        let engine = try Engine(configuration: configuration)
        let result = engine.run(duration: 2_500_000_000)
        let cars = try #require(result.fleets["cars"])
        #expect(cars.counters.acked[.atLeastOnce] == 100)
        #expect(result.fleets["backend"]?.delivery[1].lost == 0)
        #expect(cars.networkClients == 10)
        #expect(cars.networkProfiles.map { $0.clients } == [7, 3])
        // Fixed delays: every chunk of a profile waited exactly its delay.
        let (nearCounters, farCounters) = (cars.networkProfiles[0].counters, cars.networkProfiles[1].counters)
        #expect(nearCounters.delayUpNanoseconds == nearCounters.chunksUp * 20_000_000)
        #expect(farCounters.delayUpNanoseconds == farCounters.chunksUp * 150_000_000)
        #expect(farCounters.delayDownNanoseconds == farCounters.chunksDown * 150_000_000)
        // One chunk per MQTT packet up: CONNECT and 10 PUBLISHes per client (the end's DISCONNECT leaves at once).
        #expect(nearCounters.chunksUp == 7 * 11)
        #expect(farCounters.chunksUp == 3 * 11)
        // Cars 1, 2, 4, 5, 7, 8, 9 near, 0, 3, 6 far (the 3 of the second profile spread over the 10).
        let links = Self.linkCounters(engine)
        #expect((0..<10).map { links[$0]?.profile } == [1, 0, 0, 1, 0, 0, 1, 0, 0, 0].map { Optional($0) })
        let puback = cars.latency.histogram(.puback, from: .sent)
        #expect(puback.min >= 40_000)
        #expect(puback.max >= 300_000)
    }

    @Test("a tunnel stage is an outage: the same counters as a profile's, its disconnects still named tunnel")
    func tunnelIsAnOutage() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var profile = EngineNetworkProfile()
        profile.fraction = 0.5
        profile.latencyUp = .fixed(5_000_000)
        let configuration = EngineConfiguration(
            fleets: Self.fleets(cars: 8, qos: .atLeastOnce, perSecond: 10, messages: 1_000, network: profile,
                                reconnect: .immediateThenInterval(retries: 10, interval: 50_000_000)),
            brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2, seed: 3,
            readyTimeout: 10_000_000_000, drainTimeout: 3_000_000_000)
        let engine = try Engine(configuration: configuration)
        let cut = SharedCount()
        // The cut comes after 24 messages (0.3 s of 8 cars at 10/s each).
        let result = EngineFaultTests.run(engine, duration: 2_000_000_000, afterPublished: 24) { engine in
            cut.set((try? engine.tunnel(fleet: "cars", fraction: 1, outage: 300_000_000...300_000_000)) ?? -1)
        }
        #expect(cut.value == 8)
        let cars = try #require(result.fleets["cars"])
        #expect(cars.counters.disconnects[.tunnel] == 8)
        #expect(cars.counters.disconnects[.networkOutage] == nil)
        // All 8 counted as outages of 300 ms: the 4 with the profile on their links, the 4 without on the fleet's.
        #expect(cars.network.outages == 8)
        #expect(cars.network.outageNanoseconds == 8 * 300_000_000)
        #expect(cars.networkProfiles.map { $0.counters.outages } == [4])
        #expect(cars.counters.reconnects == 8)
    }

    @Test("TCP connect, TLS handshake and WebSocket upgrade each wait one emulated round trip (2 × 40 ms)",
          arguments: EngineTransportTests.Layers.allCases)
    func handshakesDelayed(layers: EngineTransportTests.Layers) throws {
        let certificates = try TestCertificates.get()
        let broker = try EngineTransportTests.broker(for: layers, certificates: certificates)
        defer { broker.stop() }
        let endpoint = try EngineTransportTests.endpoint(for: layers, broker: broker, caFile: certificates.caFile)
        var profile = EngineNetworkProfile()
        profile.latencyUp = .fixed(40_000_000)
        profile.latencyDown = .fixed(40_000_000)
        let fleets = EngineTests.fleets(version: .v5, qos: .atLeastOnce, publishers: 3, messages: 200, subscribers: 2)
            .map { fleet in
                var fleet = fleet
                fleet.network = profile
                return fleet
            }
        let configuration = EngineConfiguration(fleets: EngineTransportTests.withEndpoint(fleets, endpoint), brokers: [],
                                                lanes: 2, drainTimeout: 3_000_000_000)
        let result = try Engine(configuration: configuration).run(duration: 1_000_000_000)
        EngineTests.expectExactRoundTrip(result, qos: .atLeastOnce)
        #expect(result.counters.transportErrors.isEmpty)
        let tcp = result.latency.histogram(.tcpConnect, from: .sent)
        #expect(tcp.totalCount == 5)
        #expect(tcp.min >= 80_000)
        let connect = result.latency.histogram(.connect, from: .sent)
        #expect(connect.min >= 80_000)
        let tls = result.latency.histogram(.tlsHandshake, from: .sent)
        let upgrade = result.latency.histogram(.wsUpgrade, from: .sent)
        switch layers {
        case .tls, .wss:
            #expect(tls.totalCount == 5)
            #expect(tls.min >= 80_000)
        case .ws:
            #expect(tls.totalCount == 0)
        }
        switch layers {
        case .ws, .wss:
            #expect(upgrade.totalCount == 5)
            #expect(upgrade.min >= 80_000)
        case .tls:
            #expect(upgrade.totalCount == 0)
        }
    }

    /// 40 QoS 0 PUBLISH packets (MQTT 3.1.1 §3.3) of exactly 1,000 bytes each: 0x30, remaining length 997 in two
    /// bytes (0xE5 0x07), topic "cmd/0" with its 2-byte length, 990 payload bytes. 40,000 bytes in all.
    static let downlinkBurst: [UInt8] = {
        let packet: [UInt8] = [0x30, 0xE5, 0x07, 0x00, 0x05] + Array("cmd/0".utf8) + [UInt8](repeating: 0x61, count: 990)
        return Array([[UInt8]](repeating: packet, count: 40).joined())
    }()

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
        func next() -> Int { value.add(1, ordering: .relaxed).newValue }
    }

    /// A FakeBroker that sends the subscriber 40,000 bytes with its SUBACK and 40,000 more after its first
    /// PINGREQ (keepalive 3 s, so long after the first burst drained at 32,000 bytes/s).
    /// A burst of 1.25 times the inbound bound pauses reading exactly once however the reads cut it: the read
    /// that brings the queue to 32,000 bytes pauses it; reading resumes below 16,000, and at most 8,000 bytes are
    /// then left in the socket, so the queue cannot reach the bound again.
    @Test("a 256 kbit/s downlink, two bursts of 40,000 bytes: exactly 2 read pauses, every byte and message delivered; asked for io_uring receives, the run reads with epoll and says why", arguments: [false, true])
    func inboundBackpressure(ringAsked: Bool) throws {
        let pings = Counter()
        let broker = try FakeBroker { connection, packet, version in
            switch packet {
            case .subscribe:
                return FakeBroker.standardResponse(connection, packet, version) + [.sendBytes(Self.downlinkBurst)]
            case .pingReq:
                return [.send(.pingResp)] + (pings.next() == 1 ? [.sendBytes(Self.downlinkBurst)] : [])
            default:
                return FakeBroker.standardResponse(connection, packet, version)
            }
        }
        defer { broker.stop() }
        var profile = EngineNetworkProfile()
        profile.bandwidthDown = 256_000
        var backend = EngineFleet(
            name: "backend", count: 1, clientID: { "backend-\($0)" },
            session: MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 3),
            subscriptions: { _, _ in [MQTTSubscription(filter: "cmd/#", qos: .atMostOnce)] })
        backend.network = profile
        var configuration = EngineConfiguration(
            fleets: [backend], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 1, seed: 2,
            readyTimeout: 10_000_000_000, drainTimeout: 1_000_000_000)
        configuration.ringReceives = ringAsked
        let engine = try Engine(configuration: configuration)
        #expect(engine.lanes.allSatisfy { $0.receiveRing == nil && $0.receiveRingError == nil })
        let result = engine.run(duration: 5_500_000_000)
        let links = Self.linkCounters(engine)
        let link = try #require(links[0])
        #expect(link.counters.readPauses == 2)
        let fleet = try #require(result.fleets["backend"])
        #expect(fleet.network.readPauses == 2)
        // Every message reached the session (no end-to-end header: counted as foreign), every byte was read:
        // CONNACK 4, SUBACK 5, the bursts, a PINGRESP of 2 per PINGREQ.
        #expect(fleet.counters.arrived[.atMostOnce] == 80)
        #expect(fleet.counters.received.total == 0)
        #expect(fleet.counters.foreignMessages == 80)
        let pingRequests = broker.receivedPackets.filter { if case .pingReq = $0.packet { return true } else { return false } }.count
        #expect(pingRequests >= 1)
        #expect(fleet.counters.bytesIn == UInt64(4 + 5 + 80_000 + 2 * pingRequests))
        #expect(fleet.counters.disconnects == [.clientInitiated: 1])
        // The queue reached its 32,000-byte bound and held at most one burst with the packet sent just before it
        // (SUBACK, 5 bytes).
        let highWater = engine.lanes.flatMap { lane in lane.queue.sync { lane.clients.compactMap { $0.network?.downHighWater } } }
        #expect(highWater.count == 1)
        #expect(highWater.allSatisfy { $0 >= 32_000 && $0 <= 40_005 }, "high water \(highWater)")
        #expect(result.receivePath == .epoll)
        #expect(result.receiveRingUnavailable == (ringAsked
            ? "downlink backpressure needs epoll: a network profile of fleet backend limits the downlink (bandwidth_down)" : nil))
    }

    @Test("a PUBLISH resent after a reconnect gets its broker-side PUBACK sample, timed from the resend")
    func resentPublishBrokerSide() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var profile = EngineNetworkProfile()
        profile.latencyUp = .fixed(100_000_000)
        profile.latencyDown = .fixed(100_000_000)
        let settings = MQTTSessionSettings(version: .v5, cleanStart: false, keepAliveSeconds: 30, sessionExpiryInterval: 600)
        var cars = EngineFleet(
            name: "cars", count: 4, clientID: { "resend-car-\($0)" }, session: settings,
            streams: [EngineStream(topic: { index, _ in "cars/\(index)/telemetry" }, qos: .atLeastOnce,
                                   plan: .rate(perSecond: 20), payloadSize: 64, messageLimit: 30)],
            reconnect: .immediateThenInterval(retries: 10, interval: 50_000_000))
        cars.network = profile
        let configuration = EngineConfiguration(
            fleets: [cars], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2, seed: 4,
            readyTimeout: 10_000_000_000, drainTimeout: 3_000_000_000)
        let engine = try Engine(configuration: configuration)
        // Cut while 4 messages per car are in flight (200 ms round trip at 20/s), after 12 per car (0.6 s); they
        // are resent after it.
        let result = EngineFaultTests.run(engine, duration: 2_000_000_000, afterPublished: 48) { engine in
            _ = try? engine.tunnel(fleet: "cars", fraction: 1, outage: 100_000_000...100_000_000)
        }
        let fleet = try #require(result.fleets["cars"])
        #expect(fleet.counters.disconnects[.tunnel] == 4)
        #expect(fleet.counters.published[.atLeastOnce] == 120)
        #expect(fleet.counters.acked[.atLeastOnce] == 120)
        #expect(fleet.counters.abandonedPublishes == 0)
        // Every PUBACK has its sample, resends included (they were without one before).
        #expect(fleet.latency.histogram(.puback, from: .sent).totalCount == 120)
        #expect(fleet.latency.histogram(.pubackBrokerSide, from: .sent).totalCount == 120)
        #expect(fleet.latency.histogram(.pubackBrokerSide, from: .sent).valueAtPercentile(50) < 40_000)
    }

    @Test("same seed, a profile with loss and one with drops and outages: the same stalls, drops and outages per client")
    func deterministicCounts() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var lossy = EngineNetworkProfile(name: "lossy")
        lossy.fraction = 0.5
        lossy.latencyUp = .distribution(p50: 5_000_000, p99: 20_000_000)
        lossy.latencyDown = .distribution(p50: 5_000_000, p99: 20_000_000)
        lossy.loss = NetworkLoss(rate: 0.2, burst: 2)
        var cutting = EngineNetworkProfile(name: "cutting")
        cutting.fraction = 0.5
        cutting.latencyUp = .fixed(5_000_000)
        cutting.loss = NetworkLoss(rate: 0, burst: 1, dropInterval: 700_000_000)
        cutting.outages = NetworkOutages(meanInterval: 900_000_000, duration: 100_000_000...200_000_000)
        func run() throws -> (EngineResult, [Int: (profile: Int, counters: NetworkCounters)]) {
            // Reconnect policy none: a cut client stays down, so its count is fixed by its first draws (its
            // packets after a reconnect would depend on timing); the lossy ones publish exactly 20 each.
            var fleets = Self.fleets(cars: 8, qos: .atLeastOnce, perSecond: 20, messages: 20, network: nil)
            fleets[0].networks = [lossy, cutting]
            let configuration = EngineConfiguration(
                fleets: fleets, brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
                seed: 77, readyTimeout: 10_000_000_000, drainTimeout: 3_000_000_000)
            let engine = try Engine(configuration: configuration)
            let result = engine.run(duration: 3_000_000_000)
            return (result, Self.linkCounters(engine))
        }
        let (first, firstLinks) = try run()
        let (second, secondLinks) = try run()
        #expect(firstLinks.count == 8 && secondLinks.count == 8)
        for index in 0..<8 {
            let a = try #require(firstLinks[index]), b = try #require(secondLinks[index])
            #expect(a.profile == b.profile)
            #expect(a.counters.stalls == b.counters.stalls, "client \(index)")
            #expect(a.counters.drops == b.counters.drops, "client \(index)")
            #expect(a.counters.outages == b.counters.outages, "client \(index)")
            #expect(a.counters.outageNanoseconds == b.counters.outageNanoseconds, "client \(index)")
        }
        // Each cutting client was cut exactly once (then stayed down); the lossy ones stalled and were never cut.
        let cuttingClients = firstLinks.values.filter { $0.profile == 1 }
        #expect(cuttingClients.count == 4)
        #expect(cuttingClients.allSatisfy { $0.counters.drops + $0.counters.outages == 1 && $0.counters.stalls == 0 })
        let lossyClients = firstLinks.values.filter { $0.profile == 0 }
        #expect(lossyClients.allSatisfy { $0.counters.drops + $0.counters.outages == 0 })
        // 42 loss steps per lossy client (CONNECT, 20 PUBLISH up; CONNACK, 20 PUBACK down) at a 20 % stall share.
        #expect(lossyClients.reduce(0) { $0 + $1.counters.stalls } > 0)
        #expect(first.fleets["cars"]?.network.stalls == second.fleets["cars"]?.network.stalls)
    }

    /// Every cut each client's link recorded in a run, by global index.
    static func linkEvents(_ engine: Engine) -> [Int: [NetworkEvent]] {
        var result: [Int: [NetworkEvent]] = [:]
        for lane in engine.lanes {
            lane.queue.sync {
                for client in lane.clients {
                    if let events = client.network?.events { result[client.globalIndex] = events }
                }
            }
        }
        return result
    }

    /// With a reconnect policy a client has many connections, and how long each lasted on the wall clock (connect
    /// and handshake times are real TCP's) decides how many fit in the run. What each connection draws does not
    /// depend on that: its streams are keyed by the seed, the client and the attempt's number. So the k-th
    /// connection of a client is cut the same way (drop or outage, the outage's length) after the same stalls and
    /// the same emulated delays in every run, and is the cut the seed predicts; only how many connections the run
    /// had time for may differ at its end.
    @Test("with reconnects: a client's k-th connection stalls, waits and is cut the same way in two runs, as the seed predicts")
    func deterministicWithReconnects() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        var profile = EngineNetworkProfile(name: "cutting")
        profile.latencyUp = .distribution(p50: 5_000_000, p99: 20_000_000)
        profile.latencyDown = .distribution(p50: 5_000_000, p99: 20_000_000)
        profile.jitter = 2_000_000
        profile.loss = NetworkLoss(rate: 0.3, burst: 2, dropInterval: 500_000_000)
        profile.outages = NetworkOutages(meanInterval: 600_000_000, duration: 50_000_000...150_000_000)
        let clients = 6
        func run() throws -> [Int: [NetworkEvent]] {
            // Clients that neither publish nor subscribe: a connection carries CONNECT and CONNACK only, both before
            // the cut timers start (at CONNACK), so its stalls and delays are its own draws whatever the timing.
            var cars = EngineFleet(name: "cars", count: clients, clientID: { "det-car-\($0)" },
                                   session: MQTTSessionSettings(version: .v5, keepAliveSeconds: 30),
                                   reconnect: .immediateThenInterval(retries: 1_000, interval: 20_000_000))
            cars.network = profile
            var configuration = EngineConfiguration(
                fleets: [cars], brokers: [try SocketAddress(ipAddress: "127.0.0.1", port: broker.port)], lanes: 2,
                seed: 91, readyTimeout: 10_000_000_000, drainTimeout: 1_000_000_000)
            configuration.recordsNetworkEvents = true
            let engine = try Engine(configuration: configuration)
            let result = engine.run(duration: 3_000_000_000)
            #expect(result.counters.connectsFailed == 0)
            return Self.linkEvents(engine)
        }
        let first = try run()
        let second = try run()
        #expect(first.count == clients && second.count == clients)
        let margin: UInt64 = 50_000_000
        for index in 0..<clients {
            let a = first[index] ?? [], b = second[index] ?? []
            let common = min(a.count, b.count)
            // Several reconnects each (about one cut per 0.3 s of connection), numbered 1, 2, 3, ...: no attempt failed.
            #expect(common >= 3, "client \(index): \(a.count) and \(b.count) cuts")
            #expect(a.map(\.attempt) == (0..<a.count).map { UInt32($0 + 1) }, "client \(index)")
            #expect(b.map(\.attempt) == (0..<b.count).map { UInt32($0 + 1) }, "client \(index)")
            // Connection by connection the same: kind, outage length, stalls, emulated delay.
            #expect(Array(a.prefix(common)) == Array(b.prefix(common)), "client \(index)")
            // And the cut the seed predicts: the earlier of the two gaps drawn at CONNACK (unless they are within
            // 50 ms of each other, where the wheel's tick and order decide), then the outage's length.
            for event in a {
                var draws = NetworkLink.streams(seed: 91, globalIndex: index, attempt: event.attempt).events
                let drop = draws.nextExponentialNanoseconds(mean: 500_000_000)
                let outage = draws.nextExponentialNanoseconds(mean: 600_000_000)
                guard max(drop, outage) - min(drop, outage) > margin else { continue }
                if drop < outage {
                    #expect(event.kind == .drop && event.outage == 0, "client \(index) attempt \(event.attempt)")
                } else {
                    #expect(event.kind == .outage && event.outage == draws.nextUInt64(in: 50_000_000...150_000_000),
                            "client \(index) attempt \(event.attempt)")
                }
            }
        }
        // Over all clients the two runs saw some of each.
        let all = first.values.flatMap { $0 }
        #expect(all.contains { $0.kind == .drop } && all.contains { $0.kind == .outage } && all.contains { $0.stalls > 0 })
    }

    @Test("clients without a profile get no link and their lanes no network timers; with one, four more per client")
    func zeroCostWithout() throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
        let plain = try Engine(configuration: EngineConfiguration(
            fleets: Self.fleets(cars: 4, qos: .atMostOnce, perSecond: 1, messages: 1, network: nil), brokers: [address], lanes: 2))
        for lane in plain.lanes {
            #expect(lane.wheel.kindsPerClient == TimerKind.count)
            #expect(lane.clients.allSatisfy { $0.network == nil })
            #expect(!lane.networkEmulation)
        }
        var profile = EngineNetworkProfile()
        profile.fraction = 0.5
        let half = try Engine(configuration: EngineConfiguration(
            fleets: Self.fleets(cars: 4, qos: .atMostOnce, perSecond: 1, messages: 1, network: profile), brokers: [address], lanes: 2))
        let linked = half.lanes.flatMap { $0.clients.filter { $0.network != nil }.map(\.indexInFleet) }
        #expect(linked.sorted() == [1, 3])
        // Cars 1 and 3 both sit on lane 1 (clients are striped over the lanes by global index): only it pays.
        #expect(half.lanes.map(\.wheel.kindsPerClient) == [TimerKind.count, TimerKind.countWithNetwork])
        #expect(half.lanes.allSatisfy { $0.networkEmulation })
    }

    @Test("a fraction of the fleet: exactly ⌊count × fraction⌋ clients, spread over the indices")
    func fraction() {
        var profile = EngineNetworkProfile()
        profile.fraction = 0.3
        let chosen = (0..<10).filter { profile.applies(to: $0, of: 10) }
        #expect(chosen == [3, 6, 9])
        #expect((0..<1000).filter { profile.applies(to: $0, of: 1000) }.count == 300)
        profile.fraction = 1
        #expect((0..<7).allSatisfy { profile.applies(to: $0, of: 7) })
    }
}

/// The link model without sockets: distributions, order, determinism, the token bucket, Gilbert-Elliott.
@Suite("Network link model")
struct NetworkLinkTests {
    static func link(_ profile: EngineNetworkProfile, seed: UInt64 = 3, index: Int = 0) -> NetworkLink {
        NetworkLink(shape: NetworkShape(profile), seed: seed, globalIndex: index)
    }

    @Test("several profiles: counts ⌊count × cumulative fraction⌋ apart, each spread over what the ones before left")
    func assignment() {
        var lte = EngineNetworkProfile(name: "lte")
        lte.fraction = 0.7
        var nbIoT = EngineNetworkProfile(name: "nb-iot")
        nbIoT.fraction = 0.3
        let both = [lte, nbIoT]
        #expect((0..<10).map { EngineNetworkProfile.assignment(of: $0, count: 10, profiles: both) }
            == [1, 0, 0, 1, 0, 0, 1, 0, 0, 0])
        #expect(EngineNetworkProfile.clientCounts(count: 1000, profiles: both) == [700, 300])
        let thousand = (0..<1000).map { EngineNetworkProfile.assignment(of: $0, count: 1000, profiles: both) }
        #expect(thousand.filter { $0 == 0 }.count == 700 && thousand.filter { $0 == 1 }.count == 300)
        // 0.5 + 0.3 of 10: 5 and 3 clients, 2 without a profile.
        lte.fraction = 0.5
        let partial = (0..<10).map { EngineNetworkProfile.assignment(of: $0, count: 10, profiles: [lte, nbIoT]) }
        #expect(partial == [nil, 0, 1, 0, nil, 0, 1, 0, 1, 0])
        // Evenly spread: no run of the second profile longer than ⌈1/0.3⌉ clients apart.
        let positions = thousand.enumerated().filter { $0.element == 1 }.map(\.offset)
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $1 - $0 <= 4 })
        // A single profile keeps the one-profile rule: 0.3 of 10 is clients 3, 6 and 9.
        #expect((0..<10).filter { nbIoT.applies(to: $0, of: 10) } == [3, 6, 9])
    }

    @Test("inbound packets are counted once however the reads cut them (one loss step each)")
    func packetStarts() {
        // CONNACK (4 bytes), a PUBLISH with a 2-byte remaining length (3 + 200 bytes), PUBACK (4 bytes).
        var stream: [UInt8] = [0x20, 2, 0, 0, 0x30, 0xC8, 0x01] + Array(repeating: 7, count: 200) + [0x40, 2, 0, 1]
        #expect(stream.count == 211)
        for cut in [1, 2, 3, 5, 6, 7, 100, 207, 210] {
            let link = NetworkLinkTests.link(EngineNetworkProfile())
            var starts = 0
            stream.withUnsafeBytes { bytes in
                starts += link.countPacketStarts(UnsafeRawBufferPointer(rebasing: bytes[0..<cut]))
                starts += link.countPacketStarts(UnsafeRawBufferPointer(rebasing: bytes[cut...]))
            }
            #expect(starts == 3, "cut at \(cut)")
        }
        stream += [0xD0, 0]  // PINGRESP
        let link = NetworkLinkTests.link(EngineNetworkProfile())
        #expect(stream.withUnsafeBytes { link.countPacketStarts($0) } == 4)
    }

    @Test("the packet identifier of a QoS 1 PUBLISH is read for the PUBACK's broker-side time; other packets have none")
    func publishPacketIDs() {
        let qos1: [UInt8] = [0x32, 9, 0, 3] + Array("a/b".utf8) + [0x12, 0x34, 0, 0xAA]
        let qos0: [UInt8] = [0x30, 5, 0, 3] + Array("a/b".utf8)
        let puback: [UInt8] = [0x40, 2, 0x12, 0x34]
        #expect(qos1.withUnsafeBytes { Lane.publishPacketID($0, version: .v5) } == 0x1234)
        #expect(qos0.withUnsafeBytes { Lane.publishPacketID($0, version: .v5) } == 0)
        #expect(puback.withUnsafeBytes { Lane.publishPacketID($0, version: .v3_1_1) } == 0)
        let link = NetworkLinkTests.link(EngineNetworkProfile())
        link.noteReleased(packetID: 0x1234, releasedAt: 500)
        link.noteReleased(packetID: 7, releasedAt: 600)
        link.noteReleased(packetID: 0x1234, releasedAt: 900)  // resent after a reconnect: the latest send counts
        #expect(link.releaseOfPublish(packetID: 0x1234) == 900)
        #expect(link.releaseOfPublish(packetID: 7) == 600)
        #expect(link.releaseOfPublish(packetID: 8) == nil)
    }

    @Test("a {p50, p99} latency draws a log-normal with that median and 99th percentile")
    func distribution() {
        var profile = EngineNetworkProfile()
        profile.latencyUp = .distribution(p50: 45_000_000, p99: 180_000_000)
        let link = Self.link(profile)
        var draws = (0..<100_000).map { _ in link.delay(up: true) }
        draws.sort()
        let p50 = Double(draws[50_000]), p99 = Double(draws[99_000])
        #expect(abs(p50 - 45e6) / 45e6 < 0.02, "p50 \(p50)")
        #expect(abs(p99 - 180e6) / 180e6 < 0.05, "p99 \(p99)")
    }

    @Test("jitter moves each fixed delay uniformly within ±jitter")
    func jitter() {
        var profile = EngineNetworkProfile()
        profile.latencyUp = .fixed(50_000_000)
        profile.jitter = 10_000_000
        let link = Self.link(profile)
        let draws = (0..<50_000).map { _ in link.delay(up: true) }
        #expect(draws.min()! >= 40_000_000 && draws.max()! <= 60_000_000)
        #expect(draws.min()! < 40_100_000 && draws.max()! > 59_900_000)
        let mean = Double(draws.reduce(0, +)) / Double(draws.count)
        #expect(abs(mean - 50e6) < 0.2e6, "mean \(mean)")
    }

    @Test("same seed and client: the same delays; another client or seed: others")
    func deterministic() {
        var profile = EngineNetworkProfile()
        profile.latencyUp = .distribution(p50: 30_000_000, p99: 120_000_000)
        profile.jitter = 5_000_000
        profile.loss = NetworkLoss(rate: 0.05, burst: 3)
        func releases(seed: UInt64, index: Int) -> [UInt64] {
            let link = Self.link(profile, seed: seed, index: index)
            return (0..<1000).map { link.releaseTime(count: 100, up: true, now: UInt64($0) * 1_000_000).0 }
        }
        #expect(releases(seed: 9, index: 4) == releases(seed: 9, index: 4))
        #expect(releases(seed: 9, index: 4) != releases(seed: 9, index: 5))
        #expect(releases(seed: 9, index: 4) != releases(seed: 10, index: 4))
    }

    @Test("each connection attempt draws from streams of its own: attempt k's delays, stalls and cuts do not depend on what earlier attempts drew")
    func attemptStreams() {
        var profile = EngineNetworkProfile()
        profile.latencyUp = .distribution(p50: 30_000_000, p99: 120_000_000)
        profile.latencyDown = .distribution(p50: 30_000_000, p99: 120_000_000)
        profile.jitter = 5_000_000
        profile.loss = NetworkLoss(rate: 0.3, burst: 3, dropInterval: 1_000_000_000)
        /// Attempt `attempt`'s first draws, after earlier attempts that drew `earlier[k]` times from each stream.
        func draws(index: Int, attempt: Int, earlier: [Int]) -> [UInt64] {
            let link = Self.link(profile, seed: 9, index: index)
            for k in 0..<(attempt - 1) {
                link.beginAttempt()
                for _ in 0..<earlier[k] {
                    _ = link.delay(up: true)
                    _ = link.lossStep()
                    _ = link.eventRandom.next()
                }
            }
            link.beginAttempt()
            #expect(link.attempts == UInt32(attempt))
            #expect(!link.lossBad)
            return (0..<50).map { _ in link.delay(up: false) } + (0..<200).map { _ in link.lossStep() ? 1 : 0 }
                + [link.eventRandom.nextExponentialNanoseconds(mean: 1e9)]
        }
        let third = draws(index: 4, attempt: 3, earlier: [0, 0])
        // However long the first two connections were (a handful of packets or thousands), the third is the same.
        #expect(draws(index: 4, attempt: 3, earlier: [7, 1]) == third)
        #expect(draws(index: 4, attempt: 3, earlier: [3_000, 41]) == third)
        // Another attempt, client or seed draws otherwise.
        #expect(draws(index: 4, attempt: 2, earlier: [0]) != third)
        #expect(draws(index: 5, attempt: 3, earlier: [0, 0]) != third)
        let other = NetworkLink(shape: NetworkShape(profile), seed: 10, globalIndex: 4)
        other.beginAttempt(); other.beginAttempt(); other.beginAttempt()
        #expect((0..<50).map { _ in other.delay(up: false) } != Array(third.prefix(50)))
    }

    @Test("downlink backpressure on exact chunk sizes: reading pauses when 32,000 bytes are queued, resumes below 16,000, one count per pause")
    func readPauses() {
        var profile = EngineNetworkProfile()
        profile.bandwidthDown = 256_000
        let link = Self.link(profile)
        // A second of a 256 kbit/s downlink.
        #expect(link.shape.receiveBufferBytes == 32_000)
        func queue(_ count: Int) -> Bool {
            [UInt8](repeating: 0x61, count: count).withUnsafeBytes { link.down.append($0, release: 0, now: 0) }
            return link.pauseReadingIfFull()
        }
        func deliver() -> Bool {
            link.down.popFirst()
            return link.resumeReadingIfDrained()
        }
        #expect(!queue(20_000))
        #expect(!queue(11_999))        // 31,999
        #expect(!link.resumeReadingIfDrained())
        #expect(queue(1))              // 32,000: pause 1
        #expect(!queue(4_000))         // 36,000, the rest of a read already under way: the same pause
        #expect(link.readPaused)
        #expect(!deliver())            // 16,000 left: exactly half, still paused
        #expect(deliver())             // 4,001 left: below half, reading resumes
        #expect(!link.readPaused)
        #expect(!link.resumeReadingIfDrained())
        #expect(link.counters.readPauses == 1)
        #expect(link.down.queuedBytes == 4_001)
        #expect(!queue(27_998))        // 31,999
        #expect(queue(5))              // 32,004: pause 2
        #expect(!deliver())            // 32,003
        #expect(!deliver())            // 28,003
        #expect(deliver())             // 5
        #expect(link.counters.readPauses == 2)
        #expect(link.downHighWater == 36_000)
    }

    @Test("a later chunk never leaves before an earlier one of the same direction")
    func order() {
        var profile = EngineNetworkProfile()
        profile.latencyUp = .distribution(p50: 30_000_000, p99: 300_000_000)
        profile.latencyDown = .distribution(p50: 30_000_000, p99: 300_000_000)
        let link = Self.link(profile)
        var last: (up: UInt64, down: UInt64) = (0, 0)
        for step in 0..<10_000 {
            let now = UInt64(step) * 500_000
            let up = link.releaseTime(count: 64, up: true, now: now).0
            let down = link.releaseTime(count: 4, up: false, now: now).0
            #expect(up >= last.up && down >= last.down)
            #expect(up >= now && down >= now)
            last = (up, down)
        }
    }

    @Test("the token bucket lets through the configured bits per second, plus at most its 10 ms burst")
    func tokenBucket() {
        var profile = EngineNetworkProfile()
        profile.bandwidthDown = 2_000_000  // 250,000 bytes/s
        let link = Self.link(profile)
        var release: UInt64 = 0
        for _ in 0..<1000 { release = link.releaseTime(count: 500, up: false, now: 1_000_000_000).0 }
        // 500,000 bytes offered at once: 2 s at 250,000 B/s, less the 10 ms the bucket held.
        #expect(release == 1_000_000_000 + 2_000_000_000 - 10_000_000)
    }

    @Test("Gilbert-Elliott: the stall share is the loss rate and stalls come in bursts of the given mean")
    func gilbertElliott() {
        var profile = EngineNetworkProfile()
        profile.loss = NetworkLoss(rate: 0.05, burst: 4)
        let link = Self.link(profile)
        var stalls = 0, runs = 0, previous = false
        let sends = 200_000
        for step in 0..<sends {
            let stalled = link.releaseTime(count: 10, up: step % 2 == 0, now: UInt64(step) * 1_000_000).1
            if stalled { stalls += 1; if !previous { runs += 1 } }
            previous = stalled
        }
        let share = Double(stalls) / Double(sends)
        #expect(abs(share - 0.05) < 0.005, "stall share \(share)")
        let meanRun = Double(stalls) / Double(runs)
        #expect(abs(meanRun - 4) < 0.3, "mean burst \(meanRun)")
    }

    @Test("end-to-end headers get the release time; other bytes stay as they were")
    func stamping() {
        let header = EndToEndHeader(streamID: 7, sequence: 3, intendedTime: 1000, runID: 99, sentTime: 1000)
        var payload = [UInt8](repeating: 0, count: 40)
        payload.withUnsafeMutableBytes { _ = header.writeBinary(to: $0) }
        var text: [UInt8] = [UInt8(ascii: "{")]
        header.appendTextField(to: &text, trailingComma: true)
        text += Array(#""a":1}"#.utf8)
        for version in [MQTTProtocolVersion.v3_1_1, .v5] {
            var packet: [UInt8] = []
            for (qos, body) in [(0, payload), (1, text)] {
                var variable: [UInt8] = [0, 3] + Array("a/b".utf8)
                if qos > 0 { variable += [0, 1] }
                if version == .v5 { variable += [0] }
                let remaining = variable.count + body.count
                packet += [0x30 | UInt8(qos << 1), UInt8(remaining)] + variable + body
            }
            packet += [0xC0, 0]  // PINGREQ
            let original = packet
            packet.withUnsafeMutableBytes { Lane.stampSentTimes($0, at: 123_456_789, version: version) }
            #expect(packet.count == original.count)
            let firstPayload = Array(packet[(2 + 5 + (version == .v5 ? 1 : 0))...].prefix(40))
            let binary = firstPayload.withUnsafeBytes { try? EndToEndHeader.read(from: $0) }
            #expect(binary?.sentTime == 123_456_789)
            #expect(binary?.intendedTime == 1000)
            let textStart = 2 + 5 + (version == .v5 ? 1 : 0) + 40 + 2 + 5 + 2 + (version == .v5 ? 1 : 0)
            let stamped = Array(packet[textStart..<(textStart + text.count)])
            let parsed = stamped.withUnsafeBytes { try? EndToEndHeader.read(from: $0) }
            #expect(parsed?.sentTime == 123_456_789)
            #expect(parsed?.sequence == 3)
            #expect(packet.suffix(2) == [0xC0, 0])
        }
    }
}
