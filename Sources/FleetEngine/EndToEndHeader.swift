/// The header publishers put at the start of each payload and subscribers read back, to measure end-to-end
/// latency from the intended and the actual send time, to count per stream messages received, lost,
/// duplicated and reordered, and to tell this run's messages from anyone else's.
///
/// Times are monotonic-clock readings (ns). That works because publishers and subscribers of one run share a
/// clock: one process, or the segments of a run (`--segment K/N`) on one machine, since Linux's CLOCK_MONOTONIC
/// is system-wide. Across machines the monotonic clocks are unrelated: such a setup would need wall-clock
/// timestamps and an aligned clock (PTP/NTP offset) instead. The run id already is shared by
/// every process of one run (`--run-id`), so messages of another run on the same broker are never counted.
///
/// Version 2 (written), both forms fixed-size and written without allocating (see docs/report-format.md):
/// - binary (40 bytes) at the start of binary payloads:
///   `FB 02 00 00 | stream id (u32 BE) | sequence (u64 BE) | intended time (u64 BE) | run id (u64 BE) |
///   actual send time (u64 BE)`. 0xFB never occurs in UTF-8 text, and the version and zero reserved bytes make
///   a foreign binary payload very unlikely to pass. A binary payload is never shorter than the header, so the
///   actual send time is in every message.
/// - text, for JSON payloads, as the object's first member so the JSON stays valid:
///   `{"_fb":"02<8 hex stream><16 hex sequence><16 hex intended><16 hex run id><16 hex sent>", ...}`
///   (lowercase hex, fixed width). Readers look only at the payload's first bytes.
///
/// Version 1 (24-byte binary, 50-byte text field: no run id, no send time) is still read, so a payload a
/// release before run ids retained on a broker is recognised; it reads with run id 0, which no run uses, so it
/// counts as another run's message.
public struct EndToEndHeader: Sendable, Equatable, Hashable {
    /// The run that published the message; never 0 in version 2 (0 marks a version 1 header).
    public var runID: UInt64
    public var streamID: UInt32
    public var sequence: UInt64
    /// Monotonic ns at which the message should have been sent.
    public var intendedTime: UInt64
    /// Monotonic ns at which the message was handed to the connection (its intended time in version 1).
    public var sentTime: UInt64
    /// The version the header was read with (written headers are always `version`).
    public var readVersion: UInt8

    public init(streamID: UInt32, sequence: UInt64, intendedTime: UInt64, runID: UInt64 = 0, sentTime: UInt64? = nil) {
        self.runID = runID
        self.streamID = streamID
        self.sequence = sequence
        self.intendedTime = intendedTime
        self.sentTime = sentTime ?? intendedTime
        readVersion = Self.version
    }

    public static let binarySize = 40
    public static let magic: UInt8 = 0xFB
    public static let version: UInt8 = 2
    /// `"_fb":"` + 2 version digits + 72 hex digits + `"`, without the comma that separates it from the next member.
    public static let textFieldSize = 82
    static let textKey: [UInt8] = Array(#""_fb":""#.utf8)
    /// Sizes of the version 1 forms, still read.
    static let binarySizeVersion1 = 24
    static let textFieldSizeVersion1 = 50
}

public enum EndToEndHeaderError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooShort(needed: Int, got: Int)
    /// The payload does not start with a fleetbench header (foreign payload).
    case notAHeader
    case unsupportedVersion(UInt8)
    case reservedBytesNotZero
    case badHexDigit(offset: Int)

    public var description: String {
        switch self {
        case let .tooShort(needed, got): "payload too short for an end-to-end header: \(got) bytes, need \(needed)"
        case .notAHeader: "payload does not start with a fleetbench end-to-end header"
        case let .unsupportedVersion(version): "unsupported end-to-end header version \(version)"
        case .reservedBytesNotZero: "end-to-end header reserved bytes are not zero"
        case let .badHexDigit(offset): "end-to-end text header has a bad hex digit at byte offset \(offset)"
        }
    }
}

// MARK: Binary form

extension EndToEndHeader {
    /// Writes the 40-byte binary form at the start of `buffer`; returns the bytes written, or 0 if it is too small.
    @discardableResult
    public func writeBinary(to buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard buffer.count >= Self.binarySize else { return 0 }
        buffer[0] = Self.magic
        buffer[1] = Self.version
        buffer[2] = 0
        buffer[3] = 0
        buffer.storeBytes(of: streamID.bigEndian, toByteOffset: 4, as: UInt32.self)
        buffer.storeBytes(of: sequence.bigEndian, toByteOffset: 8, as: UInt64.self)
        buffer.storeBytes(of: intendedTime.bigEndian, toByteOffset: 16, as: UInt64.self)
        buffer.storeBytes(of: runID.bigEndian, toByteOffset: 24, as: UInt64.self)
        buffer.storeBytes(of: sentTime.bigEndian, toByteOffset: 32, as: UInt64.self)
        return Self.binarySize
    }

    /// Appends the binary form (no allocation once the array has the capacity).
    public func appendBinary(to bytes: inout [UInt8]) {
        bytes.append(Self.magic)
        bytes.append(Self.version)
        bytes.append(0)
        bytes.append(0)
        appendBigEndian(UInt64(streamID), byteCount: 4, to: &bytes)
        appendBigEndian(sequence, byteCount: 8, to: &bytes)
        appendBigEndian(intendedTime, byteCount: 8, to: &bytes)
        appendBigEndian(runID, byteCount: 8, to: &bytes)
        appendBigEndian(sentTime, byteCount: 8, to: &bytes)
    }

    /// Reads the binary form (version 2, or version 1) from the start of a payload.
    public static func readBinary(from payload: UnsafeRawBufferPointer) throws(EndToEndHeaderError) -> EndToEndHeader {
        guard payload.count >= 1, payload[0] == magic else {
            if payload.isEmpty { throw .tooShort(needed: binarySize, got: 0) }
            throw .notAHeader
        }
        guard payload.count >= 2 else { throw .tooShort(needed: binarySize, got: payload.count) }
        let found = payload[1]
        guard found == version || found == 1 else { throw .unsupportedVersion(found) }
        let needed = found == version ? binarySize : binarySizeVersion1
        guard payload.count >= needed else { throw .tooShort(needed: needed, got: payload.count) }
        guard payload[2] == 0, payload[3] == 0 else { throw .reservedBytesNotZero }
        let intended = UInt64(bigEndian: payload.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        var header = EndToEndHeader(
            streamID: UInt32(bigEndian: payload.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
            sequence: UInt64(bigEndian: payload.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            intendedTime: intended)
        header.readVersion = found
        if found == version {
            header.runID = UInt64(bigEndian: payload.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            header.sentTime = UInt64(bigEndian: payload.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
        }
        return header
    }

    public static func readBinary(from payload: [UInt8]) throws(EndToEndHeaderError) -> EndToEndHeader {
        try withUnsafeRawBuffer(payload) { buffer throws(EndToEndHeaderError) in try readBinary(from: buffer) }
    }
}

// MARK: Text form

extension EndToEndHeader {
    /// Appends `"_fb":"02…"` (plus `,` when another member follows). Place it right after the object's `{`.
    public func appendTextField(to bytes: inout [UInt8], trailingComma: Bool) {
        for byte in Self.textKey { bytes.append(byte) }
        appendHex(UInt64(Self.version), digits: 2, to: &bytes)
        appendHex(UInt64(streamID), digits: 8, to: &bytes)
        appendHex(sequence, digits: 16, to: &bytes)
        appendHex(intendedTime, digits: 16, to: &bytes)
        appendHex(runID, digits: 16, to: &bytes)
        appendHex(sentTime, digits: 16, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        if trailingComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// Reads the text form from the start of a JSON payload: optional whitespace, `{`, optional whitespace,
    /// then the `"_fb"` member. Only those first bytes are examined.
    public static func readText(from payload: UnsafeRawBufferPointer) throws(EndToEndHeaderError) -> EndToEndHeader {
        var offset = skipWhitespace(payload, from: 0)
        guard offset < payload.count else { throw .tooShort(needed: offset + 1 + textFieldSize, got: payload.count) }
        guard payload[offset] == UInt8(ascii: "{") else { throw .notAHeader }
        offset = skipWhitespace(payload, from: offset + 1)
        // Compare the key over the bytes present first, so a foreign short payload is "not a header".
        for (index, byte) in textKey.enumerated() where offset + index < payload.count {
            if payload[offset + index] != byte { throw .notAHeader }
        }
        let versionAt = offset + textKey.count
        guard payload.count >= versionAt + 2 else { throw .tooShort(needed: offset + textFieldSize, got: payload.count) }
        let parsedVersion = try parseHex(payload, at: versionAt, digits: 2)
        guard parsedVersion == UInt64(version) || parsedVersion == 1 else {
            throw .unsupportedVersion(UInt8(truncatingIfNeeded: parsedVersion))
        }
        let needed = offset + (parsedVersion == 1 ? textFieldSizeVersion1 : textFieldSize)
        guard payload.count >= needed else { throw .tooShort(needed: needed, got: payload.count) }
        let stream = try parseHex(payload, at: versionAt + 2, digits: 8)
        let sequence = try parseHex(payload, at: versionAt + 10, digits: 16)
        let time = try parseHex(payload, at: versionAt + 26, digits: 16)
        var header = EndToEndHeader(streamID: UInt32(truncatingIfNeeded: stream), sequence: sequence, intendedTime: time)
        header.readVersion = UInt8(parsedVersion)
        if parsedVersion == UInt64(version) {
            header.runID = try parseHex(payload, at: versionAt + 42, digits: 16)
            header.sentTime = try parseHex(payload, at: versionAt + 58, digits: 16)
        }
        guard payload[needed - 1] == UInt8(ascii: "\"") else { throw .notAHeader }
        return header
    }

    public static func readText(from payload: [UInt8]) throws(EndToEndHeaderError) -> EndToEndHeader {
        try withUnsafeRawBuffer(payload) { buffer throws(EndToEndHeaderError) in try readText(from: buffer) }
    }

    /// Reads whichever form the payload starts with (binary magic, else JSON text).
    public static func read(from payload: UnsafeRawBufferPointer) throws(EndToEndHeaderError) -> EndToEndHeader {
        if let first = payload.first, first == magic { return try readBinary(from: payload) }
        return try readText(from: payload)
    }

    public static func read(from payload: [UInt8]) throws(EndToEndHeaderError) -> EndToEndHeader {
        try withUnsafeRawBuffer(payload) { buffer throws(EndToEndHeaderError) in try read(from: buffer) }
    }
}

// MARK: Helpers

@inline(__always)
private func withUnsafeRawBuffer<Result>(
    _ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(EndToEndHeaderError) -> Result
) throws(EndToEndHeaderError) -> Result {
    // withUnsafeBytes rethrows untyped errors; carry the typed error out through a Result.
    let outcome: Swift.Result<Result, EndToEndHeaderError> = bytes.withUnsafeBytes { buffer in
        do throws(EndToEndHeaderError) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    return try outcome.get()
}

@inline(__always)
private func appendBigEndian(_ value: UInt64, byteCount: Int, to bytes: inout [UInt8]) {
    var shift = (byteCount - 1) * 8
    while shift >= 0 {
        bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        shift -= 8
    }
}

private let hexDigits: StaticString = "0123456789abcdef"

/// Appends `digits` (at most 16) lowercase hex digits of `value`, formed in stack memory and copied once.
@inline(__always)
func appendHex(_ value: UInt64, digits: Int, to bytes: inout [UInt8]) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { scratch in
        var remaining = value
        var index = digits
        while index > 0 {
            index -= 1
            scratch[index] = hexDigits.utf8Start[Int(remaining & 0xF)]
            remaining >>= 4
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[0..<digits]))
    }
}

@inline(__always)
private func skipWhitespace(_ payload: UnsafeRawBufferPointer, from start: Int) -> Int {
    var offset = start
    while offset < payload.count {
        switch payload[offset] {
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): offset += 1
        default: return offset
        }
    }
    return offset
}

private func parseHex(_ payload: UnsafeRawBufferPointer, at start: Int, digits: Int) throws(EndToEndHeaderError) -> UInt64 {
    var value: UInt64 = 0
    for offset in start..<(start + digits) {
        let byte = payload[offset]
        let nibble: UInt8
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
        default: throw .badHexDigit(offset: offset)
        }
        value = value << 4 | UInt64(nibble)
    }
    return value
}
