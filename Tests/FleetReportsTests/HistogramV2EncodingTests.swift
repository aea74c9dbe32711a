import FleetMetrics
import Foundation
import Testing
@testable import FleetReports
import FleetTestSupport

/// The data of `single_histogram.base64`, rebuilt from the same formula as make_fixtures.py.
func fixtureSingleHistogramValues() -> [(UInt64, UInt64)] {
    var pairs: [(UInt64, UInt64)] = (1...10_000).map { (UInt64($0), 1) }
    pairs += (11..<5_000).map { (UInt64($0 * 997), UInt64($0 % 7 + 1)) }
    pairs += [(0, 3), (1_000_000, 5), (59_999_999, 2), (3_600_000_000, 1), (123_456, 32)]
    return pairs
}

func histogram(of pairs: [(UInt64, UInt64)]) -> HDRHistogram {
    var histogram = HDRHistogram()
    for (value, count) in pairs { histogram.record(value, count: count) }
    return histogram
}

@Suite("HdrHistogram V2 encoding")
struct HistogramV2EncodingTests {
    @Test("the reference's encoded histogram decodes to exactly its counts and figures")
    func decodeReferenceFixture() throws {
        let decoded = try HDRHistogram(decodingBase64: try Fixtures.text("single_histogram.base64"))
        let expected = try #require(try Fixtures.json("single_histogram.expected.json") as? [String: Any])
        let counts = try #require(expected["counts"] as? [String: Int])
        #expect(decoded.totalCount == 30_000)
        #expect(decoded.totalCount == expected["total_count"] as? UInt64)
        #expect(decoded.min == expected["min"] as? UInt64)
        #expect(decoded.max == expected["max"] as? UInt64)
        // Java accumulates the mean in doubles, Python in exact integers: equal to 1e-12 relative.
        let expectedMean = try #require(expected["mean"] as? Double)
        #expect(abs(decoded.mean - expectedMean) <= expectedMean * 1e-12)
        var decodedCounts: [String: Int] = [:]
        for index in 0..<decoded.countsLength where decoded.count(atIndex: index) > 0 {
            decodedCounts[String(index)] = Int(decoded.count(atIndex: index))
        }
        #expect(decodedCounts == counts)
        let percentiles = try #require(expected["percentiles"] as? [String: UInt64])
        for (percentile, value) in percentiles {
            #expect(decoded.valueAtPercentile(Double(percentile)!) == value, "p\(percentile)")
        }
    }

    @Test("the fixture equals the same data recorded here, count by count and byte by byte before compression")
    func fixtureMatchesLocalRecording() throws {
        let local = histogram(of: fixtureSingleHistogramValues())
        let base64 = try Fixtures.text("single_histogram.base64").trimmingCharacters(in: .whitespacesAndNewlines)
        let decoded = try HDRHistogram(decodingBase64: base64)
        #expect(decoded.totalCount == local.totalCount)
        for index in 0..<local.countsLength where decoded.count(atIndex: index) != local.count(atIndex: index) {
            Issue.record("count at index \(index) differs")
            break
        }
        // The reference's uncompressed V2 bytes (inside its zlib stream) equal ours: the 40-byte header exactly, and
        // the counts stream token by token, except that the C and Python encoders write a lone zero count as a run
        // of one (-1) where Java writes 0; both decode the same.
        let compressed = [UInt8](try #require(Data(base64Encoded: base64)))
        let referenceBytes = try Zlib.decompress(compressed[8...], limit: 1 << 24)
        let ours = local.encodedV2()
        #expect(referenceBytes.prefix(4) == ours.prefix(4))
        #expect(referenceBytes[8..<40] == ours[8..<40])
        let referenceTokens = try varintTokens(referenceBytes).map { $0 == -1 ? 0 : $0 }
        let ourTokens = try varintTokens(ours)
        #expect(referenceTokens.count == ourTokens.count)
        #expect(referenceTokens == ourTokens)
    }

    func varintTokens(_ encoding: [UInt8]) throws -> [Int64] {
        var tokens: [Int64] = []
        var position = 40
        while position < encoding.count { tokens.append(try encoding.readZigZagVarint(at: &position, end: encoding.count)) }
        return tokens
    }

    @Test("header fields are written as the reference writes them")
    func header() {
        var histogram = HDRHistogram()
        histogram.record(1)
        histogram.record(2)
        histogram.record(5, count: 300)
        let bytes = histogram.encodedV2()
        #expect(
            Array(bytes[0..<40]) == [
                0x1c, 0x84, 0x93, 0x13,  // cookie: V2 base 0x1c849303 | word-size bits 0x10
                0x00, 0x00, 0x00, 0x06,  // payload length: 6 bytes of counts
                0x00, 0x00, 0x00, 0x00,  // normalizing index offset
                0x00, 0x00, 0x00, 0x03,  // significant digits
                0, 0, 0, 0, 0, 0, 0, 1,  // lowest discernible value
                0, 0, 0, 0, 0xd6, 0x93, 0xa4, 0x00,  // highest trackable value 3,600,000,000
                0x3f, 0xf0, 0, 0, 0, 0, 0, 0,  // integer-to-double conversion ratio 1.0
            ])
        // Counts of indices 0...5: 0 (a single zero stays 0), 1, 1, then two zeros as -2, then 300.
        #expect(Array(bytes[40...]) == [0x00, 0x02, 0x02, 0x03, 0xd8, 0x04])
    }

    static let varintCases: [(Int64, [UInt8])] = [
            (0, [0x00]),
            (-1, [0x01]),
            (1, [0x02]),
            (63, [0x7e]),
            (64, [0x80, 0x01]),
            (-65, [0x81, 0x01]),
            (300, [0xd8, 0x04]),
            (Int64(1) << 55, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            (Int64.max, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            (Int64.min, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        ]

    @Test("counts are ZigZag LEB128-64b9B varints", arguments: varintCases)
    func varints(value: Int64, bytes: [UInt8]) throws {
        var encoded: [UInt8] = []
        encoded.appendZigZagVarint(value)
        #expect(encoded == bytes)
        var position = 0
        #expect(try encoded.readZigZagVarint(at: &position, end: encoded.count) == value)
        #expect(position == bytes.count)
    }

    @Test("encode then decode gives back every count, compressed or not")
    func roundTrip() throws {
        var generator = TestRandom(seed: 99)
        var histogram = HDRHistogram()
        for _ in 0..<20_000 { histogram.record(generator.next() % 100_000_000) }
        histogram.record(0, count: 4)
        histogram.record(3_600_000_000, count: UInt64(1) << 60)  // needs the 9-byte varint
        for decoded in [
            try HDRHistogram(decodingV2: histogram.encodedV2()),
            try HDRHistogram(decodingCompressedV2: try histogram.encodedCompressedV2()),
            try HDRHistogram(decodingBase64: try histogram.encodedBase64()),
        ] {
            #expect(decoded.totalCount == histogram.totalCount)
            #expect(decoded.recordedValues() == histogram.recordedValues())
            #expect(decoded.min == histogram.min)
            #expect(decoded.max == histogram.max)
        }
    }

    @Test("an empty histogram round-trips")
    func empty() throws {
        let decoded = try HDRHistogram(decodingBase64: try HDRHistogram().encodedBase64())
        #expect(decoded.totalCount == 0)
        #expect(decoded.max == 0)
    }

    @Test("a histogram with other parameters (nanoseconds, as Java tools record) decodes with its own layout")
    func otherLayout() throws {
        var nanoseconds = try HDRHistogram(
            lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000, significantDigits: 2)
        nanoseconds.record(123_456_789, count: 3)
        let decoded = try HDRHistogram(decodingBase64: try nanoseconds.encodedBase64())
        #expect(decoded.highestTrackableValue == 3_600_000_000_000)
        #expect(decoded.significantDigits == 2)
        #expect(decoded.countsLength == nanoseconds.countsLength)
        #expect(decoded.recordedValues() == nanoseconds.recordedValues())
    }

    @Test("bad input is refused with a clear error, never a crash")
    func badInput() throws {
        let good = try HDRHistogram().encodedCompressedV2()
        #expect(throws: HistogramDecodingError.tooShort(needed: 8, got: 3)) {
            try HDRHistogram(decodingCompressedV2: [0x1c, 0x84, 0x93])
        }
        #expect(throws: HistogramDecodingError.badCookie(0x1c84_9313, expected: 0x1c84_9314)) {
            try HDRHistogram(decodingCompressedV2: HDRHistogram().encodedV2())
        }
        #expect(throws: HistogramDecodingError.lengthMismatch(declared: good.count - 8, available: good.count - 9)) {
            try HDRHistogram(decodingCompressedV2: good.dropLast())
        }
        #expect(throws: HistogramDecodingError.invalidBase64) { try HDRHistogram(decodingBase64: "HIST!!") }
        var corrupt = good
        corrupt[10] ^= 0xff
        #expect(throws: HistogramDecodingError.self) { try HDRHistogram(decodingCompressedV2: corrupt) }

        var header = HDRHistogram().encodedV2()
        // Payload length larger than the bytes that follow.
        header[7] = 0x20
        #expect(throws: HistogramDecodingError.lengthMismatch(declared: 0x20, available: 1)) {
            try HDRHistogram(decodingV2: header)
        }
        // A count beyond the counts array of the layout.
        var overflow = HDRHistogram().encodedV2().prefix(40).map { $0 }
        overflow.appendZigZagVarint(-23_552)
        overflow.appendZigZagVarint(1)
        overflow.replaceSubrange(4..<8, with: UInt32(overflow.count - 40).bigEndianBytes)
        #expect(
            throws: HistogramDecodingError.corrupt("count at index 23552 beyond the 23552 counts of the layout")
        ) { try HDRHistogram(decodingV2: overflow) }
        // A truncated varint.
        var truncated = HDRHistogram().encodedV2().prefix(40).map { $0 }
        truncated.append(0x80)
        truncated.replaceSubrange(4..<8, with: UInt32(1).bigEndianBytes)
        #expect(throws: HistogramDecodingError.corrupt("varint cut short at byte 41")) {
            try HDRHistogram(decodingV2: truncated)
        }
    }

    @Test("the reference implementation decodes our encoding to the same counts and figures")
    func referenceDecodesOurs() throws {
        var generator = TestRandom(seed: 5)
        var histogram = HDRHistogram()
        for _ in 0..<10_000 { histogram.record(generator.next() % 2_000_000 + 1) }
        histogram.record(0, count: 2)
        histogram.record(3_600_000_000)
        let script = """
            import sys, json
            from hdrh.histogram import HdrHistogram
            h = HdrHistogram.decode(sys.argv[1])
            print(json.dumps({"total": h.get_total_count(), "min": h.get_min_value(), "max": h.get_max_value(),
                "mean": h.get_mean_value(), "p50": h.get_value_at_percentile(50), "p100": h.get_value_at_percentile(100),
                "counts": {str(i): h.get_count_at_index(i) for i in range(h.counts_len) if h.get_count_at_index(i)}}))
            """
        guard let output = ReferenceImplementation.runPython(script, arguments: [try histogram.encodedBase64()])
        else { return }
        let result = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        #expect(result["total"] as? UInt64 == histogram.totalCount)
        #expect(result["min"] as? UInt64 == histogram.min)
        #expect(result["max"] as? UInt64 == histogram.max)
        #expect(result["mean"] as? Double == histogram.mean)
        #expect(result["p100"] as? UInt64 == histogram.valueAtPercentile(100))
        var ours: [String: UInt64] = [:]
        for index in 0..<histogram.countsLength where histogram.count(atIndex: index) > 0 {
            ours[String(index)] = histogram.count(atIndex: index)
        }
        #expect(result["counts"] as? [String: UInt64] == ours)
    }
}

