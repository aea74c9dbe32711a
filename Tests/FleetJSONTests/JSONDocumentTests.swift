import Testing
@testable import FleetJSON

@Suite("Parsing JSON with jansson into JSONValue")
struct JSONDocumentTests {
    @Test("values keep their kind and objects keep key order")
    func exactValues() throws {
        let document = try JSONDocument.parse(
            text: #"{"z": 1, "a": [true, false, null], "r": 2.5, "e": 1e2, "s": "h\u00e9\n", "n": -7, "o": {}}"#,
            file: "t.json")
        #expect(document.root == .object([
            JSONMember("z", .integer(1)),
            JSONMember("a", .array([.bool(true), .bool(false), .null])),
            JSONMember("r", .real(2.5)),
            JSONMember("e", .real(100)),
            JSONMember("s", .string("hé\n")),
            JSONMember("n", .integer(-7)),
            JSONMember("o", .object([])),
        ]))
    }

    @Test("top-level scalars are accepted so callers can say what they expected")
    func scalarRoot() throws {
        #expect(try JSONDocument.parse(text: " 42 ", file: "t").root == .integer(42))
        #expect(try JSONDocument.parse(text: "\"x\"", file: "t").root == .string("x"))
    }

    @Test("every value and key has its line and character column")
    func positions() throws {
        let text = """
            {
              "name": "é-car",
              "fleets": [
                {"count": 5, "tags": ["a", "b"]},
            \t{"é": {"deep": null}}
              ]
            }
            """
        let document = try JSONDocument.parse(text: text, file: "t.json")
        let index = document.positions
        let fleets = JSONPath.root.appending("fleets")
        #expect(index.position(of: .root) == JSONPosition(line: 1, column: 1))
        #expect(index.position(of: JSONPath.root.appending("name")) == JSONPosition(line: 2, column: 11))
        #expect(index.keyPosition(of: JSONPath.root.appending("name")) == JSONPosition(line: 2, column: 3))
        #expect(index.position(of: fleets) == JSONPosition(line: 3, column: 13))
        #expect(index.position(of: fleets.appending(index: 0)) == JSONPosition(line: 4, column: 5))
        #expect(index.position(of: fleets.appending(index: 0).appending("count")) == JSONPosition(line: 4, column: 15))
        #expect(index.position(of: fleets.appending(index: 0).appending("tags").appending(index: 1))
            == JSONPosition(line: 4, column: 32))
        // A tab counts as one column; é counts as one character although it is two bytes.
        #expect(index.keyPosition(of: fleets.appending(index: 1).appending("é")) == JSONPosition(line: 5, column: 3))
        #expect(index.position(of: fleets.appending(index: 1).appending("é").appending("deep"))
            == JSONPosition(line: 5, column: 17))
        #expect(index.position(of: JSONPath.root.appending("missing")) == nil)
        #expect(document.position(of: fleets.appending(index: 0).appending("missing")) == JSONPosition(line: 4, column: 5))
    }

    @Test("escaped keys are indexed under their decoded text")
    func escapedKeys() throws {
        let document = try JSONDocument.parse(text: #"{"a\"b": 1, "\u00e9\ud83d\ude97": 2}"#, file: "t")
        #expect(document.positions.position(of: JSONPath.root.appending("a\"b")) == JSONPosition(line: 1, column: 10))
        #expect(document.positions.keyPosition(of: JSONPath.root.appending("é🚗")) == JSONPosition(line: 1, column: 13))
    }

    @Test("a character inside a string literal is located unless the literal has escapes")
    func characterInString() throws {
        let document = try JSONDocument.parse(text: "{\"t\": \"ab cd\", \"u\": \"a\\tb\"}", file: "t")
        #expect(document.positions.position(ofCharacter: 3, inStringAt: JSONPath.root.appending("t"))
            == JSONPosition(line: 1, column: 11))
        #expect(document.positions.position(ofCharacter: 2, inStringAt: JSONPath.root.appending("u"))
            == JSONPosition(line: 1, column: 21))
    }

    @Test("syntax errors point at the offending token with a readable message", arguments: [
        ("{\"a\": 1,\n  \"a\": 2}", "t.json:2:3: duplicate key 'a' (each key may appear only once in an object)"),
        ("{\"a\": 1,}", "t.json:1:9: expected a key after ',' (trailing commas are not allowed)"),
        ("{\"a\" 1}", "t.json:1:6: expected ':', found '1'"),
        ("[1, 2", "t.json:1:6: unexpected end of file; expected ']'"),
        ("{\"é\": tru}", "t.json:1:7: invalid token 'tru'"),
        ("{}\n x", "t.json:2:2: unexpected 'x' after the end of the JSON value"),
        ("", "t.json:1:1: the file is empty; expected a JSON value"),
        ("  \n", "t.json:2:1: the file is empty; expected a JSON value"),
        ("{\"ab\": [1, 2,\n ]}", "t.json:2:2: expected a value after ',' (trailing commas are not allowed)"),
        ("{'a': 1}", "t.json:1:2: expected a key in double quotes or '}', found '''"),
        ("{\"a\": \"x\ny\"}", "t.json:1:7: unterminated string (a newline inside a string must be written \\n)"),
        ("{\"a\": 99999999999999999999}", "t.json:1:7: too big integer at '99999999999999999999'"),
        // The quoted token itself holds " near '": the message is what comes before its first occurrence.
        ("{\"a\": \"x near 'y\n\"}", "t.json:1:7: unterminated string (a newline inside a string must be written \\n)"),
        // Found by the scenario fuzzer: the token ends in " near " so the text ends in " near '" (it trapped).
        ("\"xpected near \n\"\"'\"\"\"\"\"\"\"\n", "t.json:1:1: unterminated string (a newline inside a string must be written \\n)"),
    ])
    func syntaxErrors(text: String, expected: String) {
        #expect(throws: JSONParseError.self) { try JSONDocument.parse(text: text, file: "t.json") }
        do {
            _ = try JSONDocument.parse(text: text, file: "t.json")
        } catch {
            #expect(error.description == expected)
        }
    }

    @Test("a missing file is an error naming the file")
    func missingFile() {
        do {
            _ = try JSONDocument.load(path: "/nonexistent/fleet.json")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "/nonexistent/fleet.json:1:1: cannot read file: No such file or directory")
        }
    }

    @Test("a directory is an error naming the file and the reason")
    func directory() {
        do {
            _ = try JSONDocument.load(path: "/tmp")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "/tmp:1:1: cannot read file: Is a directory")
        }
    }

    @Test("paths print as dotted keys with indexes and quote unusual keys")
    func pathDescription() {
        #expect(JSONPath.root.description == "$")
        #expect(JSONPath.root.appending("fleets").appending(index: 2).appending("will").appending("qos").description
            == "fleets[2].will.qos")
        #expect(JSONPath.root.appending("a.b").appending("c").description == #"["a.b"].c"#)
    }
}
