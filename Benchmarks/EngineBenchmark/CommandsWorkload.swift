import FleetEngine
import FleetTransport
import Foundation
import Glibc
import MQTTCodec
import MQTTSession
import Synchronization

// Subscriber-heavy workload (issue 18): `clients` vehicles, each subscribed at QoS 1 to its own command topic
// cmd/<index>, and a backend publishing one command per vehicle per second at QoS 1 (`clients` commands a second,
// vehicle after vehicle). The backend is a plain blocking socket on a thread of this process, not engine clients:
// the figure wanted is what receiving costs the engine, so the backend's own CPU (measured on its thread) is taken
// out of the process's. Its payloads carry the engine's end-to-end header with the run's id, so the vehicles time
// every command from the backend's actual send.

/// What the backend thread measured over its publishing window.
final class CommandBackendFigures: @unchecked Sendable {
    // Written by the backend thread only; read after `finished` is set.
    var sent = 0
    var acked = 0
    var processCPU = 0.0
    var threadCPU = 0.0
    var brokerCPU = 0.0
    var wallSeconds = 0.0
    var error: String?
    let finished = Atomic<Bool>(false)
    /// Commands the vehicles received so far (the engine's last snapshot).
    let receivedSoFar = Atomic<UInt64>(0)
    let started = Atomic<Bool>(false)
    /// The publishing window ended (`sent` and the CPU figures are set; the backend still collects its last acks).
    let publishingEnded = Atomic<Bool>(false)
}

func threadCPUMicroseconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) * 1e6 + Double(spec.tv_nsec) / 1e3
}

/// Publishes `rate` commands a second for `seconds` to cmd/0 ... cmd/(vehicles-1) in turn, every millisecond what is
/// due in one write, and counts the broker's PUBACKs (the only packets it sends the backend after CONNACK).
func runCommandBackend(fd: Int32, vehicles: Int, rate: Int, seconds: Int, runID: UInt64, brokerPid: Int32?,
                       figures: CommandBackendFigures) {
    let topics: [[UInt8]] = (0..<vehicles).map { Array("cmd/\($0)".utf8) }
    let payloadSize = 64
    let total = rate * seconds
    var batch: [UInt8] = []
    batch.reserveCapacity(rate / 100 * 128 + 4096)
    var inbound = [UInt8](repeating: 0, count: 64 * 1024)
    var pendingAckBytes = 0
    let start = MonotonicClock.now()
    let cpuStart = cpuMicroseconds(), threadStart = threadCPUMicroseconds()
    let brokerStart = processCPUMicroseconds(brokerPid)
    figures.started.store(true, ordering: .releasing)
    var sent = 0
    let nanosecondsPerMessage = 1e9 / Double(rate)
    var header = [UInt8]()
    while sent < total {
        let elapsed = MonotonicClock.now() &- start
        let due = min(total, Int(Double(elapsed) / nanosecondsPerMessage) + 1)
        if due > sent {
            batch.removeAll(keepingCapacity: true)
            let now = MonotonicClock.now()
            for k in sent..<due {
                let vehicle = k % vehicles
                let topic = topics[vehicle]
                let remaining = 2 + topic.count + 2 + payloadSize
                batch.append(0x32)  // PUBLISH, QoS 1
                var length = remaining
                repeat {
                    var byte = UInt8(length & 0x7F)
                    length >>= 7
                    if length > 0 { byte |= 0x80 }
                    batch.append(byte)
                } while length > 0
                batch.append(UInt8(topic.count >> 8)); batch.append(UInt8(topic.count & 0xFF))
                batch.append(contentsOf: topic)
                let packetID = UInt16(k % 65_535 + 1)
                batch.append(UInt8(packetID >> 8)); batch.append(UInt8(packetID & 0xFF))
                header.removeAll(keepingCapacity: true)
                let intended = start &+ UInt64(Double(k) * nanosecondsPerMessage)
                EndToEndHeader(streamID: 1_000_000, sequence: UInt64(k / vehicles), intendedTime: intended,
                               runID: runID, sentTime: now).appendBinary(to: &header)
                batch.append(contentsOf: header)
                batch.append(contentsOf: repeatElement(0x2E, count: payloadSize - header.count))
            }
            guard ReferenceWriter.writeAll(fd, batch) else { figures.error = "backend write failed: errno \(errno)"; break }
            sent = due
        }
        // PUBACKs so far (4 bytes each), without blocking.
        while true {
            let got = inbound.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if got <= 0 { break }
            pendingAckBytes += got
        }
        var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
        nanosleep(&pause, nil)
    }
    figures.wallSeconds = Double(MonotonicClock.now() &- start) / 1e9
    figures.processCPU = cpuMicroseconds() - cpuStart
    figures.threadCPU = threadCPUMicroseconds() - threadStart
    figures.brokerCPU = processCPUMicroseconds(brokerPid) - brokerStart
    figures.sent = sent
    figures.publishingEnded.store(true, ordering: .releasing)
    // The last acks: up to 2 s.
    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let ackDeadline = MonotonicClock.now() &+ 2_000_000_000
    while pendingAckBytes / 4 < sent && MonotonicClock.now() < ackDeadline {
        let got = inbound.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if got > 0 { pendingAckBytes += got }
    }
    figures.acked = pendingAckBytes / 4
    figures.finished.store(true, ordering: .releasing)
}

func commands(vehicles: Int, seconds: Int) {
    let runID: UInt64 = 0x1800_C0DE_0000_0001
    let settings = MQTTSessionSettings(version: .v3_1_1, keepAliveSeconds: 60)
    let fleet = EngineFleet(name: "vehicles", count: vehicles, clientID: { "car-\($0)" }, session: settings,
                            subscriptions: { index, _ in [MQTTSubscription(filter: "cmd/\(index)", qos: .atLeastOnce)] },
                            maxConnectsInFlight: 256)
    var configuration = EngineConfiguration(fleets: [fleet], brokers: [brokerAddress],
                                            readyTimeout: 60_000_000_000, drainTimeout: 1_000_000_000)
    configuration.runID = runID
    applyKnobs(&configuration)
    // The floor first (ENGINE_BENCH_REFERENCE=0 skips it): the cheapest receiver of the same commands on the same
    // broker, its sockets closed before the engine connects.
    var reference: CommandsReferenceFigures?
    if ProcessInfo.processInfo.environment["ENGINE_BENCH_REFERENCE"] != "0" {
        reference = CommandsReferenceReceiver.run(port: broker.port, vehicles: vehicles, seconds: seconds,
                                                  runID: runID, brokerPid: broker.pid)
        // The broker's work on the 15,000 closed connections is over before the engine's connects start.
        sleep(2)
    }
    guard let backend = ReferenceWriter.connect(port: broker.port, clientID: "backend") else {
        print(json(["workload": "commands", "error": "backend could not connect"])); return
    }
    defer { close(backend) }
    guard let engine = try? Engine(configuration: configuration) else {
        print(json(["workload": "commands", "error": "engine did not start"])); return
    }
    let figures = CommandBackendFigures()
    let brokerPid = broker.pid
    engine.onPublishStart = {
        // Every vehicle is subscribed (the ready barrier waits for its SUBACK): the backend starts.
        let thread = Thread {
            runCommandBackend(fd: backend, vehicles: vehicles, rate: vehicles, seconds: seconds, runID: runID,
                              brokerPid: brokerPid, figures: figures)
        }
        thread.start()
    }
    // Deliveries so far, from the engine's once-a-second snapshots: the run waits for every command the broker
    // sent (a broker that fell behind still holds some when the backend is done: it drops none of these, each
    // vehicle's queue holding one a second), 10 s at most.
    engine.onSnapshot = { snapshot in figures.receivedSoFar.store(snapshot.received, ordering: .relaxed) }
    let deadline = UInt64(seconds + 80) * 1_000_000_000
    nonisolated(unsafe) var finishedAt: UInt64 = 0
    let result = engine.run(duration: deadline, shouldStop: {
        guard figures.finished.load(ordering: .acquiring) else { return false }
        if finishedAt == 0 { finishedAt = MonotonicClock.now() }
        let waited = MonotonicClock.now() &- finishedAt
        if waited < 300_000_000 { return false }  // the last deliveries
        return figures.receivedSoFar.load(ordering: .relaxed) >= UInt64(figures.sent) || waited > 10_000_000_000
    })
    guard figures.finished.load(ordering: .acquiring) else {
        print(json(["workload": "commands", "error": "backend did not finish (engine not ready?)",
                    "peak_connected": result.peakConnected, "failures_by_reason": failures(result.counters)]))
        return
    }
    let toolCPU = figures.processCPU - figures.threadCPU
    let received = result.counters.received.qos1
    let endToEnd = result.latency.histogram(.endToEnd, from: .sent)
    let share = toolCPU / 1e6 / figures.wallSeconds * 100
    var line: [String: Any] = [
        "workload": "commands", "vehicles": vehicles, "seconds": seconds, "peak_connected": result.peakConnected,
        "commands_sent": figures.sent, "commands_acked_by_broker": figures.acked, "received": received,
        "cpu_percent_of_one_core": round3(share),
        "cpu_us_per_msg": round3(toolCPU / Double(max(figures.sent, 1))),
        "backend_cpu_us_per_msg": round3(figures.threadCPU / Double(max(figures.sent, 1))),
        "broker_cpu_us_per_msg": round3(figures.brokerCPU / Double(max(figures.sent, 1))),
        "measured_seconds": round3(figures.wallSeconds),
        "end_to_end_from_sent_p50_us": endToEnd.valueAtPercentile(50),
        "end_to_end_from_sent_p99_us": endToEnd.valueAtPercentile(99),
        "end_to_end_from_sent_max_us": endToEnd.max,
        "send_path": result.sendPath.rawValue, "coalescing_pauses": result.counters.receiveCoalescingPauses,
        "batching_pauses": result.counters.receiveBatchingPauses,
        "receive_batching_us": configuration.receiveBatching / 1000,
        "receive_coalescing_us": configuration.receiveCoalescing / 1000,
        "failures_by_reason": failures(result.counters), "disconnects_by_reason": disconnects(result.counters),
        "target_cpu_percent_max": 10, "target_end_to_end_p99_us_max": 2000,
    ]
    line["receive_path"] = result.receivePath.rawValue
    if let why = result.receiveRingUnavailable { line["receive_ring_unavailable"] = why }
    if let error = figures.error { line["backend_error"] = error }
    if let reference {
        // The reference receiver's own thread over the backend's window (its process holds nothing else that works).
        let referenceShare = reference.threadCPU / 1e6 / max(reference.wallSeconds, 1e-9) * 100
        line["reference_cpu_percent_of_one_core"] = round3(referenceShare)
        line["reference_cpu_us_per_msg"] = round3(reference.threadCPU / Double(max(reference.received, 1)))
        line["reference_received"] = reference.received
        line["reference_pubacks_sent"] = reference.pubacksSent
        line["reference_epoll_waits"] = reference.epollWaits
        line["engine_to_reference_cpu_ratio"] = referenceShare > 0 ? round3(share / referenceShare) : 0
        if let error = reference.error { line["reference_error"] = error }
    }
    print(json(line))
}
