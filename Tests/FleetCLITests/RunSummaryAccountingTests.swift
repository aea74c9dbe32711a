import FleetMetrics
import FleetReports
import Testing
@testable import FleetCLI

/// The printed summary's accounting lines: every counter of the end of a run and of a run's identity is shown,
/// with its exact value, when it is not 0.
@Suite("run summary: accounting lines")
struct RunSummaryAccountingTests {
    static func lines(_ report: RunReport) -> [String] {
        RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init)
    }

    @Test("issue 11, case 3: received is the run's own 181; the other run's 181 are in arrived, and the summary says they are not this run's")
    func foreignArrivals() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.messages.published = PerQoSCounts(qos1: 181)
        report.messages.acked = PerQoSCounts(qos1: 181)
        report.messages.received = PerQoSCounts(qos1: 181)
        report.messages.arrived = PerQoSCounts(qos1: 362)
        report.delivery.qos1 = DeliveryCounts(expected: 181, received: 181, unique: 181, duplicated: 0, reordered: 0)
        report.delivery.foreign = 181
        let lines = Self.lines(report)
        #expect(lines.filter { $0.hasPrefix("  qos1") } == [
            "  qos1          published 181, acked 181, unacked at end 0, received 181, arrived 362; expected 181, lost 0, duplicated 0, reordered 0",
        ])
        #expect(lines.filter { $0.hasPrefix("  not counted") } == [
            "  not counted   foreign 181 (not this run's), retained on subscribe 0; in arrived only, not in received, expected, lost or duplicated",
        ])
        // A subscriber-only run that got only other publishers' messages still shows its QoS line.
        report.messages.published = PerQoSCounts()
        report.messages.acked = PerQoSCounts()
        report.messages.received = PerQoSCounts()
        report.messages.arrived = PerQoSCounts(qos0: 8)
        report.delivery.qos1 = DeliveryCounts()
        report.delivery.foreign = 8
        #expect(Self.lines(report).filter { $0.hasPrefix("  qos") } == [
            "  qos0          published 0, received 0, arrived 8; expected 0, lost 0, duplicated 0, reordered 0",
        ])
    }

    @Test("clamped latency samples: one line naming each kind and origin with its count, only when some were clamped")
    func clampedSamples() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        #expect(!Self.lines(report).contains { $0.hasPrefix("  clamped") })
        var latency = report.latency
        // Received at 1,000 µs: sent at 1,003 and 1,001 µs (negative: clamped), 960 µs; intended 950 µs each.
        for sent: UInt64 in [1_003_000, 1_001_000, 960_000] {
            latency.record(.endToEnd, intendedAt: 950_000, sentAt: sent, completedAt: 1_000_000)
        }
        // A PUBACK two hours after its intended time: beyond the histogram's hour.
        latency.record(.puback, from: .intended, microseconds: 7_200_000_000)
        report.latency = latency
        #expect(Self.lines(report).filter { $0.hasPrefix("  clamped") } == [
            "  clamped       puback from intended 1 beyond 1 h recorded as 1 h; end_to_end from sent 2 below 0 recorded as 0",
        ])
    }

    @Test("issue 11, case 2: retained leftovers delivered on subscribe are not duplicates")
    func retainedOnSubscribe() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.messages.published = PerQoSCounts(qos1: 499)
        report.messages.acked = PerQoSCounts(qos1: 499)
        report.messages.received = PerQoSCounts(qos1: 499)
        report.messages.arrived = PerQoSCounts(qos1: 509)
        report.delivery.qos1 = DeliveryCounts(expected: 499, received: 499, unique: 499, duplicated: 0, reordered: 0)
        report.delivery.retainedOnSubscribe = 10
        #expect(Self.lines(report).filter { $0.hasPrefix("  qos1") } == [
            "  qos1          published 499, acked 499, unacked at end 0, received 499, arrived 509; expected 499, lost 0, duplicated 0, reordered 0",
        ])
        #expect(Self.lines(report).filter { $0.hasPrefix("  not counted") } == [
            "  not counted   foreign 0 (not this run's), retained on subscribe 10; in arrived only, not in received, expected, lost or duplicated",
        ])
        // A run with neither has no such line.
        report.delivery.retainedOnSubscribe = 0
        #expect(!Self.lines(report).contains { $0.hasPrefix("  not counted") })
    }

    @Test("issue 11, case 1: unacked at end, ack timeouts and unsent slots each on their line with the exact count")
    func endOfRun() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.messages.published = PerQoSCounts(qos1: 8400)
        report.messages.acked = PerQoSCounts(qos1: 8080)
        report.messages.unackedAtEnd = PerQoSCounts(qos1: 310)
        report.messages.received = PerQoSCounts()
        report.delivery.qos1 = DeliveryCounts()
        report.ackTimeouts[.puback] = 10
        report.generator.unsentAtEnd = 1636
        let lines = Self.lines(report)
        #expect(lines.filter { $0.hasPrefix("  qos1") } == [
            "  qos1          published 8400, acked 8080, unacked at end 310, received 0; expected 0, lost 0, duplicated 0, reordered 0",
        ])
        #expect(lines.filter { $0.hasPrefix("  ack timeouts") } == ["  ack timeouts  puback 10"])
        #expect(lines.filter { $0.hasPrefix("  schedule") } == ["  schedule      unsent at end 1636, dropped 0"])
    }

    @Test("missed while offline and untracked join the qos line only when not 0")
    func missedAndUntracked() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.delivery.qos1 = DeliveryCounts(expected: 600, received: 590, unique: 580, duplicated: 10, reordered: 3,
                                              untracked: 15, missedWhileOffline: 400)
        #expect(Self.lines(report).filter { $0.hasPrefix("  qos1") } == [
            "  qos1          published 1000, acked 0, unacked at end 0, received 1000; expected 600, lost 5, duplicated 10, "
                + "reordered 3, missed while offline 400, untracked 15",
        ])
    }
}
