import Testing
@testable import FleetEngine

private func render(_ template: PayloadTemplate, seed: UInt64 = 1, sequence: UInt64 = 41,
                    header: EndToEndHeader? = nil) -> String {
    var buffer: [UInt8] = []
    var random = SeededRandom(seed: seed)
    let context = PayloadContext(clientID: Array("car-0042".utf8), clientIndex: 42, sequence: sequence,
                                 timestampMilliseconds: 1_764_000_000_123)
    if let header {
        template.render(into: &buffer, context: context, random: &random, header: header)
    } else {
        template.render(into: &buffer, context: context, random: &random)
    }
    return String(decoding: buffer, as: UTF8.self)
}

/// The same draws the template makes, done by hand, formatted independently with String.
private func hex(_ value: UInt64, _ digits: Int) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: digits - text.count) + text
}

@Suite("PayloadTemplate")
struct PayloadTemplateTests {
    @Test("context generators render the client, index, sequence and timestamp")
    func contextGenerators() throws {
        let template = try PayloadTemplate(#"{"id":"{client_id}","n":{i},"seq":{seq},"t":{ts_ms}}"#)
        #expect(render(template) == #"{"id":"car-0042","n":42,"seq":41,"t":1764000000123}"#)
        #expect(render(template, sequence: 0) == #"{"id":"car-0042","n":42,"seq":0,"t":1764000000123}"#)
    }

    @Test("random generators draw, in template order, from the client's generator")
    func randomGenerators() throws {
        let template = try PayloadTemplate(
            #"{"speed":{rand:0..180},"lvl":{rand:0.0..1.0},"temp":{rand:-20.5..40.25},"dir":"{choice:N|E|S|W}","u":"{uuid}"}"#)
        var random = SeededRandom(seed: 9)
        let speed = random.nextInt(in: 0...180)
        let level = random.nextInt(in: 0...10)
        let temperature = random.nextInt(in: -2050...4025)
        let direction = ["N", "E", "S", "W"][Int(random.next(below: 4))]
        let high = (random.next() & ~0xF000) | 0x4000
        let low = (random.next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        let levelText = level == 10 ? "1.0" : "0.\(level)"
        let sign = temperature < 0 ? "-" : ""
        let magnitude = temperature.magnitude
        let temperatureText = "\(sign)\(magnitude / 100).\(magnitude % 100 < 10 ? "0" : "")\(magnitude % 100)"
        let uuid = "\(hex(high >> 32, 8))-\(hex((high >> 16) & 0xFFFF, 4))-\(hex(high & 0xFFFF, 4))-"
            + "\(hex(low >> 48, 4))-\(hex(low & 0xFFFF_FFFF_FFFF, 12))"
        #expect(render(template, seed: 9)
            == #"{"speed":\#(speed),"lvl":\#(levelText),"temp":\#(temperatureText),"dir":"\#(direction)","u":"\#(uuid)"}"#)
        #expect(uuid.count == 36)
        #expect(Array(uuid)[14] == "4")
        #expect("89ab".contains(Array(uuid)[19]))
    }

    @Test("a fixed seed renders the same bytes every time, another seed different ones")
    func reproducible() throws {
        let template = try PayloadTemplate("{uuid} {rand:0..1000000}")
        #expect(render(template, seed: 5) == render(template, seed: 5))
        #expect(render(template, seed: 5) != render(template, seed: 6))
    }

    @Test("integer and decimal ranges stay within their bounds and reach both ends")
    func rangeBounds() throws {
        let template = try PayloadTemplate("{rand:-2..2} {rand:0.5..0.7}")
        var seen = Set<String>()
        var random = SeededRandom(seed: 3)
        var buffer: [UInt8] = []
        let context = PayloadContext(clientID: [], clientIndex: 0, sequence: 0, timestampMilliseconds: 0)
        for _ in 0..<500 {
            buffer.removeAll(keepingCapacity: true)
            template.render(into: &buffer, context: context, random: &random)
            seen.insert(String(decoding: buffer, as: UTF8.self))
        }
        let integers = Set(seen.map { $0.split(separator: " ")[0] })
        let decimals = Set(seen.map { $0.split(separator: " ")[1] })
        #expect(integers == ["-2", "-1", "0", "1", "2"])
        #expect(decimals == ["0.5", "0.6", "0.7"])
    }

    @Test("plain JSON braces are literal; {{ renders one brace", arguments: [
        (#"{"a":{"b":[1,{}]}}"#, #"{"a":{"b":[1,{}]}}"#),
        ("{{seq} is {seq}", "{seq} is 41"),
        ("}{ {\"x\"}", "}{ {\"x\"}"),
        ("", ""),
        ("{", "{"),
    ])
    func braces(template: String, expected: String) throws {
        #expect(render(try PayloadTemplate(template)) == expected)
    }

    @Test("bad templates are rejected with the generator's byte offset", arguments: [
        // The messages of FleetPayload's generator parser, the one the scenario layer reports too.
        ("{\"a\":{speed}}", "payload template: unknown generator '{speed}'; expected one of: {client_id}, {i}, {fleet}, {seq}, {ts_ms}, {rand:LOW..HIGH}, {choice:a|b|c}, {uuid}, {vehicle.FIELD} (FIELD: lat, lon, heading, speed_kmh, odometer_km, soc, ignition, charging, in_tunnel) at byte offset 5"),
        ("xx{rand:1..", "payload template: unclosed '{' (write '{{' for a literal brace) at byte offset 2"),
        ("{seq", "payload template: unclosed '{' (write '{{' for a literal brace) at byte offset 0"),
        ("{rand}", "payload template: invalid '{rand}'; expected {rand:LOW..HIGH} at byte offset 0"),
        ("{rand:1-5}", "payload template: invalid '{rand:1-5}'; expected {rand:LOW..HIGH} with integers or decimals at byte offset 0"),
        ("{rand:a..5}", "payload template: invalid '{rand:a..5}'; expected {rand:LOW..HIGH} with integers or decimals at byte offset 0"),
        ("{rand:1...5}", "payload template: invalid '{rand:1...5}'; expected {rand:LOW..HIGH} with integers or decimals at byte offset 0"),
        ("{rand:99999999999999999999..1}", "payload template: invalid '{rand:99999999999999999999..1}'; expected {rand:LOW..HIGH} with integers or decimals at byte offset 0"),
        ("ab{rand:9..1}", "payload template: invalid '{rand:9..1}'; LOW must not exceed HIGH at byte offset 2"),
        ("{choice:}", "payload template: invalid '{choice:}'; expected {choice:a|b|c} with non-empty options at byte offset 0"),
        ("{seq:3}", "payload template: invalid '{seq:3}'; expected {seq} at byte offset 0"),
    ])
    func errors(template: String, message: String) {
        #expect(throws: PayloadTemplateError.self) { try PayloadTemplate(template) }
        do {
            _ = try PayloadTemplate(template)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("a JSON object template carries the header as its first member and stays valid JSON", arguments: [
        (#"{"speed":{seq}}"#, #"{"_fb":"02000000070000000000000029000000000000beef0000000000000005000000000000bef0","speed":41}"#),
        (#"  { "speed":1 }"#, #"  {"_fb":"02000000070000000000000029000000000000beef0000000000000005000000000000bef0", "speed":1 }"#),
        (#"{ }"#, #"{"_fb":"02000000070000000000000029000000000000beef0000000000000005000000000000bef0" }"#),
    ])
    func textHeader(template: String, expected: String) throws {
        let compiled = try PayloadTemplate(template)
        #expect(compiled.headerForm == .text)
        let header = EndToEndHeader(streamID: 7, sequence: 41, intendedTime: 0xBEEF, runID: 5, sentTime: 0xBEF0)
        let rendered = render(compiled, header: header)
        #expect(rendered == expected)
        #expect(try EndToEndHeader.read(from: Array(rendered.utf8)) == header)
    }

    @Test("a template that is not a JSON object gets the binary header in front")
    func binaryHeader() throws {
        let compiled = try PayloadTemplate("seq={seq}")
        #expect(compiled.headerForm == .binary)
        let header = EndToEndHeader(streamID: 1, sequence: 2, intendedTime: 3, runID: 4, sentTime: 5)
        var buffer: [UInt8] = []
        var random = SeededRandom(seed: 1)
        compiled.render(into: &buffer, context: PayloadContext(clientID: [], clientIndex: 0, sequence: 2,
                                                              timestampMilliseconds: 0), random: &random, header: header)
        #expect(buffer == [0xFB, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3,
                           0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 5] + Array("seq=2".utf8))
        #expect(try EndToEndHeader.read(from: buffer) == header)
        #expect(try PayloadTemplate("{seq}").headerForm == .binary)  // a generator, not an object
    }
}
