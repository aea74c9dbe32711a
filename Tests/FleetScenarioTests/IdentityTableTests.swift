import Foundation
import Testing
@testable import FleetScenario

func identities(_ text: String) -> Result<[IdentityRecord], IdentityTableError> {
    Result { () throws(IdentityTableError) in try IdentityTable.parse(text, file: "ids.csv").records }
}

func identityErrors(_ text: String) -> String? {
    if case .failure(let error) = identities(text) { return error.description }
    return nil
}

@Suite("IdentityTable: client ids, user names and passwords from CSV (RFC 4180)")
struct IdentityTableTests {
    @Test("a header and records; quoted fields hold commas, quotes and line breaks; empty fields send nothing")
    func parsesRecords() throws {
        let text = "client_id,username,password\r\n"
            + "veh-1,fleet,plain\r\n"
            + "veh-2,\"fleet, east\",\"say \"\"hi\"\"\"\r\n"
            + "\"veh-3\",,\"two\nlines\"\n"
            + "\n"
            + "veh-4,fleet,\n"
            + "veh-5,\" spaced \",p w"
        let records = try identities(text).get()
        #expect(records == [
            IdentityRecord(clientID: "veh-1", username: "fleet", password: "plain", line: 2),
            IdentityRecord(clientID: "veh-2", username: "fleet, east", password: "say \"hi\"", line: 3),
            IdentityRecord(clientID: "veh-3", username: nil, password: "two\nlines", line: 4),
            IdentityRecord(clientID: "veh-4", username: "fleet", password: nil, line: 7),
            IdentityRecord(clientID: "veh-5", username: " spaced ", password: "p w", line: 8),
        ])
    }

    @Test("columns in any order, optional ones left out; header names may carry spaces; a byte order mark is skipped")
    func columnsInAnyOrder() throws {
        #expect(try identities("\u{FEFF}password , client_id\ns1,a\ns2,b\n").get() == [
            IdentityRecord(clientID: "a", username: nil, password: "s1", line: 2),
            IdentityRecord(clientID: "b", username: nil, password: "s2", line: 3),
        ])
        #expect(try identities("client_id\nx\n\ny").get().map(\.clientID) == ["x", "y"])
        #expect(try identities("client_id,username\nvéhicule-ü,ünïcode").get()
            == [IdentityRecord(clientID: "véhicule-ü", username: "ünïcode", password: nil, line: 2)])
    }

    @Test("each problem names file:line:column and what to do", arguments: [
        ("client_id,usrname,password\na,b,c", "ids.csv:1:11: unknown column 'usrname'; did you mean 'username'?"),
        ("id,secret\na,b", "ids.csv:1:1: unknown column 'id'; expected client_id, username, password\nids.csv:1:4: unknown column 'secret'; expected client_id, username, password\nids.csv:1:1: the header has no 'client_id' column (expected client_id,username,password)"),
        ("client_id,password,client_id\na,b,c", "ids.csv:1:20: column 'client_id' appears twice in the header"),
        ("username,password\na,b", "ids.csv:1:1: the header has no 'client_id' column (expected client_id,username,password)"),
        ("", "ids.csv:1:1: no identities: expected a header line (client_id,username,password) and at least one record"),
        ("client_id,username\n", "ids.csv:2:1: no identities: the file has a header but no records"),
        ("client_id,username\na,b,c\nd\n", "ids.csv:2:5: this record has 3 fields, the header has 2\nids.csv:3:1: this record has 1 field, the header has 2"),
        ("client_id,username\n,b\nx,y\nx,z", "ids.csv:2:1: empty client_id (every record needs one)\nids.csv:4:1: client_id 'x' is already used on line 3"),
        ("client_id,password\na,pa\"ss", "ids.csv:2:5: a quote inside an unquoted field; quote the whole field and double the quote: \"a\"\"b\""),
        ("client_id,password\na,\"pa\"ss\"\nb,c", "ids.csv:2:7: 's' after the closing quote of a field; expected a comma or the end of the line (a quote inside a field is written \"\")"),
        ("client_id,password\nä,\"open\nb,c\n", "ids.csv:2:3: this quoted field is never closed (a quote inside a field is written \"\")"),
        ("client_id,password\na,b\rc,d", "ids.csv:2:4: a carriage return must be followed by a line feed (line breaks are CRLF or LF)"),
        ("client_id\nab\u{0}c", "ids.csv:2:3: NUL character (not allowed in MQTT strings)"),
    ])
    func problems(text: String, message: String) {
        #expect(identityErrors(text) == message)
    }

    @Test("invalid UTF-8 is refused at its position")
    func invalidUTF8() {
        let bytes: [UInt8] = Array("client_id\nab".utf8) + [0xC3, 0x28] + Array("\n".utf8)
        #expect(throws: IdentityTableError(diagnostics: [IdentityTableDiagnostic(
            file: "ids.csv", line: 2, column: 3, message: "invalid UTF-8 byte 0xC3; the file must be UTF-8")])) {
            try IdentityTable.parse(bytes, file: "ids.csv")
        }
    }

    @Test("a value longer than MQTT allows is refused; many problems stop at 20")
    func limits() {
        let long = String(repeating: "p", count: 65_536)
        #expect(identityErrors("client_id,password\na,\(long)") == "ids.csv:2:3: password is 65536 bytes long; MQTT allows at most 65535")
        let manyEmpty = "client_id,username\n" + String(repeating: ",x\n", count: 30)
        #expect(identityErrors(manyEmpty)?.split(separator: "\n").count == 20)
    }

    @Test("loading a file: records as written; a missing file says why")
    func loadsFile() throws {
        let path = NSTemporaryDirectory() + "fleetbench-ids-\(UUID().uuidString).csv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rows = (0..<1000).map { "veh-\($0),user-\($0 % 7),\"pw,\($0)\"" }
        try ("client_id,username,password\n" + rows.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let table = try IdentityTable.load(path: path)
        #expect(table.records.count == 1000)
        #expect(table.records[999] == IdentityRecord(clientID: "veh-999", username: "user-5", password: "pw,999", line: 1001))
        #expect(throws: IdentityTableError(diagnostics: [IdentityTableDiagnostic(
            file: "/nonexistent/ids.csv", line: 1, column: 1, message: "cannot read file: No such file or directory")])) {
            try IdentityTable.load(path: "/nonexistent/ids.csv")
        }
    }
}
