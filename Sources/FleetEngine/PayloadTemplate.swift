/// A payload template compiled once into segments, rendered per message into a reusable buffer without
/// allocating.
///
/// Generators (written `{name}` or `{name:argument}`):
/// - `{client_id}` the client's id, `{i}` its index, `{seq}` the message sequence number, `{ts_ms}` the
///   timestamp in milliseconds the caller passes (typically wall clock);
/// - `{rand:0..180}` a uniform integer, both ends included (negative bounds allowed); `{rand:0.0..1.0}` a
///   uniform decimal with as many fraction digits as the bounds have (at most 9);
/// - `{choice:a|b|c}` one of the options; `{uuid}` a version 4 UUID; all drawn from the client's generator,
///   so a fixed seed renders fixed bytes.
///
/// Braces: a generator is a `{` directly followed by a lowercase letter or `_`. Every other brace is literal,
/// so JSON templates need no escaping (`{"speed":{rand:0..180}}` works as written); `{{` renders a single `{`
/// for the rare literal `{` followed by a letter (`{{seq}` renders `{seq}`). `}` is always literal, because a
/// `}}` escape would break nested JSON objects.
public struct PayloadTemplate: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(start: Int, end: Int)
        case clientID
        case clientIndex
        case sequence
        case timestampMilliseconds
        case randomInteger(low: Int64, high: Int64)
        /// A decimal as a scaled integer: value / 10^fractionDigits.
        case randomDecimal(low: Int64, high: Int64, fractionDigits: Int)
        /// Options are `choiceRanges[first..<first + count]`.
        case choice(first: Int, count: Int)
        case uuid
    }

    public let source: String
    private let literalBytes: [UInt8]
    let segments: [Segment]
    private let choiceRanges: [Range<Int>]
    /// Segments before this index are rendered before a text header (the object's `{` ends segment index - 1).
    private let textHeaderSegment: Int?
    private let textHeaderNeedsComma: Bool

    /// How an end-to-end header is embedded by `render(…, header:)`.
    public enum HeaderForm: Sendable, Equatable {
        /// `"_fb":"…"` as the first member of the JSON object the template starts with.
        case text
        /// The 24-byte binary header before the rendered template.
        case binary
    }

    public var headerForm: HeaderForm { textHeaderSegment == nil ? .binary : .text }

    public init(_ template: String) throws(PayloadTemplateError) {
        source = template
        let bytes = Array(template.utf8)
        var literal: [UInt8] = []
        var segments: [Segment] = []
        var choices: [Range<Int>] = []
        var headerSegment: Int?
        var needsComma = true

        var pendingStart = 0  // start in `literal` of the literal run not yet closed into a segment
        func closeLiteral() {
            if literal.count > pendingStart { segments.append(.literal(start: pendingStart, end: literal.count)) }
            pendingStart = literal.count
        }

        // A JSON object template: the header goes right after its opening brace.
        var firstSignificant = 0
        while firstSignificant < bytes.count, isWhitespace(bytes[firstSignificant]) { firstSignificant += 1 }
        let objectBrace: Int? =
            firstSignificant < bytes.count && bytes[firstSignificant] == UInt8(ascii: "{")
                && !(firstSignificant + 1 < bytes.count && startsGenerator(bytes[firstSignificant + 1])) ? firstSignificant : nil
        if let objectBrace {
            var after = objectBrace + 1
            while after < bytes.count, isWhitespace(bytes[after]) { after += 1 }
            needsComma = !(after < bytes.count && bytes[after] == UInt8(ascii: "}"))
        }

        var offset = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "{"), offset + 1 < bytes.count {
                let following = bytes[offset + 1]
                if following == UInt8(ascii: "{") {
                    literal.append(byte)
                    offset += 2
                    continue
                }
                if startsGenerator(following) {
                    closeLiteral()
                    let (segment, end) = try Self.parseGenerator(bytes, at: offset, literal: &literal, choices: &choices)
                    pendingStart = literal.count  // choice options were stored, not rendered
                    segments.append(segment)
                    offset = end
                    continue
                }
            }
            literal.append(byte)
            offset += 1
            if offset - 1 == objectBrace {
                closeLiteral()
                headerSegment = segments.count
            }
        }
        closeLiteral()
        literalBytes = literal
        self.segments = segments
        choiceRanges = choices
        textHeaderSegment = headerSegment
        textHeaderNeedsComma = needsComma
    }

    /// Appends the rendered payload to `buffer` (clear it first to reuse it).
    public func render(into buffer: inout [UInt8], context: PayloadContext, random: inout SeededRandom) {
        renderSegments(0..<segments.count, into: &buffer, context: context, random: &random)
    }

    /// Appends the rendered payload with an end-to-end header in `headerForm`.
    public func render(into buffer: inout [UInt8], context: PayloadContext, random: inout SeededRandom,
                       header: EndToEndHeader) {
        guard let split = textHeaderSegment else {
            header.appendBinary(to: &buffer)
            renderSegments(0..<segments.count, into: &buffer, context: context, random: &random)
            return
        }
        renderSegments(0..<split, into: &buffer, context: context, random: &random)
        header.appendTextField(to: &buffer, trailingComma: textHeaderNeedsComma)
        renderSegments(split..<segments.count, into: &buffer, context: context, random: &random)
    }

    private func renderSegments(_ range: Range<Int>, into buffer: inout [UInt8], context: PayloadContext,
                                random: inout SeededRandom) {
        for index in range {
            switch segments[index] {
            case let .literal(start, end):
                appendBytes(literalBytes, start..<end, to: &buffer)
            case .clientID:
                appendBytes(context.clientID, 0..<context.clientID.count, to: &buffer)
            case .clientIndex:
                appendDecimal(Int64(context.clientIndex), to: &buffer)
            case .sequence:
                appendDecimal(context.sequence, to: &buffer)
            case .timestampMilliseconds:
                appendDecimal(context.timestampMilliseconds, to: &buffer)
            case let .randomInteger(low, high):
                appendDecimal(random.nextInt(in: low...high), to: &buffer)
            case let .randomDecimal(low, high, fractionDigits):
                appendScaledDecimal(random.nextInt(in: low...high), fractionDigits: fractionDigits, to: &buffer)
            case let .choice(first, count):
                let option = choiceRanges[first + Int(random.next(below: UInt64(count)))]
                appendBytes(literalBytes, option, to: &buffer)
            case .uuid:
                appendUUID(high: random.next(), low: random.next(), to: &buffer)
            }
        }
    }
}

/// What a template needs to know about the message being rendered.
public struct PayloadContext: Sendable {
    public var clientID: [UInt8]
    public var clientIndex: Int
    public var sequence: UInt64
    public var timestampMilliseconds: UInt64

    public init(clientID: [UInt8], clientIndex: Int, sequence: UInt64, timestampMilliseconds: UInt64) {
        self.clientID = clientID
        self.clientIndex = clientIndex
        self.sequence = sequence
        self.timestampMilliseconds = timestampMilliseconds
    }
}

/// A template that does not compile: what is wrong and where (byte offset of the generator's `{`).
public struct PayloadTemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let message: String

    public var description: String { "payload template: \(message) at byte offset \(offset)" }
}

// MARK: Parsing

extension PayloadTemplate {
    /// Parses `{name}` or `{name:argument}` starting at `start` (the `{`); returns the segment and the offset
    /// after the closing `}`.
    private static func parseGenerator(_ bytes: [UInt8], at start: Int, literal: inout [UInt8],
                                       choices: inout [Range<Int>]) throws(PayloadTemplateError) -> (Segment, Int) {
        var offset = start + 1
        while offset < bytes.count, startsGenerator(bytes[offset]) || isDigit(bytes[offset]) { offset += 1 }
        let name = String(decoding: bytes[(start + 1)..<offset], as: UTF8.self)
        var argument: ArraySlice<UInt8>?
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ":") {
            let argumentStart = offset + 1
            offset = argumentStart
            while offset < bytes.count, bytes[offset] != UInt8(ascii: "}") { offset += 1 }
            argument = bytes[argumentStart..<min(offset, bytes.count)]
        }
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "}") else {
            throw PayloadTemplateError(offset: start, message: "unterminated generator '{\(name)' (missing '}')")
        }
        let end = offset + 1
        func noArgument(_ segment: Segment) throws(PayloadTemplateError) -> (Segment, Int) {
            if argument != nil {
                throw PayloadTemplateError(offset: start, message: "generator '\(name)' takes no argument")
            }
            return (segment, end)
        }
        switch name {
        case "client_id": return try noArgument(.clientID)
        case "i": return try noArgument(.clientIndex)
        case "seq": return try noArgument(.sequence)
        case "ts_ms": return try noArgument(.timestampMilliseconds)
        case "uuid": return try noArgument(.uuid)
        case "rand":
            guard let argument else {
                throw PayloadTemplateError(offset: start, message: "generator 'rand' needs a range such as {rand:0..180}")
            }
            return (try parseRange(argument, at: start), end)
        case "choice":
            guard let argument, !argument.isEmpty else {
                throw PayloadTemplateError(offset: start, message: "generator 'choice' needs options such as {choice:a|b|c}")
            }
            let first = choices.count
            var optionStart = argument.startIndex
            for index in argument.indices where argument[index] == UInt8(ascii: "|") {
                choices.append(storeOption(argument[optionStart..<index], in: &literal))
                optionStart = index + 1
            }
            choices.append(storeOption(argument[optionStart...], in: &literal))
            return (.choice(first: first, count: choices.count - first), end)
        default:
            throw PayloadTemplateError(offset: start, message: "unknown generator '\(name)'")
        }
    }

    private static func storeOption(_ option: ArraySlice<UInt8>, in literal: inout [UInt8]) -> Range<Int> {
        let start = literal.count
        literal.append(contentsOf: option)
        return start..<literal.count
    }

    /// `LOW..HIGH`, both integers or decimals (the larger count of fraction digits wins).
    private static func parseRange(_ argument: ArraySlice<UInt8>, at start: Int) throws(PayloadTemplateError) -> Segment {
        let text = String(decoding: argument, as: UTF8.self)
        let bad = PayloadTemplateError(offset: start, message: "bad range '\(text)' (expected LOW..HIGH such as 0..180 or 0.0..1.0)")
        guard let dots = argument.indices.first(where: { $0 + 1 < argument.endIndex && argument[$0] == UInt8(ascii: ".")
                                                  && argument[$0 + 1] == UInt8(ascii: ".") }) else { throw bad }
        guard let low = parseNumber(argument[argument.startIndex..<dots]),
              let high = parseNumber(argument[(dots + 2)...]) else { throw bad }
        let digits = max(low.fractionDigits, high.fractionDigits)
        guard digits <= 9, let lowScaled = low.scaled(to: digits), let highScaled = high.scaled(to: digits) else { throw bad }
        guard lowScaled <= highScaled else {
            throw PayloadTemplateError(offset: start, message: "range '\(text)' has its low bound above its high bound")
        }
        if digits == 0 { return .randomInteger(low: lowScaled, high: highScaled) }
        return .randomDecimal(low: lowScaled, high: highScaled, fractionDigits: digits)
    }

    private struct ParsedNumber {
        var digits: Int64  // all digits as one integer, sign applied
        var fractionDigits: Int

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

    private static func parseNumber(_ text: ArraySlice<UInt8>) -> ParsedNumber? {
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
            } else if isDigit(byte) {
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
        return ParsedNumber(digits: negative ? -value : value, fractionDigits: fractionDigits)
    }
}

// MARK: Byte helpers

@inline(__always)
private func startsGenerator(_ byte: UInt8) -> Bool {
    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || byte == UInt8(ascii: "_")
}

@inline(__always)
private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

@inline(__always)
private func isWhitespace(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
}

/// Appends a range of `source` with one memcpy (appending an ArraySlice takes a slow generic path).
@inline(__always)
private func appendBytes(_ source: [UInt8], _ range: Range<Int>, to bytes: inout [UInt8]) {
    source.withUnsafeBufferPointer { whole in
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: whole[range]))
    }
}

/// Appends the decimal digits of `value` (zero-padded to `minimumDigits`, at most 20) without allocating:
/// the digits are formed in stack memory and appended with one copy.
@inline(__always)
func appendDecimal(_ value: UInt64, to bytes: inout [UInt8], minimumDigits: Int = 1) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { scratch in
        var index = 20
        var remaining = value
        repeat {
            index -= 1
            scratch[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
            remaining /= 10
        } while remaining > 0
        while 20 - index < min(minimumDigits, 20) {
            index -= 1
            scratch[index] = UInt8(ascii: "0")
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[index..<20]))
    }
}

@inline(__always)
func appendDecimal(_ value: Int64, to bytes: inout [UInt8]) {
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    appendDecimal(value.magnitude, to: &bytes)
}

/// Appends value / 10^fractionDigits with exactly `fractionDigits` digits after the point.
private func appendScaledDecimal(_ value: Int64, fractionDigits: Int, to bytes: inout [UInt8]) {
    var scale: UInt64 = 1
    for _ in 0..<fractionDigits { scale *= 10 }
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    let magnitude = value.magnitude
    appendDecimal(magnitude / scale, to: &bytes)
    bytes.append(UInt8(ascii: "."))
    appendDecimal(magnitude % scale, to: &bytes, minimumDigits: fractionDigits)
}

/// RFC 9562 §5.4 version 4 UUID from 128 random bits: version nibble 4, variant bits 10.
private func appendUUID(high: UInt64, low: UInt64, to bytes: inout [UInt8]) {
    let versioned = (high & ~0xF000) | 0x4000
    let varianted = (low & ~(0xC000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
    appendHex(versioned >> 32, digits: 8, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendHex((versioned >> 16) & 0xFFFF, digits: 4, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendHex(versioned & 0xFFFF, digits: 4, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendHex(varianted >> 48, digits: 4, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendHex(varianted & 0xFFFF_FFFF_FFFF, digits: 12, to: &bytes)
}
