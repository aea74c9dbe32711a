import Testing
@testable import FleetEngine

@Suite("EndToEndHeader")
struct EndToEndHeaderTests {
    let header = EndToEndHeader(streamID: 0x0102_0304, sequence: 0x1122_3344_5566_7788, intendedTime: 0x0A0B_0C0D_0E0F_1011,
                                runID: 0xA1A2_A3A4_A5A6_A7A8, sentTime: 0x0A0B_0C0D_0E0F_2022)

    let binary: [UInt8] = [
        0xFB, 0x02, 0x00, 0x00,  // magic, version, reserved
        0x01, 0x02, 0x03, 0x04,  // stream id, big-endian
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // sequence
        0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11,  // intended time (monotonic ns)
        0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8,  // run id
        0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x20, 0x22,  // actual send time (monotonic ns)
    ]

    let textField = #""_fb":"02"# + "01020304" + "1122334455667788" + "0a0b0c0d0e0f1011" + "a1a2a3a4a5a6a7a8"
        + "0a0b0c0d0e0f2022" + #"""#

    /// A version 1 header (before run ids): 24 bytes, no run id, no send time.
    let binaryVersion1: [UInt8] = [
        0xFB, 0x01, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04,
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
        0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11,
    ]
    let textFieldVersion1 = #""_fb":"01"# + "01020304" + "1122334455667788" + "0a0b0c0d0e0f1011" + #"""#

    @Test("the binary form has the exact 40 bytes, written to raw memory or appended")
    func binaryBytes() {
        var appended: [UInt8] = [0x99]
        header.appendBinary(to: &appended)
        #expect(appended == [0x99] + binary)
        var raw = [UInt8](repeating: 0xEE, count: 42)
        let written = raw.withUnsafeMutableBytes { header.writeBinary(to: $0) }
        #expect(written == 40)
        #expect(raw == binary + [0xEE, 0xEE])
        var small = [UInt8](repeating: 0, count: 39)
        #expect(small.withUnsafeMutableBytes { header.writeBinary(to: $0) } == 0)
    }

    @Test("binary round trips, extreme values included, with a payload after the header", arguments: [
        EndToEndHeader(streamID: 0, sequence: 0, intendedTime: 0, runID: 1, sentTime: 0),
        EndToEndHeader(streamID: .max, sequence: .max, intendedTime: .max, runID: .max, sentTime: .max),
        EndToEndHeader(streamID: 7, sequence: 1 << 40, intendedTime: 123_456_789_012, runID: 42, sentTime: 123_456_999_000),
    ])
    func binaryRoundTrip(value: EndToEndHeader) throws {
        var bytes: [UInt8] = []
        value.appendBinary(to: &bytes)
        bytes += Array("payload".utf8)
        #expect(try EndToEndHeader.readBinary(from: bytes) == value)
        #expect(try EndToEndHeader.read(from: bytes) == value)
    }

    @Test("a version 1 binary header still reads: run id 0 (no run), send time = intended time")
    func binaryVersion1Reads() throws {
        let read = try EndToEndHeader.read(from: binaryVersion1 + [0, 0, 0])
        #expect(read.readVersion == 1)
        #expect(read.runID == 0)
        #expect(read.streamID == 0x0102_0304)
        #expect(read.sequence == 0x1122_3344_5566_7788)
        #expect(read.intendedTime == 0x0A0B_0C0D_0E0F_1011)
        #expect(read.sentTime == 0x0A0B_0C0D_0E0F_1011)
    }

    @Test("foreign and short binary payloads are rejected with the reason", arguments: [
        ([], EndToEndHeaderError.tooShort(needed: 40, got: 0)),
        ([0xFB], .tooShort(needed: 40, got: 1)),
        ([0xFB, 0x02, 0x00], .tooShort(needed: 40, got: 3)),
        ([0xFB, 0x02, 0x00, 0x00] + [UInt8](repeating: 0, count: 35), .tooShort(needed: 40, got: 39)),
        ([0xFB, 0x01, 0x00], .tooShort(needed: 24, got: 3)),
        ([0x7B, 0x22] + [UInt8](repeating: 0, count: 40), .notAHeader),
        ([0xFB, 0x03, 0x00, 0x00] + [UInt8](repeating: 0, count: 36), .unsupportedVersion(3)),
        ([0xFB, 0x02, 0x00, 0x10] + [UInt8](repeating: 0, count: 36), .reservedBytesNotZero),
    ] as [([UInt8], EndToEndHeaderError)])
    func binaryRejects(payload: [UInt8], error: EndToEndHeaderError) {
        #expect(throws: error) { try EndToEndHeader.readBinary(from: payload) }
    }

    @Test("the text field has the exact fixed-width bytes, with or without the separating comma")
    func textBytes() {
        var bytes: [UInt8] = []
        header.appendTextField(to: &bytes, trailingComma: false)
        #expect(String(decoding: bytes, as: UTF8.self) == textField)
        #expect(bytes.count == EndToEndHeader.textFieldSize)
        bytes.removeAll()
        header.appendTextField(to: &bytes, trailingComma: true)
        #expect(String(decoding: bytes, as: UTF8.self) == textField + ",")
    }

    @Test("the text form reads back from the start of a JSON object, leading whitespace allowed", arguments: [
        "{FIELD,\"speed\":12}",
        "  \n{ FIELD }",
        "{FIELD}",
    ])
    func textRoundTrip(template: String) throws {
        let payload = Array(template.replacing("FIELD", with: textField).utf8)
        #expect(try EndToEndHeader.readText(from: payload) == header)
        #expect(try EndToEndHeader.read(from: payload) == header)
    }

    @Test("a version 1 text field still reads, as a header without run id")
    func textVersion1Reads() throws {
        let read = try EndToEndHeader.read(from: Array(("{" + textFieldVersion1 + ",\"a\":1}").utf8))
        #expect(read.readVersion == 1)
        #expect(read.runID == 0)
        #expect(read.sequence == 0x1122_3344_5566_7788)
        #expect(read.sentTime == read.intendedTime)
    }

    @Test("foreign, short and damaged text payloads are rejected with the reason", arguments: [
        ("", EndToEndHeaderError.tooShort(needed: 83, got: 0)),
        ("[1,2]", .notAHeader),
        ("{\"speed\":12,\"_fb\":\"02\"}", .notAHeader),
        ("{\"_f", .tooShort(needed: 83, got: 4)),
        ("{\"_fb\":\"0201020304", .tooShort(needed: 83, got: 18)),
        ("{\"_fb\":\"0101020304", .tooShort(needed: 51, got: 18)),
        ("{\"_fb\":\"0301020304112233445566778800a0b0c0d0e0f1011\"}", .unsupportedVersion(3)),
        ("{\"_fb\":\"01010203041122334455667788x0a0b0c0d0e0f1011\"}", .badHexDigit(offset: 34)),
        ("{\"_fb\":\"01010203041122334455667788a0a0b0c0d0e0f10112}", .notAHeader),
    ])
    func textRejects(payload: String, error: EndToEndHeaderError) {
        #expect(throws: error) { try EndToEndHeader.readText(from: Array(payload.utf8)) }
    }

    @Test("uppercase hex is accepted when reading")
    func uppercase() throws {
        let payload = Array(("{" + textField.uppercased().replacing("_FB", with: "_fb") + "}").utf8)
        #expect(try EndToEndHeader.readText(from: payload) == header)
    }

    @Test("errors describe themselves")
    func descriptions() {
        #expect(EndToEndHeaderError.tooShort(needed: 40, got: 3).description
            == "payload too short for an end-to-end header: 3 bytes, need 40")
        #expect(EndToEndHeaderError.badHexDigit(offset: 34).description
            == "end-to-end text header has a bad hex digit at byte offset 34")
    }
}
