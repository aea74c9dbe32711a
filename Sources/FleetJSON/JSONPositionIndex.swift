/// A 1-based line and column in a source text. Columns count characters (grapheme clusters) as an editor
/// shows them, not bytes: `"é": x` has `x` at column 6 whatever the encoding of é.
public struct JSONPosition: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "\(line):\(column)" }
}

/// Where each value and each object key of a parsed document starts. jansson does not keep positions, so a small
/// scanner walks the text after jansson accepted it (the text is known to be valid JSON, so the scanner only has
/// to follow structure, not report syntax errors) and records byte offsets; lines and columns are computed on demand.
public struct JSONPositionIndex: Sendable {
    let bytes: [UInt8]
    var valueOffsets: [JSONPath: Int] = [:]
    var keyOffsets: [JSONPath: Int] = [:]
    /// Byte offset at which each line starts (line 1 at index 0).
    let lineStarts: [Int]

    public init(text: [UInt8]) {
        bytes = text
        var starts = [0]
        for (offset, byte) in text.enumerated() where byte == 0x0A {
            starts.append(offset + 1)
        }
        lineStarts = starts
        var scanner = Scanner(bytes: text)
        scanner.scanValue(path: .root)
        valueOffsets = scanner.valueOffsets
        keyOffsets = scanner.keyOffsets
    }

    /// Where the value at `path` starts (its first character: `{`, `[`, `"`, a digit, `t`, ...).
    public func position(of path: JSONPath) -> JSONPosition? {
        valueOffsets[path].map(position(ofByteOffset:))
    }

    /// Where the key (its opening quote) of the member at `path` starts; nil for the root and array elements.
    public func keyPosition(of path: JSONPath) -> JSONPosition? {
        keyOffsets[path].map(position(ofByteOffset:))
    }

    /// The position of the `characterOffset`-th character inside the string value at `path` (0 = first character
    /// after the quote). Falls back to the value's start when the literal holds escapes, because then decoded
    /// characters and written characters no longer line up.
    public func position(ofCharacter characterOffset: Int, inStringAt path: JSONPath) -> JSONPosition? {
        guard let start = valueOffsets[path] else { return nil }
        guard start < bytes.count, bytes[start] == 0x22 else { return position(ofByteOffset: start) }
        var end = start + 1
        while end < bytes.count, bytes[end] != 0x22 {
            if bytes[end] == 0x5C { return position(ofByteOffset: start) }
            end += 1
        }
        let base = position(ofByteOffset: start)
        return JSONPosition(line: base.line, column: base.column + 1 + max(0, characterOffset))
    }

    /// Converts a byte offset into a line and a character column.
    public func position(ofByteOffset offset: Int) -> JSONPosition {
        let clamped = min(max(0, offset), bytes.count)
        // The last line start not after the offset.
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= clamped { low = middle } else { high = middle - 1 }
        }
        let lineStart = lineStarts[low]
        let prefix = String(decoding: bytes[lineStart..<clamped], as: UTF8.self)
        return JSONPosition(line: low + 1, column: prefix.count + 1)
    }

    /// Follows the structure of valid JSON. Every read is bounds-checked so even invalid input cannot trap.
    struct Scanner {
        let bytes: [UInt8]
        var offset = 0
        var valueOffsets: [JSONPath: Int] = [:]
        var keyOffsets: [JSONPath: Int] = [:]

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                offset += 1
            }
        }

        mutating func scanValue(path: JSONPath) {
            skipWhitespace()
            guard let byte = current else { return }
            valueOffsets[path] = offset
            switch byte {
            case UInt8(ascii: "{"):
                offset += 1
                skipWhitespace()
                if current == UInt8(ascii: "}") {
                    offset += 1
                    return
                }
                while current != nil {
                    skipWhitespace()
                    let keyStart = offset
                    guard current == 0x22 else { return }
                    let key = scanString()
                    let memberPath = path.appending(key)
                    keyOffsets[memberPath] = keyStart
                    skipWhitespace()
                    guard current == UInt8(ascii: ":") else { return }
                    offset += 1
                    scanValue(path: memberPath)
                    skipWhitespace()
                    if current == UInt8(ascii: ",") {
                        offset += 1
                        continue
                    }
                    if current == UInt8(ascii: "}") { offset += 1 }
                    return
                }
            case UInt8(ascii: "["):
                offset += 1
                skipWhitespace()
                if current == UInt8(ascii: "]") {
                    offset += 1
                    return
                }
                var index = 0
                while current != nil {
                    scanValue(path: path.appending(index: index))
                    index += 1
                    skipWhitespace()
                    if current == UInt8(ascii: ",") {
                        offset += 1
                        continue
                    }
                    if current == UInt8(ascii: "]") { offset += 1 }
                    return
                }
            case 0x22:
                _ = scanString()
            default:
                // Numbers and literals run until a structural character or whitespace.
                while let next = current, !Self.isDelimiter(next) { offset += 1 }
            }
        }

        static func isDelimiter(_ byte: UInt8) -> Bool {
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ":"):
                return true
            default:
                return false
            }
        }

        /// Reads a string literal at `offset` and returns its decoded text (keys must match jansson's decoding).
        mutating func scanString() -> String {
            offset += 1  // opening quote
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flushRaw() {
                if !raw.isEmpty {
                    scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                    raw.removeAll(keepingCapacity: true)
                }
            }
            while let byte = current {
                if byte == 0x22 {
                    offset += 1
                    break
                }
                if byte != 0x5C {
                    raw.append(byte)
                    offset += 1
                    continue
                }
                flushRaw()
                offset += 1
                guard let escape = current else { break }
                offset += 1
                switch escape {
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "u"):
                    guard var code = readHex4() else { break }
                    // RFC 8259 §7: characters outside the BMP are written as a UTF-16 surrogate pair.
                    if code >= 0xD800, code < 0xDC00, current == 0x5C, offset + 1 < bytes.count,
                        bytes[offset + 1] == UInt8(ascii: "u")
                    {
                        let saved = offset
                        offset += 2
                        if let low = readHex4(), low >= 0xDC00, low < 0xE000 {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            offset = saved
                        }
                    }
                    if let scalar = Unicode.Scalar(code) { scalars.append(scalar) }
                default:
                    scalars.append(Unicode.Scalar(escape))
                }
            }
            flushRaw()
            return String(scalars)
        }

        mutating func readHex4() -> UInt32? {
            guard offset + 4 <= bytes.count else { return nil }
            var code: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[offset]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: return nil
                }
                code = code * 16 + digit
                offset += 1
            }
            return code
        }
    }
}
