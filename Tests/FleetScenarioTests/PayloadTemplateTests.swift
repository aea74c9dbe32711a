import Testing
@testable import FleetScenario
import FleetTestSupport

@Suite("Name patterns and payload templates")
struct PayloadTemplateTests {
    @Test("patterns expand placeholders with zero padding and literal braces", arguments: [
        ("veh-{i:05}", "veh-00042"), ("{fleet}/{client_id}/x", "cars/car-42/x"), ("{{literal}}-{i}", "{literal}-42"),
        ("cmd/{target_client_id}/{target_i:03}", "cmd/veh-7/007"),
    ])
    func expands(text: String, expected: String) {
        #expect(pattern(text).render(clientID: "car-42", index: 42, fleet: "cars", targetClientID: "veh-7", targetIndex: 7) == expected)
    }

    @Test("bad patterns name the problem and where", arguments: [
        ("veh-{i:5}", 4, "invalid format '{i:5}'; only {i:0N} and {target_i:0N} with N from 1 to 20 are supported"),
        ("veh-{i", 4, "unclosed '{' (write '{{' for a literal brace)"),
        ("a}", 1, "unmatched '}' (write '}}' for a literal brace)"),
        ("x/{clientid}", 2, "unknown placeholder '{clientid}'; did you mean '{client_id}'?"),
        ("x/{vin}", 2, "unknown placeholder '{vin}'; expected one of: {client_id}, {fleet}, {i}"),
    ])
    func rejects(text: String, offset: Int, message: String) {
        #expect(NamePattern.parse(text, allowed: [.clientID, .index, .fleet]) == .failure(PatternError(offset: offset, message: message)))
    }

    @Test("a JSON template renders valid JSON: lone numeric generators as numbers, others inside strings")
    func rendersJSON() throws {
        let template = try #require(PayloadTemplate.compileJSON(.object([
            .init("v", .string("{client_id}")), .init("n", .string("{seq}")), .init("s", .string("x{i}y")),
            .init("q", .string("say \"{choice:hi}\"")), .init("k", .array([.integer(1), .bool(true), .null])),
        ]), path: .root).0)
        var random = TestRandom(seed: 1)
        let bytes = template.render(clientID: "veh-1", index: 3, fleet: "f", sequence: 7, timestampMilliseconds: 0, using: &random)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"v":"veh-1","n":7,"s":"x3y","q":"say \"hi\"","k":[1,true,null]}"#)
        #expect(template.isJSON)
    }

    @Test("decimal ranges compile as in the engine, and JSON string values are escaped in previews too")
    func decimalsAndEscaping() throws {
        let decimal = try PayloadTemplate.compileText("{rand:-0.5..1.25}").get()
        #expect(decimal.segments == [.generator(.randomDecimal(-50...125, fractionDigits: 2), inJSONString: false)])
        let template = try #require(PayloadTemplate.compileJSON(.object([
            .init("note", .string("say {choice:\"hi\"|tab\there}")),
        ]), path: .root).0)
        var seen = Set<String>()
        var random = TestRandom(seed: 5)
        for _ in 0..<50 {
            seen.insert(String(decoding: template.render(clientID: "", index: 0, fleet: "", sequence: 0,
                                                         timestampMilliseconds: 0, using: &random), as: UTF8.self))
        }
        #expect(seen == [#"{"note":"say \"hi\""}"#, #"{"note":"say tab\there"}"#])
    }

    @Test("random generators stay in range and UUIDs are version 4")
    func randomness() throws {
        let template = try PayloadTemplate.compileText("{rand:-3..3}|{uuid}|{rand:5..5}").get()
        var random = TestRandom(seed: 99)
        for _ in 0..<200 {
            let parts = String(decoding: template.render(clientID: "", index: 0, fleet: "", sequence: 0, timestampMilliseconds: 0, using: &random), as: UTF8.self)
                .split(separator: "|").map(String.init)
            #expect(parts.count == 3)
            #expect((-3...3).contains(Int(parts[0]) ?? 99))
            let uuid = Array(parts[1])
            #expect(uuid.count == 36)
            #expect(uuid[14] == "4")
            #expect("89ab".contains(uuid[19]))
            #expect(parts[2] == "5")
        }
    }

    @Test("bad generators give a reason", arguments: [
        ("{rand:9..1}", "invalid '{rand:9..1}'; LOW must not exceed HIGH"),
        ("{rand:a..b}", "invalid '{rand:a..b}'; expected {rand:LOW..HIGH} with integers or decimals"),
        ("{choice:}", "invalid '{choice:}'; expected {choice:a|b|c} with non-empty options"),
        ("x{seq:2}", "invalid '{seq:2}'; expected {seq}"),
        ("{timestamp}", "unknown generator '{timestamp}'; expected one of: {client_id}, {i}, {fleet}, {seq}, {ts_ms}, {rand:LOW..HIGH}, {choice:a|b|c}, {uuid}, {vehicle.FIELD} (FIELD: lat, lon, heading, speed_kmh, odometer_km, soc, ignition, charging, in_tunnel)"),
    ])
    func rejects(text: String, message: String) {
        guard case .failure(let failure) = PayloadTemplate.compileText(text) else {
            Issue.record("expected \(text) to fail")
            return
        }
        #expect(failure.message == message)
    }
}
