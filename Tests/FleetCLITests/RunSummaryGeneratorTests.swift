import FleetReports
import Testing
@testable import FleetCLI

@Suite("run summary: the generator line")
struct RunSummaryGeneratorTests {
    static func generatorLine(pauses: UInt64) -> String? {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.generator = GeneratorHealth(cpuSeconds: 1.5, peakRSSBytes: 40 * 1_048_576, lanes: 1,
                                           receiveCoalescingMicroseconds: 1000, receiveCoalescingPauses: pauses)
        return RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init)
            .first { $0.hasPrefix("  generator") }
    }

    @Test("says receive times may be late only when a lane did pause, with the count and how to turn it off")
    func coalescing() {
        #expect(Self.generatorLine(pauses: 0) == "  generator     cpu 1.5 s, peak rss 40 MiB, lanes 1")
        #expect(Self.generatorLine(pauses: 4821) == "  generator     cpu 1.5 s, peak rss 40 MiB, lanes 1, receive times "
            + "up to 1000 µs late in turns reading at 64,000 msg/s or more, bursts included (4821 pauses; --receive-coalescing 0 to read at once)")
    }

    @Test("says steady streams were read in batches only when a lane waited so, with the bound and the count")
    func batching() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.generator = GeneratorHealth(cpuSeconds: 1.5, peakRSSBytes: 40 * 1_048_576, lanes: 1,
                                           receiveCoalescingMicroseconds: 1000, receiveCoalescingPauses: 0,
                                           receiveBatchingMicroseconds: 500, receiveBatchingPauses: 0)
        let line = { RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init)
            .first { $0.hasPrefix("  generator") } }
        #expect(line() == "  generator     cpu 1.5 s, peak rss 40 MiB, lanes 1")
        report.generator.receiveBatchingPauses = 28_612
        #expect(line() == "  generator     cpu 1.5 s, peak rss 40 MiB, lanes 1, steady receive streams read in batches: "
            + "receive times up to 500 µs late (28612 waits; --receive-coalescing 0 to read at once)")
    }

    @Test("names io_uring's absence and the kernel's reason only when it was asked for and unavailable")
    func ioUringUnavailable() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.generator = GeneratorHealth(cpuSeconds: 1.5, peakRSSBytes: 40 * 1_048_576, lanes: 1, sendPath: "send",
                                           ioUringUnavailable: "io_uring_setup failed: Operation not permitted (errno 1)")
        let line = RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init)
            .first { $0.hasPrefix("  generator") }
        #expect(line == "  generator     cpu 1.5 s, peak rss 40 MiB, lanes 1, writes by send(2): io_uring unavailable "
            + "(io_uring_setup failed: Operation not permitted (errno 1))")
        // --io-uring off: send(2) by choice, nothing to explain.
        report.generator.ioUringUnavailable = nil
        #expect(RunSummary.render(report, directory: nil).hasSuffix("\n  generator     cpu 1.5 s, peak rss 40 MiB, lanes 1"))
    }

    @Test("publishes given up when the broker lost their session get a line of their own, only when there are any")
    func abandonedPublishes() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        let lines = { RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init) }
        #expect(!lines().contains { $0.hasPrefix("  abandoned") })
        report.generator.abandonedPublishes = 7
        #expect(lines().filter { $0.hasPrefix("  abandoned") }
            == ["  abandoned     7 QoS 1/2 publishes in flight when a reconnect found the session gone"])
    }

    @Test("a drain of a second or more gets a line with its length and limit (why the run outlasted its plan); a short one none")
    func longDrain() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        let lines = { RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init) }
        report.generator.drainLimitSeconds = 90
        report.generator.drainSeconds = 0.999
        #expect(!lines().contains { $0.hasPrefix("  drain") })
        report.generator.drainSeconds = 61.870827714
        #expect(lines().filter { $0.hasPrefix("  drain") }
            == ["  drain         61.871 s of at most 90 s after publishing stopped: acks and deliveries still "
                + "outstanding were waited for, on clients offline at the end until they reconnected"])
    }

    @Test("schedule, downgrades and requests lines name each fleet's share when the report has fleets")
    func fleetShares() {
        var report = ReportCommandsTests.report(endToEndBase: 1000)
        report.generator.unsentAtEnd = 12
        report.generator.droppedSlots = 2
        report.downgrades = DowngradeSummary(subscriptionQoS: 3, subscriptionRefused: 1, qos2AckedAsQoS1: 0)
        report.requests = RequestSummary(sent: 50, answered: 47, timedOut: 3, late: 1, responderAnswered: 48,
                                         responderUnanswered: 2)
        var cars = FleetReport(name: "cars", clients: 2)
        cars.unsentAtEnd = 9
        cars.downgrades = DowngradeSummary(subscriptionQoS: 3)
        var backend = FleetReport(name: "backend", clients: 1)
        backend.unsentAtEnd = 3
        backend.droppedSlots = 2
        backend.downgrades = DowngradeSummary(subscriptionRefused: 1)
        backend.requests = RequestSummary(sent: 50, answered: 47, timedOut: 3, late: 1)
        var vehicles = FleetReport(name: "vehicles", clients: 5)
        vehicles.requests = RequestSummary(responderAnswered: 48, responderUnanswered: 2)
        report.fleets = [cars, backend, vehicles]
        let lines = RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("  schedule") }
            == ["  schedule      unsent at end 12 (cars 9, backend 3), dropped 2 (backend 2)"])
        #expect(lines.filter { $0.hasPrefix("  downgrades") }
            == ["  downgrades    subscription_qos 3, subscription_refused 1 (cars 3, backend 1)"])
        #expect(lines.filter { $0.hasPrefix("  requests") }
            == ["  requests      sent 50, answered 47, timed out 3 (backend 3), of them late 1; "
                + "responders answered 48, could not answer 2 (vehicles 2)"])
        // One fleet: no fleets section, no shares.
        report.fleets = []
        #expect(RunSummary.render(report, directory: nil).split(separator: "\n").map(String.init)
            .filter { $0.hasPrefix("  schedule") } == ["  schedule      unsent at end 12, dropped 2"])
    }
}
