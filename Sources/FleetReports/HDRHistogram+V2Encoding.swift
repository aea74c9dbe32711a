import FleetMetrics
import Foundation

/// HdrHistogram's V2 encodings (the format of `HISTFAAAA...` strings in interval logs), as the reference Java,
/// C and Python implementations write and read them.
///
/// Uncompressed V2 (all integers big-endian):
///   cookie (Int32, 0x1c849313: base 0x1c849303 | word-size bits 0x10), payload length in bytes (Int32),
///   normalizing index offset (Int32), significant digits (Int32), lowest discernible value (Int64),
///   highest trackable value (Int64), integer-to-double conversion ratio (Float64, 1.0 for integer histograms),
///   then the counts from index 0 up to the index of the maximum value, each a ZigZag LEB128-64b9B varint;
///   a run of n > 1 zero counts is written once as -n.
/// Compressed V2: cookie (Int32, 0x1c849314), length of what follows (Int32), then the uncompressed encoding as
///   one zlib stream.
public enum HistogramV2 {
    public static let encodingCookieBase: UInt32 = 0x1c84_9303
    public static let compressedCookieBase: UInt32 = 0x1c84_9304
    /// The word-size nibble the reference sets in V2 cookies (bits 4...7; V2 counts are varints).
    static let wordSizeBits: UInt32 = 0x10
    static let headerLength = 40
    /// A ZigZag LEB128-64b9B value takes at most 9 bytes.
    static let maximumVarintLength = 9

    static func cookieBase(_ cookie: UInt32) -> UInt32 { cookie & ~0xf0 }
}

public enum HistogramEncodingError: Error, Equatable, Sendable, CustomStringConvertible {
    case compression(String)
    public var description: String {
        switch self {
        case .compression(let message): return "histogram compression failed: \(message)"
        }
    }
}

public enum HistogramDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooShort(needed: Int, got: Int)
    case badCookie(UInt32, expected: UInt32)
    case lengthMismatch(declared: Int, available: Int)
    case unsupported(String)
    case corrupt(String)
    case invalidBase64

    public var description: String {
        switch self {
        case .tooShort(let needed, let got): return "encoded histogram too short: need \(needed) bytes, got \(got)"
        case .badCookie(let cookie, let expected):
            return "not a V2 HdrHistogram encoding: cookie 0x\(String(cookie, radix: 16)), expected 0x\(String(expected, radix: 16))"
        case .lengthMismatch(let declared, let available):
            return "encoded histogram declares \(declared) bytes but \(available) follow"
        case .unsupported(let message): return "unsupported histogram encoding: \(message)"
        case .corrupt(let message): return "corrupt histogram encoding: \(message)"
        case .invalidBase64: return "encoded histogram is not valid base64"
        }
    }
}

extension HDRHistogram {
    // MARK: Encoding

    /// The uncompressed V2 encoding.
    public func encodedV2() -> [UInt8] {
        let countsLimit = relevantCountsLength
        var bytes: [UInt8] = []
        bytes.reserveCapacity(HistogramV2.headerLength + countsLimit * 2)
        bytes.appendBigEndian(HistogramV2.encodingCookieBase | HistogramV2.wordSizeBits)
        bytes.appendBigEndian(UInt32(0))  // payload length, filled in below
        bytes.appendBigEndian(UInt32(0))  // normalizing index offset: never shifted here
        bytes.appendBigEndian(UInt32(significantDigits))
        bytes.appendBigEndian(lowestDiscernibleValue)
        bytes.appendBigEndian(highestTrackableValue)
        bytes.appendBigEndian((1.0 as Double).bitPattern)  // integer histogram: ratio 1.0
        var index = 0
        while index < countsLimit {
            let count = self.count(atIndex: index)
            index += 1
            if count == 0 {
                var zeros: Int64 = 1
                while index < countsLimit, self.count(atIndex: index) == 0 {
                    zeros += 1
                    index += 1
                }
                bytes.appendZigZagVarint(zeros > 1 ? -zeros : 0)
            } else {
                // Counts above Int64.max cannot be represented by the format; they saturate.
                bytes.appendZigZagVarint(Int64(clamping: count))
            }
        }
        let payloadLength = UInt32(bytes.count - HistogramV2.headerLength)
        bytes.replaceSubrange(4..<8, with: payloadLength.bigEndianBytes)
        return bytes
    }

    /// The compressed V2 encoding. Level 9 is what HdrHistogram's Java log writer uses.
    public func encodedCompressedV2(level: Int32 = 9) throws(HistogramEncodingError) -> [UInt8] {
        let compressed = try Zlib.compress(encodedV2(), level: level)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + compressed.count)
        bytes.appendBigEndian(HistogramV2.compressedCookieBase | HistogramV2.wordSizeBits)
        bytes.appendBigEndian(UInt32(compressed.count))
        bytes.append(contentsOf: compressed)
        return bytes
    }

    /// The compressed V2 encoding in base64: the payload column of an interval log.
    public func encodedBase64() throws(HistogramEncodingError) -> String {
        Data(try encodedCompressedV2()).base64EncodedString()
    }

    // MARK: Decoding

    /// Decodes an uncompressed V2 encoding.
    public init(decodingV2 bytes: some Collection<UInt8>) throws(HistogramDecodingError) {
        let bytes = Array(bytes)
        guard bytes.count >= HistogramV2.headerLength else {
            throw .tooShort(needed: HistogramV2.headerLength, got: bytes.count)
        }
        let cookie = bytes.bigEndianUInt32(at: 0)
        guard HistogramV2.cookieBase(cookie) == HistogramV2.encodingCookieBase else {
            throw .badCookie(cookie, expected: HistogramV2.encodingCookieBase | HistogramV2.wordSizeBits)
        }
        let payloadLength = Int(bytes.bigEndianUInt32(at: 4))
        let normalizingIndexOffset = bytes.bigEndianUInt32(at: 8)
        let digits = bytes.bigEndianUInt32(at: 12)
        let lowest = bytes.bigEndianUInt64(at: 16)
        let highest = bytes.bigEndianUInt64(at: 24)
        // The conversion ratio (offset 32) only matters to DoubleHistogram; integer counts are unaffected.
        guard payloadLength <= bytes.count - HistogramV2.headerLength else {
            throw .lengthMismatch(declared: payloadLength, available: bytes.count - HistogramV2.headerLength)
        }
        guard normalizingIndexOffset == 0 else {
            throw .unsupported("normalizing index offset \(normalizingIndexOffset) (shifted histograms)")
        }
        guard digits <= 5 else { throw .corrupt("significant digits \(digits)") }
        var histogram: HDRHistogram
        do {
            histogram = try HDRHistogram(
                lowestDiscernibleValue: lowest, highestTrackableValue: highest, significantDigits: Int(digits))
        } catch {
            throw .corrupt(error.description)
        }
        var position = HistogramV2.headerLength
        let end = HistogramV2.headerLength + payloadLength
        var index = 0
        while position < end {
            let value = try bytes.readZigZagVarint(at: &position, end: end)
            if value < 0 {
                let zeros = value == Int64.min ? Int64.max : -value
                guard zeros <= Int64(histogram.countsLength - index) else {
                    throw .corrupt("a run of \(zeros) zero counts at index \(index) passes the end of the counts")
                }
                index += Int(zeros)
            } else {
                guard index < histogram.countsLength else {
                    throw .corrupt("count at index \(index) beyond the \(histogram.countsLength) counts of the layout")
                }
                histogram.addCount(UInt64(value), atIndex: index)
                index += 1
            }
        }
        self = histogram
    }

    /// Decodes a compressed V2 encoding.
    public init(decodingCompressedV2 bytes: some Collection<UInt8>) throws(HistogramDecodingError) {
        let bytes = Array(bytes)
        guard bytes.count >= 8 else { throw .tooShort(needed: 8, got: bytes.count) }
        let cookie = bytes.bigEndianUInt32(at: 0)
        guard HistogramV2.cookieBase(cookie) == HistogramV2.compressedCookieBase else {
            throw .badCookie(cookie, expected: HistogramV2.compressedCookieBase | HistogramV2.wordSizeBits)
        }
        let length = Int(bytes.bigEndianUInt32(at: 4))
        guard length == bytes.count - 8 else { throw .lengthMismatch(declared: length, available: bytes.count - 8) }
        let limit = HistogramV2.headerLength + HDRHistogram.maximumCountsLength * HistogramV2.maximumVarintLength
        let inflated = try Zlib.decompress(bytes[8...], limit: limit)
        try self.init(decodingV2: inflated)
    }

    /// Decodes the base64 of a compressed V2 encoding (surrounding whitespace ignored).
    public init(decodingBase64 text: some StringProtocol) throws(HistogramDecodingError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed) else { throw .invalidBase64 }
        try self.init(decodingCompressedV2: [UInt8](data))
    }
}

// MARK: Byte helpers

extension FixedWidthInteger {
    var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: self.bigEndian) { Array($0) }
    }
}

extension [UInt8] {
    mutating func appendBigEndian(_ value: some FixedWidthInteger) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    func bigEndianUInt32(at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for byte in self[offset..<offset + 4] { value = value << 8 | UInt32(byte) }
        return value
    }

    func bigEndianUInt64(at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for byte in self[offset..<offset + 8] { value = value << 8 | UInt64(byte) }
        return value
    }

    /// ZigZag, then LEB128 in at most 9 bytes: bytes 1...8 carry 7 bits each with a continuation bit, a 9th byte
    /// carries the last 8 bits whole (the reference's "LEB128-64b9B" variant, not standard 10-byte LEB128).
    mutating func appendZigZagVarint(_ signed: Int64) {
        var value = UInt64(bitPattern: (signed << 1) ^ (signed >> 63))
        for _ in 0..<8 {
            if value >> 7 == 0 {
                append(UInt8(value))
                return
            }
            append(UInt8(value & 0x7f) | 0x80)
            value >>= 7
        }
        append(UInt8(truncatingIfNeeded: value))
    }

    func readZigZagVarint(at position: inout Int, end: Int) throws(HistogramDecodingError) -> Int64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        for byteNumber in 0..<9 {
            guard position < end else { throw .corrupt("varint cut short at byte \(position)") }
            let byte = self[position]
            position += 1
            if byteNumber == 8 {
                value |= UInt64(byte) << 56
                break
            }
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}
