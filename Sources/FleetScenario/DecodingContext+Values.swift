import FleetPayload
import FleetJSON
import MQTTCodec

/// Decoders for the value kinds scenarios use. Each returns nil after reporting a problem.
extension DecodingContext {
    func string(_ value: JSONValue, _ path: JSONPath) -> String? {
        guard let text = text(of: value, path) else {
            expected("a string", path, got: value)
            return nil
        }
        return text
    }

    func nonEmptyString(_ value: JSONValue, _ path: JSONPath) -> String? {
        guard let text = string(value, path) else { return nil }
        if text.isEmpty {
            error(path, "expected a non-empty string, got \"\"")
            return nil
        }
        return text
    }

    /// A string value; or, where a `--set` put a bare number or boolean (`--set name=2024`), the text the user
    /// typed: the key expects a string, so the value is taken as one rather than refused for lack of shell quotes.
    func text(of value: JSONValue, _ path: JSONPath) -> String? {
        switch value {
        case .string(let text): return text
        case .integer, .real, .bool: return overrideText(at: path)
        default: return nil
        }
    }

    /// MQTT's protocol version as the scenario format spells it ("3.1", "3.1.1", "5"), or as users type it
    /// unquoted: the numbers 3.1 and 5, and 4, the protocol level byte MQTT 3.1.1 sends in its CONNECT.
    func protocolVersion(_ value: JSONValue, _ path: JSONPath) -> MQTTProtocolVersion? {
        switch value {
        case .integer(4): return .v3_1_1
        case .integer(5): return .v5
        case .real(let number) where number == 3.1: return .v3_1
        case .real(let number) where number == 5: return .v5
        case .string("4"): return .v3_1_1
        case .string(let text):
            if let version = MQTTProtocolVersion(scenarioName: text) { return version }
        default: break
        }
        let names = MQTTProtocolVersion.allCases.map { "\"\($0.scenarioName)\"" }.joined(separator: ", ")
        var message = "expected one of \(names) (or the number 3.1, 4 or 5), got \(value.kindDescription)"
        if case .integer(3) = value {
            // The one-liners' -V 3 is emqtt-bench's 3.1 (protocol level 3), but a scenario is read by people who
            // may mean "MQTT 3", i.e. 3.1.1: name both rather than guess.
            message += "; 3 is ambiguous: \"3.1\" (protocol level 3, what the one-liners' -V 3 means) or \"3.1.1\" (level 4)?"
        } else if case .string(let text) = value, let suggestion = closestMatch(to: text, among: MQTTProtocolVersion.allCases.map(\.scenarioName)) {
            message += "; did you mean '\(suggestion)'?"
        }
        error(path, message)
        return nil
    }

    func bool(_ value: JSONValue, _ path: JSONPath) -> Bool? {
        guard case .bool(let flag) = value else {
            expected("true or false", path, got: value)
            return nil
        }
        return flag
    }

    func integer(_ value: JSONValue, _ path: JSONPath, in range: ClosedRange<Int64>, what: String) -> Int? {
        guard case .integer(let number) = value, range.contains(number) else {
            expected(what, path, got: value)
            return nil
        }
        return Int(number)
    }

    /// A finite number > 0 (rates).
    func positiveNumber(_ value: JSONValue, _ path: JSONPath, what: String = "a number greater than 0") -> Double? {
        guard let number = value.numberValue, number.isFinite, number > 0 else {
            expected(what, path, got: value)
            return nil
        }
        return number
    }

    func duration(_ value: JSONValue, _ path: JSONPath, allowZero: Bool = true) -> TimeSpan? {
        guard let text = text(of: value, path) else {
            expected("a duration such as \"250ms\", \"30s\" or \"5m\"", path, got: value)
            return nil
        }
        switch TimeSpan.parse(text) {
        case .failure(let failure):
            error(path, "expected a duration such as \"250ms\", \"30s\" or \"5m\", got \(value.kindDescription) (\(failure.message))")
            return nil
        case .success(let span):
            if !allowZero, span.nanoseconds == 0 {
                error(path, "expected a duration greater than 0, got \(value.kindDescription)")
                return nil
            }
            return span
        }
    }

    /// A fraction from 0 to 1, written as a number (`0.2`) or a percentage string (`"20%"`).
    func fraction(_ value: JSONValue, _ path: JSONPath) -> Double? {
        let what = "a fraction from 0 to 1 or a percentage such as \"20%\""
        var number: Double?
        switch value {
        case .integer, .real: number = value.numberValue
        case .string(let text) where text.hasSuffix("%"):
            number = Double(text.dropLast()).map { $0 / 100 }
        default: break
        }
        guard let number, number.isFinite, number >= 0, number <= 1 else {
            expected(what, path, got: value)
            return nil
        }
        return number
    }

    func qos(_ value: JSONValue, _ path: JSONPath) -> MQTTQoS? {
        guard case .integer(let number) = value, let level = UInt8(exactly: number).flatMap(MQTTQoS.init(rawValue:)) else {
            expected("a QoS of 0, 1 or 2", path, got: value)
            return nil
        }
        return level
    }

    func choice<T>(_ value: JSONValue, _ path: JSONPath, _ options: [(String, T)]) -> T? {
        let names = options.map { "\"\($0.0)\"" }.joined(separator: ", ")
        guard let text = text(of: value, path) else {
            expected("one of \(names)", path, got: value)
            return nil
        }
        if let match = options.first(where: { $0.0 == text }) { return match.1 }
        var message = "expected one of \(names), got \(value.kindDescription)"
        if let suggestion = closestMatch(to: text, among: options.map(\.0)) { message += "; did you mean '\(suggestion)'?" }
        error(path, message)
        return nil
    }

    func array(_ value: JSONValue, _ path: JSONPath, what: String = "an array") -> [(JSONValue, JSONPath)]? {
        guard case .array(let elements) = value else {
            expected(what, path, got: value)
            return nil
        }
        return elements.enumerated().map { ($0.element, path.appending(index: $0.offset)) }
    }

    func pattern(_ value: JSONValue, _ path: JSONPath, allowed: Set<NamePlaceholder>) -> NamePattern? {
        guard let text = nonEmptyString(value, path) else { return nil }
        switch NamePattern.parse(text, allowed: allowed) {
        case .success(let pattern): return pattern
        case .failure(let failure):
            error(path, failure.message, characterOffset: failure.offset)
            return nil
        }
    }

    /// A topic name to publish to: no wildcards (MQTT 5.0 §4.7.3).
    func topicName(_ value: JSONValue, _ path: JSONPath, allowed: Set<NamePlaceholder>) -> NamePattern? {
        guard let pattern = pattern(value, path, allowed: allowed) else { return nil }
        if let offset = Array(pattern.source).firstIndex(where: { $0 == "+" || $0 == "#" }) {
            error(path, "a topic to publish to cannot contain the wildcards + or #", characterOffset: offset)
            return nil
        }
        return pattern
    }

    /// A topic filter: `+` fills a whole level, `#` only as the last level (MQTT 5.0 §4.7.1).
    func topicFilter(_ value: JSONValue, _ path: JSONPath, allowed: Set<NamePlaceholder>) -> NamePattern? {
        guard let pattern = pattern(value, path, allowed: allowed) else { return nil }
        let levels = pattern.source.split(separator: "/", omittingEmptySubsequences: false)
        var offset = 0
        for (position, level) in levels.enumerated() {
            if level.contains("#"), level != "#" || position != levels.count - 1 {
                error(path, "'#' must be a whole level and the last one", characterOffset: offset + (level.firstIndex(of: "#").map { level.distance(from: level.startIndex, to: $0) } ?? 0))
                return nil
            }
            if level.contains("+"), level != "+" {
                error(path, "'+' must fill a whole level", characterOffset: offset + (level.firstIndex(of: "+").map { level.distance(from: level.startIndex, to: $0) } ?? 0))
                return nil
            }
            offset += level.count + 1
        }
        return pattern
    }

    /// Replaces `${NAME}` with the environment's value; `$${` writes a literal `${`.
    func substituteEnvironment(_ text: String, _ path: JSONPath) -> String? {
        var output = ""
        let characters = Array(text)
        var index = 0
        var failed = false
        while index < characters.count {
            if characters[index] == "$", index + 2 < characters.count, characters[index + 1] == "$", characters[index + 2] == "{" {
                output += "${"
                index += 3
                continue
            }
            if characters[index] == "$", index + 1 < characters.count, characters[index + 1] == "{" {
                guard let close = characters[(index + 2)...].firstIndex(of: "}") else {
                    error(path, "unclosed '${' (write '$${' for a literal '${')", characterOffset: index)
                    return nil
                }
                let name = String(characters[(index + 2)..<close])
                if let resolved = environment[name] {
                    output += resolved
                } else {
                    error(path, "environment variable '\(name)' is not set", characterOffset: index)
                    failed = true
                }
                index = close + 1
                continue
            }
            output.append(characters[index])
            index += 1
        }
        return failed ? nil : output
    }
}
