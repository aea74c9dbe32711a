/// Writes JSON for reports: keys in insertion order, integers without a fractional part, strings escaped per
/// RFC 8259 §7 (non-ASCII is written as UTF-8, not escaped), pretty-printed with two spaces or compact.
/// Our own writer rather than json_dumps so output is byte-for-byte stable across jansson versions.
public enum JSONWriter {
    public enum Style: Sendable {
        /// Two-space indentation, one member or element per line, `"key": value`, a final newline.
        case pretty
        /// No whitespace at all.
        case compact
    }

    public static func string(from value: JSONValue, style: Style = .pretty) -> String {
        var output = ""
        write(value, into: &output, style: style, depth: 0)
        if style == .pretty { output += "\n" }
        return output
    }

    static func write(_ value: JSONValue, into output: inout String, style: Style, depth: Int) {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .integer(let number): output += String(number)
        case .real(let number): output += formatReal(number)
        case .string(let text): output += quoted(text)
        case .array(let elements):
            if elements.isEmpty {
                output += "[]"
                return
            }
            output += "["
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output += "," }
                newline(&output, style: style, depth: depth + 1)
                write(element, into: &output, style: style, depth: depth + 1)
            }
            newline(&output, style: style, depth: depth)
            output += "]"
        case .object(let members):
            if members.isEmpty {
                output += "{}"
                return
            }
            output += "{"
            for (offset, member) in members.enumerated() {
                if offset > 0 { output += "," }
                newline(&output, style: style, depth: depth + 1)
                output += quoted(member.key)
                output += style == .pretty ? ": " : ":"
                write(member.value, into: &output, style: style, depth: depth + 1)
            }
            newline(&output, style: style, depth: depth)
            output += "}"
        }
    }

    static func newline(_ output: inout String, style: Style, depth: Int) {
        guard style == .pretty else { return }
        output += "\n"
        output += String(repeating: "  ", count: depth)
    }

    /// Reals that hold a whole number within ±2^53 are written without `.0` (a count that went through Double
    /// should read `3`, not `3.0`); NaN and infinities have no JSON form and are written as `null`.
    public static func formatReal(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            return String(Int64(value))
        }
        return "\(value)"
    }

    /// A JSON string literal with the escapes RFC 8259 §7 requires.
    public static func quoted(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
        return output
    }
}
