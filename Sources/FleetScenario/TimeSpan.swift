/// A length of time in nanoseconds, written in scenarios as `"250ms"`, `"30s"`, `"5m"`, `"1h"` or combinations
/// such as `"1m30s"`. Units: ns, us (or µs), ms, s, m, h. Decimals are allowed per part (`"1.5s"`).
public struct TimeSpan: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public static func milliseconds(_ value: UInt64) -> TimeSpan { TimeSpan(nanoseconds: value * 1_000_000) }
    public static func seconds(_ value: UInt64) -> TimeSpan { TimeSpan(nanoseconds: value * 1_000_000_000) }
    public static let zero = TimeSpan(nanoseconds: 0)

    public var seconds: Double { Double(nanoseconds) / 1e9 }

    public static func < (left: TimeSpan, right: TimeSpan) -> Bool { left.nanoseconds < right.nanoseconds }
    public static func + (left: TimeSpan, right: TimeSpan) -> TimeSpan {
        TimeSpan(nanoseconds: left.nanoseconds &+ right.nanoseconds)
    }

    static let units: [(name: String, nanoseconds: Double)] = [
        ("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9),
    ]

    /// Parses a duration string; the error says what is wrong in words.
    public static func parse(_ text: String) -> Result<TimeSpan, TimeSpanError> {
        let characters = Array(text)
        guard !characters.isEmpty else { return .failure(TimeSpanError(message: "empty duration")) }
        var total = 0.0
        var index = 0
        while index < characters.count {
            let numberStart = index
            while index < characters.count, characters[index].isASCII, characters[index].isNumber || characters[index] == "." {
                index += 1
            }
            guard index > numberStart, let number = Double(String(characters[numberStart..<index])) else {
                return .failure(TimeSpanError(message: "expected a number at character \(numberStart + 1), found '\(characters[numberStart])'"))
            }
            let unitStart = index
            while index < characters.count, characters[index].isLetter { index += 1 }
            let unit = String(characters[unitStart..<index])
            if unit.isEmpty {
                return .failure(TimeSpanError(message: "missing unit after '\(String(characters[numberStart..<index]))'"))
            }
            guard let factor = units.first(where: { $0.name == unit })?.nanoseconds else {
                return .failure(TimeSpanError(message: "unknown unit '\(unit)'; units are ns, us, ms, s, m, h"))
            }
            total += number * factor
        }
        guard total < 1e18 else { return .failure(TimeSpanError(message: "duration too long")) }
        return .success(TimeSpan(nanoseconds: UInt64(total.rounded())))
    }

    /// An exact rendering: whole seconds as `1h2m30s`, otherwise the largest unit that divides: `1500ms`, `250us`.
    public var description: String {
        if nanoseconds == 0 { return "0s" }
        if nanoseconds % 1_000_000_000 == 0 {
            let totalSeconds = nanoseconds / 1_000_000_000
            var text = ""
            if totalSeconds >= 3600 { text += "\(totalSeconds / 3600)h" }
            if totalSeconds % 3600 >= 60 { text += "\(totalSeconds % 3600 / 60)m" }
            if totalSeconds % 60 > 0 { text += "\(totalSeconds % 60)s" }
            return text
        }
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
        if nanoseconds % 1000 == 0 { return "\(nanoseconds / 1000)us" }
        return "\(nanoseconds)ns"
    }
}

public struct TimeSpanError: Error, Equatable, Sendable {
    public var message: String
}
