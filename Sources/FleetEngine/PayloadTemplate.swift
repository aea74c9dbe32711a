import FleetPayload
import FleetVehicle

/// A payload template laid out for rendering: compiled by FleetPayload (the one compiler, shared with the scenario
/// layer), flattened here into one literal buffer and slots, rendered per message into a reusable buffer without
/// allocating.
///
/// Generated values inside a JSON string are escaped (RFC 8259): choice options and the fleet name once, here;
/// client ids when rendered. Numbers and UUIDs never need it.
public struct PayloadTemplate: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(start: Int, end: Int)
        /// The client id; `escaped` inside a JSON string.
        case clientID(escaped: Bool)
        case clientIndex
        case sequence
        case timestampMilliseconds
        case randomInteger(low: Int64, high: Int64)
        /// A decimal as a scaled integer: value / 10^fractionDigits.
        case randomDecimal(low: Int64, high: Int64, fractionDigits: Int)
        /// Options are `choiceRanges[first..<first + count]`, stored already escaped where they need it.
        case choice(first: Int, count: Int)
        case uuid
        /// A field of the client's vehicle, from the sample in the context (`PayloadContext.vehicle`).
        case vehicle(VehicleField)
    }

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

    /// Some slot prints a vehicle field: the renderer must put the vehicle's sample in the context.
    public let usesVehicle: Bool

    /// Compiles the engine's raw text form (see `FleetPayload.PayloadTemplate.compileRaw`): braces need no
    /// escaping in JSON, `{` followed by a lowercase letter or `_` opens a generator, `{{` is a literal `{`.
    public init(_ template: String) throws(PayloadTemplateError) {
        self.init(try FleetPayload.PayloadTemplate.compileRaw(template))
    }

    /// Lays out a compiled template; `fleet` is written in where `{fleet}` is (it is fixed per fleet).
    public init(_ template: FleetPayload.PayloadTemplate, fleet: String = "") {
        var literal: [UInt8] = []
        var segments: [Segment] = []
        var choices: [Range<Int>] = []
        var pendingStart = 0  // start in `literal` of the literal run not yet closed into a segment
        func closeLiteral() {
            if literal.count > pendingStart { segments.append(.literal(start: pendingStart, end: literal.count)) }
            pendingStart = literal.count
        }
        func appendText(_ bytes: [UInt8], escaped: Bool) {
            if escaped { JSONStringEscaping.append(bytes, to: &literal) } else { literal += bytes }
        }
        for segment in template.segments {
            guard case .generator(let generator, let inJSONString) = segment else {
                if case .literal(let bytes) = segment { literal += bytes }
                continue
            }
            switch generator {
            case .fleet:
                appendText(Array(fleet.utf8), escaped: inJSONString)
                continue
            case .choice(let options):
                closeLiteral()
                let first = choices.count
                for option in options {
                    let start = literal.count
                    appendText(Array(option.utf8), escaped: inJSONString)
                    choices.append(start..<literal.count)
                }
                pendingStart = literal.count  // the options were stored, not rendered
                segments.append(.choice(first: first, count: options.count))
                continue
            default:
                break
            }
            closeLiteral()
            switch generator {
            case .clientID: segments.append(.clientID(escaped: inJSONString))
            case .index: segments.append(.clientIndex)
            case .sequence: segments.append(.sequence)
            case .timestampMilliseconds: segments.append(.timestampMilliseconds)
            case .random(let range): segments.append(.randomInteger(low: range.lowerBound, high: range.upperBound))
            case .randomDecimal(let range, let digits):
                segments.append(.randomDecimal(low: range.lowerBound, high: range.upperBound, fractionDigits: digits))
            case .uuid: segments.append(.uuid)
            case .vehicle(let name):
                // FleetPayload accepts only FleetVehicle's field names, so the lookup cannot fail.
                segments.append(.vehicle(VehicleField(name: name) ?? .latitude))
            case .fleet, .choice: break
            }
        }
        closeLiteral()

        // A JSON object: the text header goes right after its opening brace.
        var headerSegment: Int?
        var needsComma = true
        if template.isJSON, case .literal(let start, let end)? = segments.first {
            var brace = start
            while brace < end, Self.isWhitespace(literal[brace]) { brace += 1 }
            if brace < end, literal[brace] == UInt8(ascii: "{") {
                var after = brace + 1
                while after < end, Self.isWhitespace(literal[after]) { after += 1 }
                needsComma = !(after < end && literal[after] == UInt8(ascii: "}"))
                segments[0] = .literal(start: start, end: brace + 1)
                if brace + 1 < end { segments.insert(.literal(start: brace + 1, end: end), at: 1) }
                headerSegment = 1
            }
        }
        literalBytes = literal
        usesVehicle = segments.contains { if case .vehicle = $0 { return true } else { return false } }
        self.segments = segments
        choiceRanges = choices
        textHeaderSegment = headerSegment
        textHeaderNeedsComma = needsComma
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
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
            case .clientID(let escaped):
                if escaped {
                    context.clientID.withUnsafeBufferPointer { JSONStringEscaping.append($0, to: &buffer) }
                } else {
                    appendBytes(context.clientID, 0..<context.clientID.count, to: &buffer)
                }
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
            case .vehicle(let field):
                field.append(context.vehicle, to: &buffer)
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
    /// The client's vehicle at the message's intended time (only read when the template `usesVehicle`).
    public var vehicle: VehicleSample

    public init(clientID: [UInt8], clientIndex: Int, sequence: UInt64, timestampMilliseconds: UInt64,
                vehicle: VehicleSample = .none) {
        self.clientID = clientID
        self.clientIndex = clientIndex
        self.sequence = sequence
        self.timestampMilliseconds = timestampMilliseconds
        self.vehicle = vehicle
    }
}

/// A template that does not compile (FleetPayload's error, the one compiler's).
public typealias PayloadTemplateError = FleetPayload.PayloadTemplateError

// MARK: Byte helpers

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
