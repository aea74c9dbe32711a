import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

@Suite("Reading report.json back")
struct RunReportReadingTests {
    @Test("JSON → RunReport → JSON is identical, byte for byte")
    func roundTrip() throws {
        let original = try SampleReports.make().jsonText()
        let reread = try RunReport.parse(text: original)
        #expect(try reread.jsonText() == original)
    }

    @Test("the write path, why io_uring was unavailable and the source addresses survive the trip; older reports read as unknown")
    func sendPath() throws {
        var sample = SampleReports.make()
        sample.generator.sendPath = "send"
        sample.generator.ioUringUnavailable = "io_uring_setup failed: Operation not permitted (errno 1)"
        let reread = try RunReport.parse(text: try sample.jsonText())
        #expect(reread.generator.sendPath == "send")
        #expect(reread.generator.ioUringUnavailable == "io_uring_setup failed: Operation not permitted (errno 1)")

        // A report written before these fields existed: the same JSON without them.
        var top = try #require(try JSONSerialization.jsonObject(with: Data(try sample.jsonText().utf8)) as? [String: Any])
        var generator = try #require(top["generator"] as? [String: Any])
        for key in ["send_path", "io_uring_unavailable", "source_addresses"] {
            #expect(generator.removeValue(forKey: key) != nil, "\(key)")
        }
        top["generator"] = generator
        let older = String(decoding: try JSONSerialization.data(withJSONObject: top), as: UTF8.self)
        let fromOlder = try RunReport.parse(text: older)
        #expect(fromOlder.generator.sendPath == "")
        #expect(fromOlder.generator.ioUringUnavailable == nil)
        #expect(fromOlder.generator.sourceAddresses == [])
        #expect(reread.generator.sourceAddresses == ["127.0.0.1", "127.0.0.2"])
    }

    @Test("the read path and why the receive ring was unavailable survive the trip; older reports read as unknown")
    func receivePath() throws {
        var sample = SampleReports.make()
        sample.generator.receivePath = "epoll+recv"
        sample.generator.receiveRingUnavailable = "io_uring_setup failed: Function not implemented (errno 38)"
        let text = try sample.jsonText()
        let reread = try RunReport.parse(text: text)
        #expect(reread.generator.receivePath == "epoll+recv")
        #expect(reread.generator.receiveRingUnavailable == "io_uring_setup failed: Function not implemented (errno 38)")
        #expect(try reread.jsonText() == text)
        var top = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        var generator = try #require(top["generator"] as? [String: Any])
        for key in ["receive_path", "receive_ring_unavailable"] {
            #expect(generator.removeValue(forKey: key) != nil, "\(key)")
        }
        top["generator"] = generator
        let fromOlder = try RunReport.parse(text: String(decoding: try JSONSerialization.data(withJSONObject: top), as: UTF8.self))
        #expect(fromOlder.generator.receivePath == "")
        #expect(fromOlder.generator.receiveRingUnavailable == nil)
    }

    @Test("churn skips, transport errors, request counts of both sides, ack-batching fallbacks and receive pauses survive the trip; older reports read as 0")
    func countsFromClientCounters() throws {
        var counters = ClientCounters()
        counters.churnSkipped = 7
        counters.recordTransportError("TLS error: wrong version number", count: 3)
        counters.recordTransportError("WebSocket upgrade refused: HTTP 404 (HTTP/1.1 404 Not Found)", count: 5)
        counters.recordTransportError("TLS handshake timeout", count: 3)
        counters.requestsSent = 40
        counters.responsesReceived = 36
        counters.responsesLate = 2
        counters.requestsAnswered = 37
        counters.requestsUnanswered = 1
        counters.lowWatermarkFallbacks = 6
        counters.lowWatermarkRearms = 5
        counters.receiveCoalescingPauses = 9
        counters.receiveBatchingPauses = 4
        var sample = SampleReports.make()
        sample.setCounters(counters, peakConnected: 4)
        let text = try sample.jsonText()
        let reread = try RunReport.parse(text: text)
        #expect(try reread.jsonText() == text)
        #expect(reread.connections.churnSkipped == 7)
        // Most frequent first, then by text.
        #expect(reread.connections.transportErrors == [
            ReasonCount("WebSocket upgrade refused: HTTP 404 (HTTP/1.1 404 Not Found)", 5),
            ReasonCount("TLS error: wrong version number", 3), ReasonCount("TLS handshake timeout", 3),
        ])
        #expect(reread.connections.transportErrorsTotal == 11)
        #expect(reread.requests == RequestSummary(sent: 40, answered: 36, timedOut: 6, late: 2, responderAnswered: 37,
                                                  responderUnanswered: 1))
        #expect(reread.generator.lowWatermarkFallbacks == 6)
        #expect(reread.generator.lowWatermarkRearms == 5)
        #expect(reread.generator.receiveCoalescingPauses == 9)
        #expect(reread.generator.receiveBatchingPauses == 4)
        let top = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let connections = try #require(top["connections"] as? [String: Any])
        #expect(connections["churn_skipped"] as? Int == 7)
        #expect(connections["transport_errors"] as? Int == 11)

        // A report written before these keys existed.
        var older = top
        var olderConnections = connections
        for key in ["churn_skipped", "transport_errors", "transport_errors_by_reason"] {
            #expect(olderConnections.removeValue(forKey: key) != nil, "\(key)")
        }
        older["connections"] = olderConnections
        var requests = try #require(top["requests"] as? [String: Any])
        for key in ["late", "responder_answered", "responder_unanswered"] {
            #expect(requests.removeValue(forKey: key) != nil, "\(key)")
        }
        older["requests"] = requests
        var generator = try #require(top["generator"] as? [String: Any])
        for key in ["rcvlowat_fallbacks", "rcvlowat_rearms"] {
            #expect(generator.removeValue(forKey: key) != nil, "\(key)")
        }
        older["generator"] = generator
        let fromOlder = try RunReport.parse(text: String(decoding: try JSONSerialization.data(withJSONObject: older), as: UTF8.self))
        #expect(fromOlder.connections.churnSkipped == 0)
        #expect(fromOlder.connections.transportErrors == [])
        #expect(fromOlder.requests == RequestSummary(sent: 40, answered: 36, timedOut: 6))
        #expect(fromOlder.generator.lowWatermarkFallbacks == 0)
        #expect(fromOlder.generator.lowWatermarkRearms == 0)

        // A total that is not the sum of its reasons is refused, naming the key.
        var inconsistent = top
        var badConnections = connections
        badConnections["transport_errors"] = 12
        inconsistent["connections"] = badConnections
        #expect(throws: ReportError("report.json: connections.transport_errors: 12 is not the sum of transport_errors_by_reason (11)")) {
            try RunReport.parse(text: String(decoding: try JSONSerialization.data(withJSONObject: inconsistent), as: UTF8.self))
        }
    }

    @Test("histograms come back exactly from their hdr payloads, both origins")
    func histogramsRestored() throws {
        let reread = try RunReport.parse(text: try SampleReports.make().jsonText())
        let original = SampleReports.latency()
        for kind in LatencyKind.allCases {
            for origin in LatencyOrigin.allCases {
                #expect(reread.latency.histogram(kind, from: origin).recordedValues()
                    == original.histogram(kind, from: origin).recordedValues())
            }
        }
        #expect(reread.fleets.count == 2)
        #expect(reread.fleets[1].latency.histogram(.endToEnd, from: .intended).totalCount == 1)
    }

    @Test("counts, reasons, delivery and timeline survive the trip")
    func fieldsRestored() throws {
        let sample = SampleReports.make()
        let reread = try RunReport.parse(text: try sample.jsonText())
        #expect(reread.connections == sample.connections)
        #expect(reread.messages == sample.messages)
        #expect(reread.delivery == sample.delivery)
        #expect(reread.ackTimeouts == sample.ackTimeouts)
        #expect(reread.ackTimeoutSeconds == sample.ackTimeoutSeconds)
        #expect(reread.thresholds == sample.thresholds)
        #expect(reread.generator == sample.generator)
        #expect(reread.timeline == sample.timeline)
        #expect(reread.environment == sample.environment)
        #expect(reread.scenario == sample.scenario)
        #expect(reread.run == sample.run)
    }

    @Test("a wrong schema is refused, naming what was found")
    func wrongSchema() throws {
        let text = try SampleReports.make().jsonText()
            .replacingOccurrences(of: "\"fleetbench.report/1\"", with: "\"other/2\"")
        #expect(throws: ReportError("r.json: schema: expected \"fleetbench.report/1\", found \"other/2\"")) {
            try RunReport.parse(text: text, file: "r.json")
        }
    }

    @Test("a missing or mistyped key is an error naming its path", arguments: [
        ("\"attempted\": 12", "\"attempts\": 12", "report.json: connections.attempted: missing"),
        ("\"peak_connected\": 10", "\"peak_connected\": -1",
         "report.json: connections.peak_connected: expected a non-negative integer, found integer -1"),
        ("\"interrupted\": false", "\"interrupted\": \"no\"",
         "report.json: run.interrupted: expected true or false, found string \"no\""),
        ("\"started_at\": \"2026-11-29T15:16:30.125Z\"", "\"started_at\": \"yesterday\"",
         "report.json: run.started_at: not an RFC 3339 date"),
        ("\"origin\": \"sent\"", "\"origin\": \"guessed\"",
         "report.json: latency_ms.tcp_connect.origin: expected \"intended\" or \"sent\", found \"guessed\""),
    ])
    func badField(original: String, replacement: String, message: String) throws {
        let text = try SampleReports.make().jsonText()
        #expect(text.contains(original))
        #expect(throws: ReportError(message)) {
            try RunReport.parse(text: text.replacingOccurrences(of: original, with: replacement))
        }
    }

    @Test("a corrupt histogram payload is an error, not a crash")
    func corruptHistogram() throws {
        let text = try SampleReports.make().jsonText()
        let range = try #require(text.range(of: "\"hdr\": \"HISTF"))
        let corrupted = text.replacingCharacters(in: range, with: "\"hdr\": \"XISTF")
        do {
            _ = try RunReport.parse(text: corrupted)
            Issue.record("a corrupt payload was accepted")
        } catch {
            #expect(error.message.hasPrefix("report.json: latency_ms.tcp_connect.hdr: "))
        }
    }

    @Test("a file that is not JSON is an error with its position")
    func notJSON() {
        #expect(throws: ReportError.self) { try RunReport.parse(text: "{\"schema\": ", file: "x.json") }
    }

    @Test("running totals of the engine's snapshots become per-second counts")
    func differencedTimeline() {
        let cumulative = [
            TimelinePoint(t: 1, connected: 11, published: 2, received: 2, endToEndP99Ms: 1.2, ackTimeouts: 0),
            TimelinePoint(t: 2, connected: 11, published: 22, received: 21, endToEndP99Ms: 1.3, ackTimeouts: 1),
            TimelinePoint(t: 2.9, connected: 0, published: 40, received: 40, ackTimeouts: 1),
        ]
        #expect(TimelinePoint.differenced(cumulative) == [
            TimelinePoint(t: 1, connected: 11, published: 2, received: 2, endToEndP99Ms: 1.2, ackTimeouts: 0),
            TimelinePoint(t: 2, connected: 11, published: 20, received: 19, endToEndP99Ms: 1.3, ackTimeouts: 1),
            TimelinePoint(t: 2.9, connected: 0, published: 18, received: 19, ackTimeouts: 0),
        ])
    }
}
