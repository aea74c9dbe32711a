import Testing
@testable import FleetJSON

@Suite("Writing JSON for reports")
struct JSONWriterTests {
    let sample: JSONValue = .object([
        JSONMember("name", .string("quick \"start\"\n")),
        JSONMember("count", .integer(3)),
        JSONMember("ratio", .real(0.25)),
        JSONMember("whole", .real(2)),
        JSONMember("flags", .array([.bool(true), .null])),
        JSONMember("empty", .object([])),
        JSONMember("none", .array([])),
        JSONMember("nested", .object([JSONMember("é", .string("\u{01}\t/"))])),
    ])

    @Test("pretty output uses two spaces and keeps insertion order")
    func pretty() {
        let expected = """
            {
              "name": "quick \\"start\\"\\n",
              "count": 3,
              "ratio": 0.25,
              "whole": 2,
              "flags": [
                true,
                null
              ],
              "empty": {},
              "none": [],
              "nested": {
                "é": "\\u0001\\t/"
              }
            }

            """
        #expect(JSONWriter.string(from: sample) == expected)
    }

    @Test("compact output has no whitespace")
    func compact() {
        #expect(JSONWriter.string(from: sample, style: .compact)
            == #"{"name":"quick \"start\"\n","count":3,"ratio":0.25,"whole":2,"flags":[true,null],"empty":{},"none":[],"nested":{"é":"\u0001\t/"}}"#)
    }

    @Test("reals print without spurious digits and non-finite values become null", arguments: [
        (0.1, "0.1"), (1e-7, "1e-07"), (-3.0, "-3"), (1e300, "1e+300"), (Double.nan, "null"), (Double.infinity, "null"),
    ])
    func reals(value: Double, expected: String) {
        #expect(JSONWriter.formatReal(value) == expected)
    }

    @Test("written JSON parses back to the same value, except whole reals which come back as integers")
    func roundTrip() throws {
        let text = JSONWriter.string(from: sample)
        guard case .object(var members) = sample else { return }
        members[3].value = .integer(2)
        #expect(try JSONDocument.parse(text: text, file: "t").root == .object(members))
    }
}
