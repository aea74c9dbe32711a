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
    /// A uniform random decimal `value / 10^fractionDigits`, value in the closed range (`{rand:0.0..1.0}`).
    case randomDecimal(ClosedRange<Int64>, fractionDigits: Int)
    /// One of the texts, uniformly.
    case choice([String])
    /// A random RFC 9562 version 4 UUID.
    case uuid
    /// A field of the client's simulated vehicle (`{vehicle.lat}`): its name after `vehicle.`, one of
    /// `vehicleFieldNames`. The vehicle model lives in FleetVehicle; this layer only names the field.
    case vehicle(String)

    /// The fields `{vehicle.NAME}` may name (FleetVehicle's `VehicleField` raw values).
    public static let vehicleFieldNames = ["lat", "lon", "heading", "speed_kmh", "odometer_km", "soc", "ignition",
                                           "charging", "in_tunnel"]

    /// Whether a JSON template writes the value unquoted when it is alone in its string: numbers, and the
    /// vehicle's `true`/`false` fields (JSON booleans).
    public var isBareJSONValue: Bool {
        if case .vehicle = self { return true }
        return isNumeric
    }

    /// Whether the value is a number (so a JSON template writes it unquoted when it is alone in its string).
    public var isNumeric: Bool {
        switch self {
        case .index, .sequence, .timestampMilliseconds, .random, .randomDecimal: return true
        default: return false
        }
    }

    /// Whether a value of this generator can hold a character JSON escapes (`"`, `\`, control characters).
    public var mayNeedJSONEscape: Bool {
        switch self {
        case .clientID, .fleet, .choice: return true
        default: return false
        }
    }
}

/// The one payload template compiler of fleetbench: the scenario layer compiles scenario payloads with it, the
/// engine renders what it compiled (and compiles its own raw text form with it too).
///
/// A template is literal bytes and generator slots. Each slot knows whether it sits inside a JSON string, so
/// whoever renders it escapes the generated value there (RFC 8259: `"`, `\`, control characters); literal text
/// inside JSON strings is escaped once, here. Generators: `{client_id}`, `{i}`, `{fleet}`, `{seq}`, `{ts_ms}`,
/// `{rand:LOW..HIGH}` (integers, or decimals such as `0.0..1.0`), `{choice:a|b|c}`, `{uuid}`.
public struct PayloadTemplate: Equatable, Hashable, Sendable {
    public enum Segment: Equatable, Hashable, Sendable {
        case literal([UInt8])
        case generator(PayloadGenerator, inJSONString: Bool)
    }

    public var segments: [Segment]
    /// Whether the rendered payload is a JSON document (so the end-to-end header must keep it valid JSON).
    public var isJSON: Bool

    public init(segments: [Segment], isJSON: Bool) {
        self.segments = segments
        self.isJSON = isJSON
    }

    /// Compiles a scenario text template: every `{` opens a generator; `{{` and `}}` are literal braces.
    public static func compileText(_ text: String) -> Result<PayloadTemplate, PayloadTemplateError> {
        var builder = Builder()
        if let error = builder.appendTemplateString(text, inJSONString: false) { return .failure(error) }
        return .success(PayloadTemplate(segments: builder.finish(), isJSON: false))
    }

    /// Compiles the engine's raw text form, written for JSON without escaping braces: a `{` directly followed by a
    /// lowercase letter or `_` opens a generator, every other brace is literal (`{"speed":{rand:0..180}}` works as
    /// written) and `{{` is one literal `{`. Text that starts with a JSON object is JSON: generators inside its
    /// strings are escaped when rendered.
    public static func compileRaw(_ text: String) throws(PayloadTemplateError) -> PayloadTemplate {
        let bytes = Array(text.utf8)
        var first = 0
        while first < bytes.count, isJSONWhitespace(bytes[first]) { first += 1 }
        let isJSON = first < bytes.count && bytes[first] == UInt8(ascii: "{")
            && !(first + 1 < bytes.count && startsGenerator(bytes[first + 1]))
        var builder = Builder()
        var inString = false
        var offset = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "{"), offset + 1 < bytes.count {
                let following = bytes[offset + 1]
                if following == UInt8(ascii: "{") {
                    builder.pending.append(byte)
                    offset += 2
                    continue
                }
                if startsGenerator(following) {
                    var close = offset + 1
                    while close < bytes.count, bytes[close] != UInt8(ascii: "}") { close += 1 }
                    guard close < bytes.count else {
                        throw PayloadTemplateError(offset: offset, message: "unclosed '{' (write '{{' for a literal brace)")
                    }
                    let inside = String(decoding: bytes[(offset + 1)..<close], as: UTF8.self)
                    switch Builder.parseGenerator(inside, offset: offset) {
                    case .failure(let error): throw error
                    case .success(let generator): builder.generator(generator, inJSONString: isJSON && inString)
                    }
                    offset = close + 1
                    continue
                }
            }
            builder.pending.append(byte)
            if isJSON {
                if inString && byte == UInt8(ascii: "\\"), offset + 1 < bytes.count {
                    builder.pending.append(bytes[offset + 1])
                    offset += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") { inString.toggle() }
            }
            offset += 1
        }
        return PayloadTemplate(segments: builder.finish(), isJSON: isJSON)
    }

    /// Size in bytes of the literal parts (the generated parts vary).
    public var literalByteCount: Int {
        segments.reduce(0) { total, segment in
            if case .literal(let bytes) = segment { return total + bytes.count }
            return total
        }
    }

    /// Renders one payload for previews and wills (the engine renders from `segments` in its own buffer), escaped
    /// as the engine escapes.
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
                case .randomDecimal(let range, let digits):
                    text = Self.decimalText(Int64.random(in: range, using: &random), fractionDigits: digits)
                case .choice(let options): text = options.randomElement(using: &random) ?? ""
                case .uuid: text = Self.uuidString(using: &random)
                // Previews and wills have no vehicle: a will is rendered once before any run time exists.
                case .vehicle(let field): text = ["ignition", "charging", "in_tunnel"].contains(field) ? "false" : "0"
                }
                if inJSONString {
                    JSONStringEscaping.append(Array(text.utf8), to: &output)
                } else {
                    output += Array(text.utf8)
                }
            }
        }
        return output
    }

    static func decimalText(_ value: Int64, fractionDigits: Int) -> String {
        var scale: UInt64 = 1
        for _ in 0..<fractionDigits { scale *= 10 }
        let fraction = String(value.magnitude % scale)
        return (value < 0 ? "-" : "") + String(value.magnitude / scale) + "."
            + String(repeating: "0", count: fractionDigits - fraction.count) + fraction
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

    /// Collects segments; the scenario layer drives it while walking a JSON template.
    public struct Builder {
        var segments: [Segment] = []
        var pending: [UInt8] = []

        public init() {}

        /// Literal bytes written as they are (JSON punctuation, already-escaped keys).
        public mutating func literal(_ text: String) { pending += Array(text.utf8) }

        public mutating func generator(_ generator: PayloadGenerator, inJSONString: Bool) {
            if !pending.isEmpty {
                segments.append(.literal(pending))
                pending = []
            }
            segments.append(.generator(generator, inJSONString: inJSONString))
        }

        public mutating func finish() -> [Segment] {
            if !pending.isEmpty { segments.append(.literal(pending)) }
            pending = []
            return segments
        }

        /// Appends literal text and `{generator}` slots (`{{` and `}}` are literal braces); in a JSON string,
        /// literal parts are escaped here and generated values marked to be escaped when rendered.
        public mutating func appendTemplateString(_ text: String, inJSONString: Bool) -> PayloadTemplateError? {
            let characters = Array(text)
            var literalText = ""
            func flush() {
                guard !literalText.isEmpty else { return }
                if inJSONString {
                    JSONStringEscaping.append(Array(literalText.utf8), to: &pending)
                } else {
                    pending += Array(literalText.utf8)
                }
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
                    return PayloadTemplateError(offset: index, message: "unmatched '}' (write '}}' for a literal brace)")
                }
                guard character == "{" else {
                    literalText.append(character)
                    index += 1
                    continue
                }
                guard let close = characters[(index + 1)...].firstIndex(of: "}") else {
                    return PayloadTemplateError(offset: index, message: "unclosed '{' (write '{{' for a literal brace)")
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

        public static let generatorNames = ["client_id", "i", "fleet", "seq", "ts_ms", "rand", "choice", "uuid"]
            + PayloadGenerator.vehicleFieldNames.map { "vehicle." + $0 }

        /// A generator from the text between its braces (`rand:0..9`); `offset` is where its `{` is, for errors.
        public static func parseGenerator(_ inside: String, offset: Int) -> Result<PayloadGenerator, PayloadTemplateError> {
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
            case (let vehicle, nil) where vehicle.hasPrefix("vehicle.")
                && PayloadGenerator.vehicleFieldNames.contains(String(vehicle.dropFirst(8))):
                return .success(.vehicle(String(vehicle.dropFirst(8))))
            case ("rand", let argument?):
                return parseRange(argument, offset: offset)
            case ("choice", let argument?):
                let options = argument.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                guard options.count >= 1, !options.contains(where: \.isEmpty) else {
                    return .failure(PayloadTemplateError(offset: offset, message: "invalid '{choice:\(argument)}'; expected {choice:a|b|c} with non-empty options"))
                }
                return .success(.choice(options))
            default:
                if generatorNames.contains(name) {
                    let form = name == "rand" ? "{rand:LOW..HIGH}" : name == "choice" ? "{choice:a|b|c}" : "{\(name)}"
                    return .failure(PayloadTemplateError(offset: offset, message: "invalid '{\(inside)}'; expected \(form)"))
                }
                var message = "unknown generator '{\(name)}'"
                if let suggestion = closestMatch(to: name, among: generatorNames) {
                    message += "; did you mean '{\(suggestion)}'?"
                } else {
                    message += "; expected one of: {client_id}, {i}, {fleet}, {seq}, {ts_ms}, {rand:LOW..HIGH}, {choice:a|b|c}, {uuid}, {vehicle.FIELD} (FIELD: \(PayloadGenerator.vehicleFieldNames.joined(separator: ", ")))"
                }
                return .failure(PayloadTemplateError(offset: offset, message: message))
            }
        }

        /// `LOW..HIGH`, both integers or decimals (the larger count of fraction digits wins, at most 9).
        static func parseRange(_ argument: String, offset: Int) -> Result<PayloadGenerator, PayloadTemplateError> {
            let bad = PayloadTemplateError(
                offset: offset, message: "invalid '{rand:\(argument)}'; expected {rand:LOW..HIGH} with integers or decimals")
            let bytes = Array(argument.utf8)
            guard let dots = bytes.indices.first(where: { $0 + 1 < bytes.count && bytes[$0] == UInt8(ascii: ".")
                                                      && bytes[$0 + 1] == UInt8(ascii: ".") }),
                  let low = ParsedNumber(bytes[..<dots]), let high = ParsedNumber(bytes[(dots + 2)...]) else {
                return .failure(bad)
            }
            let digits = max(low.fractionDigits, high.fractionDigits)
            guard digits <= 9, let lowScaled = low.scaled(to: digits), let highScaled = high.scaled(to: digits) else {
                return .failure(bad)
            }
            guard lowScaled <= highScaled else {
                return .failure(PayloadTemplateError(offset: offset, message: "invalid '{rand:\(argument)}'; LOW must not exceed HIGH"))
            }
            return .success(digits == 0 ? .random(lowScaled...highScaled) : .randomDecimal(lowScaled...highScaled, fractionDigits: digits))
        }
    }
}

/// A decimal number as an integer of all its digits and its count of fraction digits (`-20.5`: -205, 1).
struct ParsedNumber {
    var digits: Int64
    var fractionDigits: Int

    init?(_ text: ArraySlice<UInt8>) {
        var index = text.startIndex
        var negative = false
        if index < text.endIndex, text[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        var value: Int64 = 0
        var sawDigit = false
        var fractionDigits = 0
        var inFraction = false
        while index < text.endIndex {
            let byte = text[index]
            if byte == UInt8(ascii: "."), !inFraction {
                if !sawDigit { return nil }  // ".5": a digit is required before the point
                inFraction = true
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                let (product, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = product.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                if overflow1 || overflow2 { return nil }
                value = sum
                sawDigit = true
                if inFraction { fractionDigits += 1 }
            } else {
                return nil
            }
            index += 1
        }
        guard sawDigit, !(inFraction && fractionDigits == 0) else { return nil }
        digits = negative ? -value : value
        self.fractionDigits = fractionDigits
    }

    func scaled(to target: Int) -> Int64? {
        var value = digits
        for _ in fractionDigits..<target {
            let (product, overflow) = value.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            value = product
        }
        return value
    }
}

/// A template that does not compile: what is wrong and where (offset of the generator's `{` in the text).
public struct PayloadTemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "payload template: \(message) at byte offset \(offset)" }
}

@inline(__always)
func startsGenerator(_ byte: UInt8) -> Bool {
    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || byte == UInt8(ascii: "_")
}

@inline(__always)
func isJSONWhitespace(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
}

/// The closest candidate by edit distance, when it is close enough to be a plausible typo.
public func closestMatch(to word: String, among candidates: [String]) -> String? {
    var best: (candidate: String, distance: Int)? = nil
    for candidate in candidates {
        let distance = editDistance(word.lowercased(), candidate.lowercased())
        if best == nil || distance < best!.distance { best = (candidate, distance) }
    }
    guard let best else { return nil }
    let limit = max(1, min(3, word.count / 3))
    // A distance equal to the word's length means nothing in common: no suggestion.
    return best.distance <= limit && best.distance < word.count ? best.candidate : nil
}

/// Levenshtein distance over characters.
public func editDistance(_ left: String, _ right: String) -> Int {
    let a = Array(left)
    let b = Array(right)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
