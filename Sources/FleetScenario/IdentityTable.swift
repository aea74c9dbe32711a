import FleetPayload
#if canImport(Glibc)
import Glibc
#endif

/// One client's credentials from an identities file.
public struct IdentityRecord: Sendable, Equatable {
    public var clientID: String
    /// nil when the column is absent or the field empty (the CONNECT then carries no user name / password).
    public var username: String?
    public var password: String?
    /// The line the record starts on, for messages about it.
    public var line: Int

    public init(clientID: String, username: String?, password: String?, line: Int) {
        self.clientID = clientID
        self.username = username
        self.password = password
        self.line = line
    }
}

/// A problem in an identities file, at `file:line:column` (columns count characters, as an editor shows them).
public struct IdentityTableDiagnostic: Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    public var message: String

    public var description: String { "\(file):\(line):\(column): \(message)" }
}

/// Every problem found (up to `IdentityTable.maximumDiagnostics`), in file order.
public struct IdentityTableError: Error, Equatable, Sendable, CustomStringConvertible {
    public var diagnostics: [IdentityTableDiagnostic]
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// Client ids, user names and passwords read from a CSV file (RFC 4180), one record per client:
///
///     client_id,username,password
///     veh-00001,fleet-a,"s3cr,et"
///     veh-00002,fleet-a,"say ""hi"""
///
/// - The first line names the columns: `client_id` (required), `username` and `password` (optional), in any order,
///   each once. Any other name is an error (a misspelt `pasword` would otherwise drop every password silently).
/// - Fields are separated by commas and records by CRLF or LF. A field may be quoted: `"a,b"`; inside quotes,
///   commas and line breaks are data and `""` is one quote. A quote inside an unquoted field, or anything but a
///   comma or a line break after a closing quote, is an error. Spaces are data (a password may hold them).
/// - Every record has as many fields as the header. Empty lines are skipped. A UTF-8 byte order mark is skipped.
/// - `client_id` must be non-empty and unique. An empty `username` or `password` means none is sent.
/// - The text must be UTF-8 without NUL characters, each value at most 65,535 bytes (MQTT §1.5.3).
public struct IdentityTable: Sendable, Equatable {
    public var file: String
    public var records: [IdentityRecord]

    public static let columns = ["client_id", "username", "password"]
    /// A file with more problems stops being read here: the first ones say enough.
    public static let maximumDiagnostics = 20

    /// Reads and parses a file; an unreadable file is reported at 1:1 with the system's reason.
    public static func load(path: String) throws(IdentityTableError) -> IdentityTable {
        guard let handle = fopen(path, "rb") else {
            throw IdentityTableError(diagnostics: [IdentityTableDiagnostic(
                file: path, line: 1, column: 1, message: "cannot read file: \(String(cString: strerror(errno)))")])
        }
        defer { fclose(handle) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, handle) }
            bytes.append(contentsOf: chunk[0..<count])
            if count < chunk.count { break }
        }
        if ferror(handle) != 0 {
            throw IdentityTableError(diagnostics: [IdentityTableDiagnostic(
                file: path, line: 1, column: 1, message: "cannot read file: \(String(cString: strerror(errno)))")])
        }
        return try parse(bytes, file: path)
    }

    public static func parse(_ text: String, file: String) throws(IdentityTableError) -> IdentityTable {
        try parse(Array(text.utf8), file: file)
    }

    public static func parse(_ bytes: [UInt8], file: String) throws(IdentityTableError) -> IdentityTable {
        var parser = IdentityCSVParser(bytes: bytes, file: file)
        let records = parser.parseAll()
        guard parser.diagnostics.isEmpty else { throw IdentityTableError(diagnostics: parser.diagnostics) }
        return IdentityTable(file: file, records: records)
    }
}

/// A single pass over the bytes: fields are cut as they come, each record is checked against the header.
private struct IdentityCSVParser {
    let bytes: [UInt8]
    let file: String
    var offset = 0
    var line = 1
    var lineStart = 0
    var diagnostics: [IdentityTableDiagnostic] = []

    /// A field's text and where it starts.
    struct Field {
        var bytes: [UInt8]
        var offset: Int
        var line: Int
        var lineStart: Int
    }

    init(bytes: [UInt8], file: String) {
        self.bytes = bytes
        self.file = file
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            offset = 3
            lineStart = 3
        }
    }

    var full: Bool { diagnostics.count >= IdentityTable.maximumDiagnostics }

    /// Reports at a byte offset on a line (columns in characters from the line's start).
    mutating func report(line: Int, lineStart: Int, offset: Int, _ message: String) {
        guard !full else { return }
        let end = min(max(offset, lineStart), bytes.count)
        let column = String(decoding: bytes[lineStart..<end], as: UTF8.self).count + 1
        diagnostics.append(IdentityTableDiagnostic(file: file, line: line, column: column, message: message))
    }

    mutating func report(_ field: Field, _ message: String) {
        report(line: field.line, lineStart: field.lineStart, offset: field.offset, message)
    }

    mutating func parseAll() -> [IdentityRecord] {
        guard validateText() else { return [] }
        // The header: the first non-empty record.
        var header: [Field] = []
        while offset < bytes.count && header.isEmpty {
            guard let record = nextRecord() else { return [] }
            header = record
        }
        guard !header.isEmpty else {
            report(line: line, lineStart: lineStart, offset: offset, "no identities: expected a header line (client_id,username,password) and at least one record")
            return []
        }
        var columns: [Int?] = []  // per header field: its index in IdentityTable.columns
        var seen: [String: Int] = [:]
        for field in header {
            let name = String(decoding: field.bytes, as: UTF8.self).trimmingASCIISpaces()
            if let known = IdentityTable.columns.firstIndex(of: name) {
                if seen[name] != nil {
                    report(field, "column '\(name)' appears twice in the header")
                }
                seen[name] = columns.count
                columns.append(known)
            } else {
                var message = "unknown column '\(name)'"
                if let suggestion = closestMatch(to: name, among: IdentityTable.columns) {
                    message += "; did you mean '\(suggestion)'?"
                } else {
                    message += "; expected client_id, username, password"
                }
                report(field, message)
                columns.append(nil)
            }
        }
        if seen["client_id"] == nil {
            report(header[0], "the header has no 'client_id' column (expected client_id,username,password)")
        }
        guard diagnostics.isEmpty else { return [] }

        var records: [IdentityRecord] = []
        var firstLine: [String: Int] = [:]
        while offset < bytes.count && !full {
            let recordLine = line
            let recordLineStart = lineStart
            let recordOffset = offset
            guard let fields = nextRecord() else { break }
            if fields.isEmpty { continue }  // an empty line
            guard fields.count == header.count else {
                let message = "this record has \(fields.count) field\(fields.count == 1 ? "" : "s"), the header has \(header.count)"
                if fields.count > header.count {
                    report(fields[header.count], message)
                } else {
                    report(line: recordLine, lineStart: recordLineStart, offset: recordOffset, message)
                }
                continue
            }
            var values: [String?] = [nil, nil, nil]
            var valid = true
            for (field, column) in zip(fields, columns) {
                guard let column else { continue }
                if field.bytes.count > 65_535 {
                    report(field, "\(IdentityTable.columns[column]) is \(field.bytes.count) bytes long; MQTT allows at most 65535")
                    valid = false
                }
                values[column] = field.bytes.isEmpty ? nil : String(decoding: field.bytes, as: UTF8.self)
            }
            let clientField = fields[seen["client_id"]!]
            guard let clientID = values[0] else {
                report(clientField, "empty client_id (every record needs one)")
                continue
            }
            if let earlier = firstLine[clientID] {
                report(clientField, "client_id '\(clientID)' is already used on line \(earlier)")
                valid = false
            } else {
                firstLine[clientID] = recordLine
            }
            if valid { records.append(IdentityRecord(clientID: clientID, username: values[1], password: values[2], line: recordLine)) }
        }
        if diagnostics.isEmpty && records.isEmpty {
            report(line: line, lineStart: lineStart, offset: offset, "no identities: the file has a header but no records")
        }
        return records
    }

    /// The text must be UTF-8 without NUL: checked once up front, so fields can be decoded without checks.
    mutating func validateText() -> Bool {
        var scanLine = 1
        var scanLineStart = offset
        var index = offset
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x0A {
                scanLine += 1
                scanLineStart = index + 1
                index += 1
                continue
            }
            if byte == 0 {
                report(line: scanLine, lineStart: scanLineStart, offset: index, "NUL character (not allowed in MQTT strings)")
                return false
            }
            let length = Self.utf8SequenceLength(bytes, at: index)
            guard length > 0 else {
                report(line: scanLine, lineStart: scanLineStart, offset: index, "invalid UTF-8 byte 0x\(String(byte, radix: 16, uppercase: true)); the file must be UTF-8")
                return false
            }
            index += length
        }
        return true
    }

    /// Length of the well-formed UTF-8 sequence at `index` (Unicode §3.9, table 3-7), 0 when ill-formed.
    static func utf8SequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let first = bytes[index]
        if first < 0x80 { return 1 }
        let (length, low, high): (Int, UInt8, UInt8)
        switch first {
        case 0xC2...0xDF: (length, low, high) = (2, 0x80, 0xBF)
        case 0xE0: (length, low, high) = (3, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, low, high) = (3, 0x80, 0xBF)
        case 0xED: (length, low, high) = (3, 0x80, 0x9F)
        case 0xF0: (length, low, high) = (4, 0x90, 0xBF)
        case 0xF1...0xF3: (length, low, high) = (4, 0x80, 0xBF)
        case 0xF4: (length, low, high) = (4, 0x80, 0x8F)
        default: return 0
        }
        guard index + length <= bytes.count, (low...high).contains(bytes[index + 1]) else { return 0 }
        for next in (index + 2)..<(index + length) where !(0x80...0xBF).contains(bytes[next]) { return 0 }
        return length
    }

    /// The fields of the next record (empty for an empty line), consuming its line break; nil after a problem that
    /// leaves the rest of the file unreadable (an unterminated quote).
    mutating func nextRecord() -> [Field]? {
        var fields: [Field] = []
        if atLineBreak() {
            consumeLineBreak()
            return []
        }
        while true {
            let start = Field(bytes: [], offset: offset, line: line, lineStart: lineStart)
            if offset < bytes.count && bytes[offset] == UInt8(ascii: "\"") {
                guard let quoted = quotedField(start) else { return nil }
                fields.append(quoted)
            } else {
                fields.append(unquotedField(start))
            }
            if offset >= bytes.count { return fields }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            if atLineBreak() {
                consumeLineBreak()
                return fields
            }
            // Only a stray carriage return gets here (quoted and unquoted fields stop at anything else).
            report(line: line, lineStart: lineStart, offset: offset, "a carriage return must be followed by a line feed (line breaks are CRLF or LF)")
            skipToNextLine()
            return fields
        }
    }

    func atLineBreak() -> Bool {
        guard offset < bytes.count else { return false }
        if bytes[offset] == 0x0A { return true }
        return bytes[offset] == 0x0D && offset + 1 < bytes.count && bytes[offset + 1] == 0x0A
    }

    mutating func consumeLineBreak() {
        offset += bytes[offset] == 0x0D ? 2 : 1
        line += 1
        lineStart = offset
    }

    mutating func skipToNextLine() {
        while offset < bytes.count && bytes[offset] != 0x0A { offset += 1 }
        if offset < bytes.count { consumeLineBreak() }
    }

    mutating func unquotedField(_ start: Field) -> Field {
        var field = start
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: ",") || byte == 0x0A || byte == 0x0D { break }
            if byte == UInt8(ascii: "\"") {
                report(line: line, lineStart: lineStart, offset: offset,
                       "a quote inside an unquoted field; quote the whole field and double the quote: \"a\"\"b\"")
            }
            field.bytes.append(byte)
            offset += 1
        }
        return field
    }

    /// A field in quotes: `""` is a quote, everything else up to the closing quote is data, line breaks included.
    mutating func quotedField(_ start: Field) -> Field? {
        var field = start
        offset += 1  // the opening quote
        while true {
            guard offset < bytes.count else {
                report(start, "this quoted field is never closed (a quote inside a field is written \"\")")
                return nil
            }
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                if offset + 1 < bytes.count && bytes[offset + 1] == UInt8(ascii: "\"") {
                    field.bytes.append(byte)
                    offset += 2
                    continue
                }
                offset += 1  // the closing quote
                if offset < bytes.count && bytes[offset] != UInt8(ascii: ",") && !atLineBreak() && bytes[offset] != 0x0D {
                    let found = String(decoding: bytes[offset..<(offset + Self.utf8SequenceLength(bytes, at: offset))], as: UTF8.self)
                    report(line: line, lineStart: lineStart, offset: offset,
                           "'\(found)' after the closing quote of a field; expected a comma or the end of the line (a quote inside a field is written \"\")")
                    // Resynchronise at the next separator.
                    while offset < bytes.count && bytes[offset] != UInt8(ascii: ",") && bytes[offset] != 0x0A && bytes[offset] != 0x0D {
                        offset += 1
                    }
                }
                return field
            }
            if byte == 0x0A {
                line += 1
                lineStart = offset + 1
            }
            field.bytes.append(byte)
            offset += 1
        }
    }
}

extension String {
    fileprivate func trimmingASCIISpaces() -> String {
        var view = Substring(self)
        while view.first == " " || view.first == "\t" { view = view.dropFirst() }
        while view.last == " " || view.last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
