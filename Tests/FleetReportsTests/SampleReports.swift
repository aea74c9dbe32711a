import FleetJSON
import FleetMetrics
import Foundation
@testable import FleetReports

/// Crafted reports with known values: every figure a test checks follows from the numbers here.
enum SampleReports {
    /// 2026-11-29T15:16:30.125Z
    static let startedAt = Date(timeIntervalSince1970: 1_795_965_390.125)

    /// A recorder with end-to-end 1...1000 µs from the intended time (each once), 1...500 µs from the sent time,
    /// TCP connect 100, 200, 300 µs (sent only), PUBACK 2000 µs ×3 (intended) and schedule lag 10...20 µs.
    static func latency() -> LatencyRecorder {
        var latency = LatencyRecorder()
        for value in UInt64(1)...1000 { latency.record(.endToEnd, from: .intended, microseconds: value) }
        for value in UInt64(1)...500 { latency.record(.endToEnd, from: .sent, microseconds: value) }
        for value: UInt64 in [100, 200, 300] { latency.record(.tcpConnect, from: .sent, microseconds: value) }
        for _ in 0..<3 { latency.record(.puback, from: .intended, microseconds: 2000) }
        for value in UInt64(10)...20 { latency.record(.scheduleLag, from: .intended, microseconds: value) }
        return latency
    }

    static func counters() -> ClientCounters {
        var counters = ClientCounters()
        counters.connectsAttempted = 12
        counters.connectsSucceeded = 10
        counters.recordConnectFailure(.refused, count: 1)
        counters.recordConnectFailure(.connackRefused(code: 0x87))
        counters.recordDisconnect(.clientInitiated, count: 9)
        counters.recordDisconnect(.closedByPeer)
        counters.reconnects = 1
        counters.published = PerQoSCounts(qos0: 100, qos1: 200, qos2: 50)
        counters.acked = PerQoSCounts(qos0: 0, qos1: 199, qos2: 50)
        counters.received = PerQoSCounts(qos0: 95, qos1: 201, qos2: 50)
        // Nothing foreign or retained: every arrival was this run's.
        counters.arrived = counters.received
        counters.bytesIn = 40_000
        counters.bytesOut = 35_000
        counters.ackTimeouts.puback = 1
        counters.ackTimeouts.pingresp = 2
        return counters
    }

    static func delivery() -> DeliveryByQoS {
        var qos1 = DeliveryCounts(expected: 200, received: 201, unique: 199, duplicated: 2, reordered: 3)
        qos1.lost = 1
        return DeliveryByQoS(
            qos0: DeliveryCounts(expected: 100, received: 95, unique: 95, duplicated: 0, reordered: 0),
            qos1: qos1,
            qos2: DeliveryCounts(expected: 50, received: 50, unique: 50, duplicated: 0, reordered: 0))
    }

    /// A two-fleet report with two thresholds (one failed) and a three-second timeline.
    static func make(name: String = "vehicles soak", fleetNames: [String] = ["cars", "trucks"]) -> RunReport {
        var report = RunReport(
            toolVersion: "0.1.0",
            scenario: ScenarioInfo(
                name: name, file: "scenarios/soak.json",
                sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                description: "Cars report telemetry; trucks too.",
                redacted: .object([
                    JSONMember("name", .string(name)),
                    JSONMember("brokers", .array([.string("mqtt://user:********@127.0.0.1:1883")])),
                ])),
            run: RunInfo(startedAt: startedAt, durationSeconds: 3, interrupted: false, seed: 42),
            brokers: ["mqtt://user:********@127.0.0.1:1883"], brokerEmbedded: true, passed: false)
        report.setCounters(counters(), peakConnected: 10)
        report.delivery = delivery()
        report.ackTimeoutSeconds = [.connack: 10, .puback: 5, .pingresp: 7.5]
        report.latency = latency()
        report.thresholds = [
            ThresholdResult(
                expression: "latency.end_to_end.p99 < 50ms", metric: "latency.end_to_end.p99", observed: 990_000,
                limit: 50_000_000, passed: true),
            ThresholdResult(
                expression: "delivery.qos1.lost == 0", metric: "delivery.qos1.lost", observed: 1, limit: 0,
                passed: false, detail: "1 of 200 QoS 1 messages never arrived"),
        ]
        report.generator = GeneratorHealth(
            saturated: true, saturationReasons: ["schedule lag p99 20 µs above 10 µs"], cpuSeconds: 1.25,
            peakRSSBytes: 52_428_800, lanes: 2, droppedSlots: 4, abandonedPublishes: 1, foreignMessages: 0,
            receiveCoalescingMicroseconds: 250, receiveCoalescingPauses: 12,
            receiveBatchingMicroseconds: 250, receiveBatchingPauses: 7, sendPath: "io_uring",
            sourceAddresses: ["127.0.0.1", "127.0.0.2"])
        report.timeline = [
            TimelinePoint(t: 1, connected: 8, published: 100, received: 90, endToEndP50Ms: 0.4, endToEndP99Ms: 0.9),
            TimelinePoint(t: 2, connected: 10, published: 150, received: 160, endToEndP50Ms: nil, endToEndP99Ms: nil,
                          ackTimeouts: 1),
            TimelinePoint(t: 3, connected: 10, published: 100, received: 96, endToEndP50Ms: 0.5, endToEndP99Ms: 1.2,
                          ackTimeouts: 2),
        ]
        var first = LatencyRecorder()
        first.record(.endToEnd, from: .intended, microseconds: 700)
        first.record(.endToEnd, from: .sent, microseconds: 600)
        var second = LatencyRecorder()
        second.record(.tcpConnect, from: .sent, microseconds: 150)
        report.latencyIntervals = [
            ReportLatencyInterval(startSeconds: 0, lengthSeconds: 1, latencies: first),
            ReportLatencyInterval(startSeconds: 1, lengthSeconds: 1, latencies: second),
        ]
        var fleetLatency = LatencyRecorder()
        fleetLatency.record(.endToEnd, from: .intended, microseconds: 1500)
        var fleetCounters = ClientCounters()
        fleetCounters.connectsAttempted = 6
        fleetCounters.connectsSucceeded = 6
        fleetCounters.published = PerQoSCounts(qos0: 50, qos1: 100, qos2: 0)
        report.fleets = fleetNames.map {
            FleetReport(name: $0, clients: 6, counters: fleetCounters, peakConnected: 6, delivery: delivery(),
                        latency: fleetLatency)
        }
        report.environment = EnvironmentInfo(
            hostname: "bench-1", os: "Debian GNU/Linux 13", cores: 2, memoryBytes: 8_589_934_592,
            fleetbenchVersion: "0.1.0")
        return report
    }

    /// A fuller report for looking at in a browser: a minute of timeline and long-tailed latencies.
    static func realistic(name: String) -> RunReport {
        var report = make(name: name)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func uniform() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        var latency = LatencyRecorder()
        for _ in 0..<200_000 {
            // A log-uniform body with a rare slow tail.
            let body = 800 * pow(6, uniform())
            let tail = uniform() < 0.01 ? 20_000 * uniform() : 0
            let sendDelay = uniform() < 0.02 ? 3000 * uniform() : 20 * uniform()
            latency.record(.endToEnd, from: .intended, microseconds: UInt64(body + tail + sendDelay))
            latency.record(.endToEnd, from: .sent, microseconds: UInt64(body + tail))
            if uniform() < 0.5 {
                latency.record(.puback, from: .intended, microseconds: UInt64(body * 0.6 + sendDelay))
                latency.record(.puback, from: .sent, microseconds: UInt64(body * 0.6))
            }
            latency.record(.scheduleLag, from: .intended, microseconds: UInt64(sendDelay))
        }
        for _ in 0..<1000 {
            latency.record(.tcpConnect, from: .sent, microseconds: UInt64(150 + 400 * uniform()))
            latency.record(.connect, from: .intended, microseconds: UInt64(900 + 3000 * uniform() * uniform()))
        }
        report.latency = latency
        report.timeline = (1...60).map { second in
            let connected = UInt64(min(1000, second * 100))
            let published = second <= 10 ? UInt64(second * 100) : UInt64(3300 + 200 * uniform())
            let received = published - UInt64(second == 42 ? 400 : 0)
            let p50 = 2 + uniform() * 0.4
            let p99 = second == 42 ? 28.0 : 7 + uniform() * 2
            return TimelinePoint(t: Double(second), connected: connected, published: published, received: received,
                                 endToEndP50Ms: second == 1 ? nil : p50, endToEndP99Ms: second == 1 ? nil : p99,
                                 ackTimeouts: second == 42 ? 3 : 0)
        }
        report.run.durationSeconds = 60
        return report
    }

    /// A fresh temporary directory.
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fleetbench-reports-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
