import Testing
@testable import FleetScenario

@Suite("Durations")
struct TimeSpanTests {
    @Test("duration strings parse to exact nanoseconds", arguments: [
        ("250ms", 250_000_000 as UInt64), ("30s", 30_000_000_000), ("5m", 300_000_000_000), ("1h", 3_600_000_000_000),
        ("1m30s", 90_000_000_000), ("1.5s", 1_500_000_000), ("100us", 100_000), ("100µs", 100_000), ("7ns", 7),
        ("2h0m5s", 7_205_000_000_000), ("0s", 0),
    ])
    func parses(text: String, nanoseconds: UInt64) throws {
        #expect(try TimeSpan.parse(text).get() == TimeSpan(nanoseconds: nanoseconds))
    }

    @Test("bad durations say what is wrong", arguments: [
        ("", "empty duration"), ("30", "missing unit after '30'"), ("30sec", "unknown unit 'sec'; units are ns, us, ms, s, m, h"),
        ("s", "expected a number at character 1, found 's'"), ("1m 30s", "expected a number at character 3, found ' '"), ("5d", "unknown unit 'd'; units are ns, us, ms, s, m, h"),
    ])
    func rejects(text: String, message: String) {
        guard case .failure(let failure) = TimeSpan.parse(text) else {
            Issue.record("expected \(text) to fail")
            return
        }
        #expect(failure.message == message)
    }

    @Test("durations print in the shortest exact form", arguments: [
        (90_000_000_000 as UInt64, "1m30s"), (3_600_000_000_000, "1h"), (1_500_000_000, "1500ms"), (0, "0s"),
        (250_000, "250us"), (7, "7ns"), (3_605_000_000_000, "1h5s"),
    ])
    func prints(nanoseconds: UInt64, text: String) {
        #expect(TimeSpan(nanoseconds: nanoseconds).description == text)
    }
}
