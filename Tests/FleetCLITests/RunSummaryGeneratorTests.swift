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
            + "up to 1000 µs late under heavy load (4821 pauses; --receive-coalescing 0 to read at once)")
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
}
