import FleetJSON
import FleetMetrics
import Foundation
import Testing
@testable import FleetReports

@Suite("report.html")
struct ReportHTMLTests {
    @Test("every section is there, in page order, fleets included with two fleets")
    func sections() {
        let html = ReportHTML.render(SampleReports.make())
        var last = html.startIndex
        for id in ReportHTML.sectionIDs {
            let marker = "id=\"\(id)\""
            guard let range = html.range(of: marker) else {
                Issue.record("section \(id) is missing")
                continue
            }
            #expect(range.lowerBound > last, "section \(id) is out of order")
            last = range.lowerBound
        }
        #expect(html.components(separatedBy: "<section").count == html.components(separatedBy: "</section>").count)
    }

    @Test("a single-fleet report has no fleets section")
    func singleFleet() {
        let html = ReportHTML.render(SampleReports.make(fleetNames: ["cars"]))
        #expect(!html.contains("id=\"fleets\""))
        #expect(html.contains("id=\"environment\""))
    }

    @Test("verdict at the top: FAILED with the count of thresholds passed, PASSED when passed")
    func verdict() throws {
        var report = SampleReports.make()
        let failed = ReportHTML.render(report)
        let verdict = try #require(failed.range(of: "<header id=\"verdict\" class=\"verdict fail\">"))
        #expect(verdict.lowerBound < (failed.range(of: "id=\"thresholds\"")?.lowerBound ?? failed.startIndex))
        #expect(failed.contains("<div class=\"badge\">FAILED</div>"))
        #expect(failed.contains("1 of 2 thresholds passed"))
        #expect(failed.contains("<td class=\"result\">✗ failed</td>"))
        #expect(failed.contains("<td class=\"num\">0.99 ms</td><td class=\"num\">50 ms</td>"))
        report.passed = true
        report.generator.saturated = false
        let passed = ReportHTML.render(report)
        #expect(passed.contains("<div class=\"badge\">PASSED</div>"))
        #expect(passed.contains("Not saturated"))
    }

    @Test("charts: timeline lines and a percentile curve per latency kind on a log percentile axis")
    func charts() {
        let html = ReportHTML.render(SampleReports.make())
        for caption in ["Connected clients", "Message rates", "End-to-end latency"] {
            #expect(html.contains("<figcaption>\(caption)</figcaption>"))
        }
        for kind in ["tcp_connect", "puback", "end_to_end", "schedule_lag"] {
            #expect(html.contains("<figcaption>\(kind) · percentile distribution</figcaption>"))
        }
        for tick in [">0%<", ">90%<", ">99%<", ">99.9%<"] { #expect(html.contains(tick)) }
        // The timeline's second 2 has no latency samples: the p99 line breaks into two pieces (a line and a dot).
        let latencyChart = html.components(separatedBy: "<figcaption>End-to-end latency</figcaption>")[1]
            .components(separatedBy: "</figure>")[0]
        #expect(latencyChart.components(separatedBy: "<circle").count - 1 == 4)
        #expect(latencyChart.components(separatedBy: "<polyline").count - 1 == 0)
    }

    @Test("a long timeline is merged for the charts: sums kept, the worst p99 kept")
    func downsampling() {
        let points = (1...10).map { second in
            TimelinePoint(t: Double(second), connected: UInt64(second), published: 10, received: 9,
                          endToEndP50Ms: Double(second), endToEndP99Ms: second == 4 ? 50 : 5, ackTimeouts: 1)
        }
        let merged = ReportHTML.downsampled(points, to: 4)
        #expect(merged == [
            TimelinePoint(t: 3, connected: 3, published: 30, received: 27, endToEndP50Ms: 2, endToEndP99Ms: 5, ackTimeouts: 3),
            TimelinePoint(t: 6, connected: 6, published: 30, received: 27, endToEndP50Ms: 5, endToEndP99Ms: 50, ackTimeouts: 3),
            TimelinePoint(t: 9, connected: 9, published: 30, received: 27, endToEndP50Ms: 8, endToEndP99Ms: 5, ackTimeouts: 3),
            TimelinePoint(t: 10, connected: 10, published: 10, received: 9, endToEndP50Ms: 10, endToEndP99Ms: 5, ackTimeouts: 1),
        ])
        #expect(ReportHTML.downsampled(points, to: 10) == points)
    }

    @Test("message rates: a last stub of a second merges into the second before, no spike at the end")
    func rateStub() {
        func point(_ t: Double, _ published: UInt64, _ received: UInt64) -> TimelinePoint {
            TimelinePoint(t: t, connected: 1, published: published, received: received, endToEndP50Ms: nil, endToEndP99Ms: nil)
        }
        // The run ended 250 ms after its third second with one message in it: 4 msg/s if drawn on its own (and one
        // message in 11 ms, as a quickstart run had, drew a spike to 90 msg/s).
        let stub = ReportHTML.messageRates([point(1, 10, 9), point(2, 20, 18), point(3, 20, 18), point(3.25, 1, 1)])
        #expect(stub.published.map(\.x) == [1, 2, 3.25])
        #expect(stub.published.map(\.y) == [10, 20, 16.8])
        #expect(stub.received.map(\.y) == [9, 18, 15.2])
        // A last span of at least half the one before is drawn as it is.
        let half = ReportHTML.messageRates([point(1, 10, 9), point(2, 20, 18), point(2.5, 10, 8)])
        #expect(half.published.map(\.x) == [1, 2, 2.5])
        #expect(half.published.map(\.y) == [10, 20, 20])
        #expect(half.received.map(\.y) == [9, 18, 16])
        #expect(ReportHTML.messageRates([point(0.25, 1, 1)]).published.map(\.y) == [4])
    }

    @Test("a day-long timeline keeps the page small")
    func dayLongTimeline() {
        var report = SampleReports.make()
        report.timeline = (1...86_400).map {
            TimelinePoint(t: Double($0), connected: 1000, published: 1000, received: 1000, endToEndP50Ms: 1, endToEndP99Ms: 2)
        }
        #expect(ReportHTML.render(report).utf8.count < 400_000)
    }

    @Test("without a timeline the section says so")
    func noTimeline() {
        var report = SampleReports.make()
        report.timeline = []
        #expect(ReportHTML.render(report).contains("No timeline was recorded for this run."))
    }

    @Test("self-contained: no scripts, nothing fetched, styles inline, a print stylesheet")
    func selfContained() {
        let html = ReportHTML.render(SampleReports.make())
        let withoutNamespace = html.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "")
        for forbidden in ["<script", "src=", "href=", "url(", "@import", "http://", "https://", "<link"] {
            #expect(!withoutNamespace.contains(forbidden), "found \(forbidden)")
        }
        #expect(html.contains("<style>"))
        #expect(html.contains("@media print"))
        #expect(html.hasPrefix("<!DOCTYPE html>"))
    }

    @Test("hostile names from the scenario and the network are escaped everywhere")
    func escaping() {
        let hostile = "</title><script>alert('x')</script> & \"more\""
        var report = SampleReports.make(name: hostile, fleetNames: ["<img src=x onerror=alert(1)>", "b"])
        report.scenario.description = "<b>bold</b>"
        report.scenario.redacted = .object([JSONMember("name", .string("</pre><script>evil()</script>"))])
        report.thresholds[0].expression = "latency.end_to_end.p99 < 50ms <i>"
        report.thresholds[0].detail = "<u>detail</u>"
        report.brokers = ["mqtt://<host>:1883"]
        report.connections.failuresByReason = [ReasonCount("<reason>", 1)]
        report.generator.saturationReasons = ["lag > 10 µs & <cpu>"]
        let html = ReportHTML.render(report)
        for raw in ["<script", "<img", "<b>", "<i>", "<u>", "<host>", "<reason>", "<cpu>", "</pre><script"] {
            #expect(!html.contains(raw), "unescaped \(raw)")
        }
        #expect(html.contains("&lt;/title&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;"))
        #expect(html.contains("&lt;img src=x onerror=alert(1)&gt;"))
        #expect(html.contains("&lt;/pre&gt;&lt;script&gt;evil()&lt;/script&gt;"))
        #expect(html.contains("lag &gt; 10 µs &amp; &lt;cpu&gt;"))
    }

    @Test("delivery, messages, failures and generator figures are shown")
    func figures() {
        let html = ReportHTML.render(SampleReports.make())
        #expect(html.contains("<tr><td>QoS 1</td><td class=\"num\">200</td><td class=\"num\">201</td><td class=\"num\">199</td><td class=\"num bad\">1</td><td class=\"num bad\">2</td>"))
        #expect(html.contains("<th>connack refused 0x87</th><td class=\"num\">1</td>"))
        #expect(html.contains("<th>puback (after 5 s)</th><td class=\"num bad\">1</td>"))
        #expect(html.contains("<th>schedule lag p99</th><td class=\"num\">0.02 ms</td>"))
        #expect(html.contains("<th>peak RSS</th><td class=\"num\">50 MiB</td>"))
        #expect(html.contains("<th>writes</th><td class=\"num\">io_uring, one submission per lane turn</td>"))
        #expect(html.contains("<th>source addresses</th><td class=\"num\">127.0.0.1, 127.0.0.2</td>"))
        #expect(html.contains("<tr><td>end_to_end</td><td>intended</td><td class=\"num\">1,000</td><td class=\"num\">0.001</td><td class=\"num\">0.501</td><td class=\"num\">0.5</td><td class=\"num\">0.9</td><td class=\"num\">0.99</td><td class=\"num\">0.999</td><td class=\"num\">1</td><td class=\"num\">0</td><td class=\"num\">0</td></tr>"))
    }

    @Test("clamped samples: every latency row shows how many came out negative (recorded as 0) and how many were beyond 1 h, non-zero ones highlighted")
    func clampedCounts() {
        var report = SampleReports.make()
        var latency = LatencyRecorder()
        // Received at 1,000 µs: sent at 1,003 and 1,001 µs (negative: clamped), 960 µs; intended 950 µs each.
        for sent: UInt64 in [1_003_000, 1_001_000, 960_000] {
            latency.record(.endToEnd, intendedAt: 950_000, sentAt: sent, completedAt: 1_000_000)
        }
        // A PUBACK two hours after its intended time: beyond the histogram's hour.
        latency.record(.puback, from: .intended, microseconds: 7_200_000_000)
        report.latency = latency
        let html = ReportHTML.render(report)
        #expect(html.contains("<th class=\"num\">max</th><th class=\"num\" title=\"samples that came out negative, recorded as 0\">clamped &lt; 0</th>"
            + "<th class=\"num\" title=\"samples beyond the histogram's range (1 h), recorded as its maximum\">clamped &gt; 1 h</th></tr>"))
        // end_to_end from intended: 50, 50, 50 µs, nothing clamped; from sent: 0, 0 (clamped), 40 µs.
        #expect(html.contains("<tr><td>end_to_end</td><td>intended</td><td class=\"num\">3</td><td class=\"num\">0.05</td>"))
        #expect(html.contains("<td class=\"num\">0</td><td class=\"num\">0</td></tr>\n<tr class=\"secondary\"><td>end_to_end</td><td>sent</td><td class=\"num\">3</td>"))
        #expect(html.contains("<td class=\"num\">0.04</td><td class=\"num bad\">2</td><td class=\"num\">0</td></tr>"))
        #expect(html.contains("<tr><td>puback</td><td>intended</td><td class=\"num\">1</td>"))
        #expect(html.contains("<td class=\"num\">0</td><td class=\"num bad\">1</td></tr>"))
    }

    @Test("the end of a run: unacked at end per QoS, unsent slots and the drain are shown, in the headline when not 0")
    func endOfRun() {
        var report = SampleReports.make()
        #expect(!ReportHTML.render(report).contains("Unacked at end"))
        report.messages.unackedAtEnd = PerQoSCounts(qos1: 310)
        report.generator.unsentAtEnd = 1_325
        report.generator.drainSeconds = 13.4
        report.generator.drainLimitSeconds = 15
        let html = ReportHTML.render(report)
        #expect(html.contains("<th class=\"num\">unacked at end</th>"))
        #expect(html.contains("<td class=\"num\">199</td><td class=\"num bad\">310</td>"))
        #expect(html.contains("Unacked at end"))
        #expect(html.contains("Unsent at end"))
        #expect(html.contains("<th>slots unsent at end</th><td class=\"num bad\">1,325</td>"))
        #expect(html.contains("<th>end-of-run drain</th><td class=\"num\">13.4 s of at most 15 s</td>"))
    }

    @Test("request/response figures in the headline when the run sent requests")
    func requests() {
        var report = SampleReports.make()
        #expect(!ReportHTML.render(report).contains("Requests"))
        report.requests = RequestSummary(sent: 1_200, answered: 1_190, timedOut: 10)
        let html = ReportHTML.render(report)
        #expect(html.contains("<div><dt>Requests answered</dt><dd>1,190 of 1,200</dd></div>"))
        #expect(html.contains("<div><dt>Requests timed out</dt><dd>10</dd></div>"))
    }

    @Test("every count of report.json's connections, downgrades, requests and ack batching is on the page, non-zero ones highlighted")
    func troubleCounts() {
        var report = SampleReports.make()
        let quiet = ReportHTML.render(report)
        #expect(quiet.contains("<th>never connected</th><td class=\"num\">0</td>"))
        #expect(quiet.contains("<th>QoS 2 answered with PUBACK</th><td class=\"num\">0</td>"))
        #expect(quiet.contains("<caption>Transport errors by reason</caption>\n<tbody><tr><td class=\"muted\">none</td>"))
        #expect(!quiet.contains("Requests and responses"))
        #expect(!quiet.contains("re-arms"))
        report.connections.neverConnected = 3
        report.connections.retransmitted = 17
        report.connections.windowDecreases = 2
        report.connections.churnSkipped = 1_250
        report.connections.transportErrors = [ReasonCount("SSL_connect: wrong version number", 4)]
        report.downgrades = DowngradeSummary(subscriptionQoS: 5, subscriptionRefused: 6, qos2AckedAsQoS1: 1_900)
        report.requests = RequestSummary(sent: 1_200, answered: 1_190, timedOut: 10)
        report.requests.late = 7
        report.requests.responderAnswered = 1_195
        report.requests.responderUnanswered = 5
        report.generator.lowWatermarkFallbacks = 70
        report.generator.lowWatermarkRearms = 60
        let html = ReportHTML.render(report)
        for (key, value) in [
            ("never connected", "3"), ("connects retransmitted", "17"), ("connect window decreases", "2"),
            ("churn skipped", "1,250"), ("subscriptions at a lower QoS", "5"), ("subscriptions refused", "6"),
            ("QoS 2 answered with PUBACK", "1,900"), ("ack batching fallbacks (SO_RCVLOWAT)", "70"),
        ] {
            #expect(html.contains("<th>\(key)</th><td class=\"num bad\">\(value)</td>"), "\(key)")
        }
        #expect(html.contains("<caption>Transport errors by reason</caption>\n<tbody>\n"
            + "<tr><th>SSL_connect: wrong version number</th><td class=\"num\">4</td></tr>"))
        for (key, value) in [
            ("requests sent", "1,200"), ("answered", "1,190"), ("timed out", "10"), ("answered after the timeout", "7"),
            ("responder answered", "1,195"), ("responder left unanswered", "5"),
        ] {
            #expect(html.contains("<th>\(key)</th><td class=\"num\">\(value)</td>"), "\(key)")
        }
        #expect(html.contains("until the batching was re-armed (60 re-arms)."))
    }

    @Test("the write path in words, with the kernel's reason when io_uring was unavailable",
          arguments: [
              ("io_uring", nil, "io_uring, one submission per lane turn"),
              ("send", nil, "send(2), one per connection and turn"),
              ("send", "io_uring_setup failed: Operation not permitted (errno 1)",
               "send(2), one per connection and turn (io_uring unavailable: io_uring_setup failed: Operation not permitted (errno 1))"),
              ("io_uring+send", nil, "io_uring, and send(2) after a lane's ring failed"),
              ("", nil, "–"),
          ] as [(String, String?, String)])
    func sendPath(_ path: String, _ unavailable: String?, _ expected: String) {
        var health = GeneratorHealth()
        health.sendPath = path
        health.ioUringUnavailable = unavailable
        #expect(ReportHTML.sendPathText(health) == expected)
    }

    @Test("percentile axis: 90 % is one decade, 99.9 % three; labels follow", arguments: [
        (0.0, 0.0), (90.0, 1.0), (99.0, 2.0), (99.9, 3.0),
    ])
    func percentileAxis(percentile: Double, x: Double) {
        #expect(abs(LineChart.percentileX(percentile) - x) < 1e-9)
    }

    @Test("percentile ticks")
    func percentileTicks() {
        #expect(LineChart.percentileTicks(decades: 5).map(\.label) == ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"])
        #expect(LineChart.percentileX(100).isInfinite)
    }

    @Test("nice ticks cover the data in steps of 1, 2 or 5 times a power of ten", arguments: [
        (7.3, ["0", "2", "4", "6", "8"]), (1000.0, ["0", "200", "400", "600", "800", "1000"]),
        (0.45, ["0", "0.1", "0.2", "0.3", "0.4", "0.5"]), (0.0, ["0", "1"]),
    ])
    func niceTicks(maximum: Double, labels: [String]) {
        #expect(LineChart.niceTicks(upTo: maximum).map(\.label) == labels)
    }
}
