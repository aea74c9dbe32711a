/// A JSON value as parsed from a file: objects keep their keys in the order written, and numbers keep whether
/// they were written as integers (`5`) or reals (`5.0`, `5e0`), because a scenario's "count": 5.5 is an error
/// while "fraction": 0.5 is not.
public enum JSONValue: Equatable, Sendable {
    case object([JSONMember])
    case array([JSONValue])
    case string(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    case null

    /// The member value for `key` when this is an object (first match; parsed objects have unique keys).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.key == key })?.value
    }

    /// The members when this is an object.
    public var objectMembers: [JSONMember]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements when this is an array.
    public var arrayElements: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The number as a Double for integers and reals alike.
    public var numberValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .real(let value): return value
        default: return nil
        }
    }

    /// A short description of what this value is, for "expected ..., got ..." messages:
    /// `string "abc"`, `integer 5`, `number 0.5`, `true`, `null`, `object`, `array`.
    public var kindDescription: String {
        switch self {
        case .object: return "object"
        case .array: return "array"
        case .string(let text):
            let shown = text.count > 40 ? String(text.prefix(37)) + "..." : text
            return "string " + JSONWriter.quoted(shown)
        case .integer(let value): return "integer \(value)"
        case .real(let value): return "number \(JSONWriter.formatReal(value))"
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        }
    }
}

/// One key and its value in an object, in file order.
public struct JSONMember: Equatable, Sendable {
    public var key: String
    public var value: JSONValue

    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}
