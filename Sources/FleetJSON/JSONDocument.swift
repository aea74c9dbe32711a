import CJansson

#if canImport(Glibc)
import Glibc
#endif

/// A parse failure: where (`file:line:column`) and what, in words a user can act on.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var position: JSONPosition
    public var message: String

    public init(file: String, position: JSONPosition, message: String) {
        self.file = file
        self.position = position
        self.message = message
    }

    public var description: String { "\(file):\(position.line):\(position.column): \(message)" }
}

/// A parsed JSON text: the value tree and where each value starts in the text.
public struct JSONDocument: Sendable {
    /// The name used in messages (a path as given on the command line, or a label such as `<inline>`).
    public var file: String
    public var root: JSONValue
    public var positions: JSONPositionIndex

    /// Parses `text` with jansson: duplicate keys rejected (JSON_REJECT_DUPLICATES), anything after the value
    /// rejected (the EOF check stays on), any value accepted at the top level (JSON_DECODE_ANY; callers check
    /// the root type so they can say what they expected), NUL characters in strings rejected.
    public static func parse(text: String, file: String) throws(JSONParseError) -> JSONDocument {
        try parse(bytes: Array(text.utf8), file: file)
    }

    public static func parse(bytes: [UInt8], file: String) throws(JSONParseError) -> JSONDocument {
        var error = json_error_t()
        let flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY
        let loaded = bytes.withUnsafeBufferPointer { buffer -> UnsafeMutablePointer<json_t>? in
            // An empty buffer still needs a valid pointer for jansson.
            guard let base = buffer.baseAddress else {
                return json_loadb("", 0, Int(flags), &error)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { chars in
                json_loadb(chars, buffer.count, Int(flags), &error)
            }
        }
        let index = JSONPositionIndex(text: loaded == nil ? bytes : bytes)
        guard let loaded else {
            throw readableError(error, bytes: bytes, index: index, file: file)
        }
        defer { fb_json_decref(loaded) }
        return JSONDocument(file: file, root: convert(loaded), positions: index)
    }

    /// Reads and parses a file. I/O failures are reported as a parse error at 1:1 with the system's reason.
    public static func load(path: String) throws(JSONParseError) -> JSONDocument {
        guard let handle = fopen(path, "rb") else {
            let reason = String(cString: strerror(errno))
            throw JSONParseError(file: path, position: JSONPosition(line: 1, column: 1), message: "cannot read file: \(reason)")
        }
        defer { fclose(handle) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, handle) }
            if count > 0 { bytes.append(contentsOf: chunk[0..<count]) }
            if count < chunk.count { break }
        }
        if ferror(handle) != 0 {
            let reason = String(cString: strerror(errno))
            throw JSONParseError(file: path, position: JSONPosition(line: 1, column: 1), message: "cannot read file: \(reason)")
        }
        return try parse(bytes: bytes, file: path)
    }

    /// Where the value at `path` starts, or where its nearest positioned ancestor starts.
    public func position(of path: JSONPath) -> JSONPosition {
        var probe: JSONPath? = path
        while let current = probe {
            if let found = positions.position(of: current) { return found }
            probe = current.parent
        }
        return JSONPosition(line: 1, column: 1)
    }

    static func convert(_ value: UnsafeMutablePointer<json_t>) -> JSONValue {
        switch fb_json_typeof(value) {
        case JSON_OBJECT:
            var members: [JSONMember] = []
            var iterator = json_object_iter(value)
            while let current = iterator {
                if let keyPointer = json_object_iter_key(current) {
                    let length = json_object_iter_key_len(current)
                    let key = keyPointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                    }
                    if let member = json_object_iter_value(current) {
                        members.append(JSONMember(key, convert(member)))
                    }
                }
                iterator = json_object_iter_next(value, current)
            }
            return .object(members)
        case JSON_ARRAY:
            let count = json_array_size(value)
            var elements: [JSONValue] = []
            elements.reserveCapacity(count)
            for position in 0..<count {
                if let element = json_array_get(value, position) { elements.append(convert(element)) }
            }
            return .array(elements)
        case JSON_STRING:
            let length = json_string_length(value)
            guard let pointer = json_string_value(value) else { return .string("") }
            return .string(pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            })
        case JSON_INTEGER:
            return .integer(Int64(json_integer_value(value)))
        case JSON_REAL:
            return .real(json_real_value(value))
        case JSON_TRUE:
            return .bool(true)
        case JSON_FALSE:
            return .bool(false)
        default:
            return .null
        }
    }

    /// jansson reports the position just after the offending token and phrases messages as "X expected near 'Y'";
    /// this points at the token's first character and rephrases the common messages.
    static func readableError(_ error: json_error_t, bytes: [UInt8], index: JSONPositionIndex, file: String) -> JSONParseError {
        let text = withUnsafeBytes(of: error.text) { raw in
            let chars = raw.bindMemory(to: UInt8.self)
            let length = chars.firstIndex(of: 0) ?? chars.count
            return String(decoding: chars[0..<length], as: UTF8.self)
        }
        var offset = max(0, min(Int(error.position), bytes.count))
        var message = text
        var near: String? = nil
        if text.hasSuffix(" near end of file") {
            message = String(text.dropLast(" near end of file".count))
            near = nil
            offset = bytes.count
            if message == "unexpected token" {
                message = bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 })
                    ? "the file is empty; expected a JSON value" : "unexpected end of file"
            } else if message.hasSuffix(" expected") {
                message = "unexpected end of file; expected " + message.dropLast(" expected".count)
            }
        } else if text.hasSuffix("'"), let split = firstRange(of: Array(" near '".utf8), in: Array(text.utf8)),
                  split.upperBound < text.utf8.count {
            // jansson writes "MESSAGE near 'TOKEN'"; its messages never hold " near '", but the token may (the text
            // of the file it quotes), so the first occurrence is the split.
            let utf8 = Array(text.utf8)
            near = String(decoding: utf8[split.upperBound..<(utf8.count - 1)], as: UTF8.self)
            message = String(decoding: utf8[..<split.lowerBound], as: UTF8.self)
        }
        if let near {
            let tokenLength = near.utf8.count
            // Back up to where the token starts when the text there matches.
            if offset >= tokenLength, Array(bytes[(offset - tokenLength)..<offset]) == Array(near.utf8) {
                offset -= tokenLength
            }
            if message == "duplicate object key" {
                let key = near.count >= 2 && near.hasPrefix("\"") && near.hasSuffix("\"")
                    ? String(near.dropFirst().dropLast()) : near
                message = "duplicate key '\(key)' (each key may appear only once in an object)"
            } else if message == "end of file expected" {
                message = "unexpected '\(near)' after the end of the JSON value"
            } else if message == "string or '}' expected" {
                message = near == "}"
                    ? "expected a key after ',' (trailing commas are not allowed)"
                    : "expected a key in double quotes or '}', found '\(near)'"
            } else if message == "unexpected token", near == "]" {
                message = "expected a value after ',' (trailing commas are not allowed)"
            } else if message == "unexpected newline" {
                message = "unterminated string (a newline inside a string must be written \\n)"
            } else if message == "invalid token" {
                message = "invalid token '\(near)'"
            } else if message.hasSuffix(" expected") {
                message = "expected " + message.dropLast(" expected".count) + ", found '\(near)'"
            } else {
                message += " at '\(near)'"
            }
        }
        return JSONParseError(file: file, position: index.position(ofByteOffset: offset), message: message)
    }

    /// The first occurrence of `needle` in `haystack` (no Foundation in this module).
    static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard !needle.isEmpty, needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start..<(start + needle.count)
        }
        return nil
    }
}
