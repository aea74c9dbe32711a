/// Escaping of text written inside a JSON string (RFC 8259 §7): `"` and `\` get a backslash, control characters
/// U+0000 to U+001F become `\b`, `\f`, `\n`, `\r`, `\t` or `\u00XX`. Everything else, UTF-8 included, is copied.
public enum JSONStringEscaping {
    /// Whether `byte` cannot appear as itself inside a JSON string.
    @inline(__always)
    public static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Appends `bytes` escaped; without allocating once `output` has the capacity (runs without escapes are
    /// copied in one piece).
    @inline(__always)
    public static func append(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        var runStart = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if needsEscape(byte) {
                if index > runStart { output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
                appendEscape(byte, to: &output)
                runStart = index + 1
            }
            index += 1
        }
        if bytes.count > runStart { output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count])) }
    }

    /// Appends `bytes` escaped.
    public static func append(_ bytes: [UInt8], to output: inout [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0, to: &output) }
    }

    /// `text` escaped for the inside of a JSON string (without the quotes).
    public static func escaped(_ text: String) -> [UInt8] {
        var output: [UInt8] = []
        append(Array(text.utf8), to: &output)
        return output
    }

    @inline(__always)
    static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10 }

    static func appendEscape(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): output.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"))
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            output.append(UInt8(ascii: "u"))
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "0"))
            output.append(hexDigit(byte >> 4))
            output.append(hexDigit(byte & 0x0F))
        }
    }
}
