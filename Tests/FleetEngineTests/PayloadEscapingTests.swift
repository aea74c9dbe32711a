import FleetPayload
import Testing
@testable import FleetEngine

typealias PayloadTemplate = FleetEngine.PayloadTemplate

/// Generated values inside JSON strings, escaped by the engine's renderer as RFC 8259 §7 requires, byte for byte.
@Suite("Payload escaping inside JSON strings")
struct PayloadEscapingTests {
    /// `{"<key>":"<text>"}` compiled as the scenario layer compiles a JSON template's string member.
    static func jsonTemplate(_ key: String, _ text: String) throws -> FleetPayload.PayloadTemplate {
        var builder = FleetPayload.PayloadTemplate.Builder()
        builder.literal("{\"\(key)\":\"")
        if let error = builder.appendTemplateString(text, inJSONString: true) { throw error }
        builder.literal("\"}")
        return FleetPayload.PayloadTemplate(segments: builder.finish(), isJSON: true)
    }

    /// Every distinct rendering over 200 seeds.
    static func renderings(_ template: PayloadTemplate, clientID: String = "car-7") -> Set<String> {
        var seen = Set<String>()
        let context = PayloadContext(clientID: Array(clientID.utf8), clientIndex: 7, sequence: 41, timestampMilliseconds: 0)
        var buffer: [UInt8] = []
        for seed in 0..<200 as Range<UInt64> {
            var random = SeededRandom(seed: seed)
            buffer.removeAll(keepingCapacity: true)
            template.render(into: &buffer, context: context, random: &random)
            seen.insert(String(decoding: buffer, as: UTF8.self))
        }
        return seen
    }

    @Test("the issue's template: a quote and a backslash in choice options are escaped")
    func quoteAndBackslash() throws {
        // The scenario file's `{"note": "say {choice:\"hi\"|back\\slash}"}`.
        let template = PayloadTemplate(try Self.jsonTemplate("note", #"say {choice:"hi"|back\slash}"#))
        #expect(Self.renderings(template) == [#"{"note":"say \"hi\""}"#, #"{"note":"say back\\slash"}"#])
    }

    @Test("tab, newline and other control characters in generated values", arguments: [
        ("{choice:a\tb}", #"{"v":"a\tb"}"#),
        ("{choice:line\nbreak}", #"{"v":"line\nbreak"}"#),
        ("{choice:cr\r}", #"{"v":"cr\r"}"#),
        ("{choice:\u{08}\u{0C}}", #"{"v":"\b\f"}"#),
        ("{choice:nul\u{00}one\u{01}us\u{1F}}", #"{"v":"nul\u0000one\u0001us\u001f"}"#),
        ("{choice:del\u{7F}é}", "{\"v\":\"del\u{7F}é\"}"),
        ("tab\there {choice:x}", #"{"v":"tab\there x"}"#),
    ])
    func controlCharacters(text: String, expected: String) throws {
        let template = PayloadTemplate(try Self.jsonTemplate("v", text))
        #expect(Self.renderings(template) == [expected])
    }

    @Test("client ids and fleet names are escaped inside JSON strings and written as they are elsewhere")
    func clientAndFleet() throws {
        let template = PayloadTemplate(try Self.jsonTemplate("id", "{fleet}/{client_id}"), fleet: #"f"q"#)
        #expect(Self.renderings(template, clientID: "car\"7\\x\t") == [#"{"id":"f\"q/car\"7\\x\t"}"#])
        let text = PayloadTemplate(try FleetPayload.PayloadTemplate.compileText("{fleet}/{client_id}").get(), fleet: #"f"q"#)
        #expect(Self.renderings(text, clientID: "car\"7") == [#"f"q/car"7"#])
    }

    @Test("the engine's raw text form escapes generators inside JSON strings, not outside")
    func rawForm() throws {
        let template = try PayloadTemplate(#"{"d":"{choice:x"y}","n":{rand:5..5},"e":"a\"b {client_id}"}"#)
        #expect(Self.renderings(template, clientID: #"c"1"#) == [#"{"d":"x\"y","n":5,"e":"a\"b c\"1"}"#])
        let plain = try PayloadTemplate(#"say {choice:"hi"}"#)
        #expect(Self.renderings(plain) == [#"say "hi""#])
    }

    @Test("the text header goes after the object's brace, and the rendering stays valid JSON")
    func withHeader() throws {
        let template = PayloadTemplate(try Self.jsonTemplate("note", #"{choice:"hi"}"#))
        #expect(template.headerForm == .text)
        var buffer: [UInt8] = []
        var random = SeededRandom(seed: 1)
        let context = PayloadContext(clientID: [], clientIndex: 0, sequence: 3, timestampMilliseconds: 0)
        let header = EndToEndHeader(streamID: 5, sequence: 3, intendedTime: 1_000)
        template.render(into: &buffer, context: context, random: &random, header: header)
        let text = String(decoding: buffer, as: UTF8.self)
        #expect(text.hasPrefix(#"{"_fb":""#))
        #expect(text.hasSuffix(#","note":"\"hi\""}"#))
    }
}
