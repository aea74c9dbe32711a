import FleetJSON

/// A value generated per message in a payload template.
public enum PayloadGenerator: Equatable, Hashable, Sendable {
    case clientID
    case index
    case fleet
    /// The stream's per-client sequence number, from 0.
    case sequence
    /// Wall-clock milliseconds since the Unix epoch at the intended send time.
    case timestampMilliseconds
    /// A uniform random integer in the closed range.
    case random(ClosedRange<Int64>)
    /// One of the texts, uniformly.
    case choice([String])
    /// A random RFC 9562 version 4 UUID.
    case uuid

    /// Whether the value is a number (so a JSON template writes it unquoted when it is alone in its string).
    public var isNumeric: Bool {
        switch self {
        case .index, .sequence, .timestampMilliseconds, .random: return true
        default: return false
        }
    }
}

/// A payload compiled into literal bytes and generator slots, so the engine can render a message by appending
/// slices (no parsing per message). Generators: `{client_id}`, `{i}`, `{fleet}`, `{seq}`, `{ts_ms}`,
/// `{rand:LOW..HIGH}`, `{choice:a|b|c}`, `{uuid}`.
///
/// In a JSON template, a string that is exactly one numeric generator (`"{rand:0..180}"`) becomes a JSON number;
/// generators inside longer strings are written into the string (escaped when `inJSONString`).
public struct PayloadTemplate: Equatable, Hashable, Sendable {
    public enum Segment: Equatable, Hashable, Sendable {
        case literal([UInt8])
        case generator(PayloadGenerator, inJSONString: Bool)
    }

    public var segments: [Segment]
    /// Whether the rendered payload is a JSON document (so the end-to-end header must keep it valid JSON).
    public var isJSON: Bool

    /// Compiles a text template.
    static func compileText(_ text: String) -> Result<PayloadTemplate, PatternError> {
        var builder = Builder()
        if let error = builder.appendTemplateString(text, inJSONString: false) { return .failure(error) }
        return .success(PayloadTemplate(segments: builder.finish(), isJSON: false))
    }

    /// Compiles a JSON template; errors name the JSON path of the string that holds the bad generator.
    static func compileJSON(_ value: JSONValue, path: JSONPath) -> (PayloadTemplate?, (JSONPath, PatternError)?) {
        var builder = Builder()
        if let failure = builder.appendJSON(value, path: path) { return (nil, failure) }
        return (PayloadTemplate(segments: builder.finish(), isJSON: true), nil)
    }

    /// Size in bytes of the literal parts (the generated parts vary).
    public var literalByteCount: Int {
        segments.reduce(0) { total, segment in
            if case .literal(let bytes) = segment { return total + bytes.count }
            return total
        }
    }

    /// Renders one payload (for previews and tests; the engine renders from `segments` itself).
    public func render<Random: RandomNumberGenerator>(
        clientID: String, index: Int, fleet: String, sequence: UInt64, timestampMilliseconds: UInt64,
        using random: inout Random
    ) -> [UInt8] {
        var output: [UInt8] = []
        for segment in segments {
            switch segment {
            case .literal(let bytes): output += bytes
            case .generator(let generator, let inJSONString):
                let text: String
                switch generator {
                case .clientID: text = clientID
                case .index: text = String(index)
                case .fleet: text = fleet
                case .sequence: text = String(sequence)
                case .timestampMilliseconds: text = String(timestampMilliseconds)
                case .random(let range): text = String(Int64.random(in: range, using: &random))
                case .choice(let options): text = options.randomElement(using: &random) ?? ""
                case .uuid: text = Self.uuidString(using: &random)
                }
                if inJSONString {
                    output += Array(JSONWriter.quoted(text).utf8.dropFirst().dropLast())
                } else {
                    output += Array(text.utf8)
                }
            }
        }
        return output
    }

    static func uuidString<Random: RandomNumberGenerator>(using random: inout Random) -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40  // version 4
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 9562 variant
        let hex = bytes.map { byte -> String in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
    }

    struct Builder {
        var segments: [Segment] = []
        var pending: [UInt8] = []

        mutating func literal(_ text: String) { pending += Array(text.utf8) }

        mutating func generator(_ generator: PayloadGenerator, inJSONString: Bool) {
            if !pending.isEmpty {
                segments.append(.literal(pending))
                pending = []
            }
            segments.append(.generator(generator, inJSONString: inJSONString))
        }

        mutating func finish() -> [Segment] {
            if !pending.isEmpty { segments.append(.literal(pending)) }
            return segments
        }

        mutating func appendJSON(_ value: JSONValue, path: JSONPath) -> (JSONPath, PatternError)? {
            switch value {
            case .object(let members):
                literal("{")
                for (offset, member) in members.enumerated() {
                    if offset > 0 { literal(",") }
                    literal(JSONWriter.quoted(member.key) + ":")
                    if let failure = appendJSON(member.value, path: path.appending(member.key)) { return failure }
                }
                literal("}")
            case .array(let elements):
                literal("[")
                for (offset, element) in elements.enumerated() {
                    if offset > 0 { literal(",") }
                    if let failure = appendJSON(element, path: path.appending(index: offset)) { return failure }
                }
                literal("]")
            case .string(let text):
                // A lone numeric generator becomes a bare JSON number.
                if text.hasPrefix("{"), text.hasSuffix("}"), !text.hasPrefix("{{"),
                    text.dropFirst().firstIndex(of: "{") == nil,
                    case .success(let alone) = PayloadTemplate.Builder.parseGenerator(String(text.dropFirst().dropLast()), offset: 0),
                    alone.isNumeric
                {
                    generator(alone, inJSONString: false)
                    return nil
                }
                literal("\"")
                if let error = appendTemplateString(text, inJSONString: true) { return (path, error) }
                literal("\"")
            default:
                literal(JSONWriter.string(from: value, style: .compact))
            }
            return nil
        }

        /// Appends literal text and `{generator}` slots; in a JSON string, literal parts are escaped.
        mutating func appendTemplateString(_ text: String, inJSONString: Bool) -> PatternError? {
            let characters = Array(text)
            var literalText = ""
            func flush() {
                guard !literalText.isEmpty else { return }
                literal(inJSONString ? String(JSONWriter.quoted(literalText).dropFirst().dropLast()) : literalText)
                literalText = ""
            }
            var index = 0
            while index < characters.count {
                let character = characters[index]
                if (character == "{" || character == "}"), index + 1 < characters.count, characters[index + 1] == character {
                    literalText.append(character)
                    index += 2
                    continue
                }
                if character == "}" {
                    return PatternError(offset: index, message: "unmatched '}' (write '}}' for a literal brace)")
                }
                guard character == "{" else {
                    literalText.append(character)
                    index += 1
                    continue
                }
                guard let close = characters[(index + 1)...].firstIndex(of: "}") else {
                    return PatternError(offset: index, message: "unclosed '{' (write '{{' for a literal brace)")
                }
                switch Self.parseGenerator(String(characters[(index + 1)..<close]), offset: index) {
                case .failure(let error): return error
                case .success(let parsed):
                    flush()
                    generator(parsed, inJSONString: inJSONString)
                }
                index = close + 1
            }
            flush()
            return nil
        }

        static let generatorNames = ["client_id", "i", "fleet", "seq", "ts_ms", "rand", "choice", "uuid"]

        static func parseGenerator(_ inside: String, offset: Int) -> Result<PayloadGenerator, PatternError> {
            let parts = inside.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let argument = parts.count == 2 ? String(parts[1]) : nil
            switch (name, argument) {
            case ("client_id", nil): return .success(.clientID)
            case ("i", nil): return .success(.index)
            case ("fleet", nil): return .success(.fleet)
            case ("seq", nil): return .success(.sequence)
            case ("ts_ms", nil): return .success(.timestampMilliseconds)
            case ("uuid", nil): return .success(.uuid)
            case ("rand", let argument?):
                let bounds = argument.split(separator: ".", omittingEmptySubsequences: true)
                guard argument.contains(".."), bounds.count == 2, let low = Int64(bounds[0]), let high = Int64(bounds[1]) else {
                    return .failure(PatternError(offset: offset, message: "invalid '{rand:\(argument)}'; expected {rand:LOW..HIGH} with integers"))
                }
                guard low <= high else {
                    return .failure(PatternError(offset: offset, message: "invalid '{rand:\(argument)}'; LOW must not exceed HIGH"))
                }
                return .success(.random(low...high))
            case ("choice", let argument?):
                let options = argument.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                guard options.count >= 1, !options.contains(where: \.isEmpty) else {
                    return .failure(PatternError(offset: offset, message: "invalid '{choice:\(argument)}'; expected {choice:a|b|c} with non-empty options"))
                }
                return .success(.choice(options))
            default:
                if generatorNames.contains(name) {
                    let form = name == "rand" ? "{rand:LOW..HIGH}" : name == "choice" ? "{choice:a|b|c}" : "{\(name)}"
                    return .failure(PatternError(offset: offset, message: "invalid '{\(inside)}'; expected \(form)"))
                }
                var message = "unknown generator '{\(name)}'"
                if let suggestion = closestMatch(to: name, among: generatorNames) {
                    message += "; did you mean '{\(suggestion)}'?"
                } else {
                    message += "; expected one of: {client_id}, {i}, {fleet}, {seq}, {ts_ms}, {rand:LOW..HIGH}, {choice:a|b|c}, {uuid}"
                }
                return .failure(PatternError(offset: offset, message: message))
            }
        }
    }
}
