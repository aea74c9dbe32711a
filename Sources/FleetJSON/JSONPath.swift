/// One step into a JSON tree: an object key or an array index.
public enum JSONPathComponent: Hashable, Sendable {
    case key(String)
    case index(Int)
}

/// The path of a value from the document root, written as `fleets[0].will.topic` in error messages.
public struct JSONPath: Hashable, Sendable, CustomStringConvertible {
    public var components: [JSONPathComponent]

    public static let root = JSONPath(components: [])

    public init(components: [JSONPathComponent]) {
        self.components = components
    }

    public func appending(_ key: String) -> JSONPath {
        JSONPath(components: components + [.key(key)])
    }

    public func appending(index: Int) -> JSONPath {
        JSONPath(components: components + [.index(index)])
    }

    public var parent: JSONPath? {
        components.isEmpty ? nil : JSONPath(components: Array(components.dropLast()))
    }

    /// Whether `self` equals `other` or lies inside it.
    public func hasPrefix(_ other: JSONPath) -> Bool {
        components.count >= other.components.count
            && Array(components.prefix(other.components.count)) == other.components
    }

    /// `$` for the root; keys that are not plain identifiers are written as `["a.b"]` so the path stays unambiguous.
    public var description: String {
        if components.isEmpty { return "$" }
        var text = ""
        for component in components {
            switch component {
            case .index(let index):
                text += "[\(index)]"
            case .key(let key):
                if Self.isPlainIdentifier(key) {
                    text += text.isEmpty ? key : "." + key
                } else {
                    text += "[" + JSONWriter.quoted(key) + "]"
                }
            }
        }
        return text
    }

    static func isPlainIdentifier(_ key: String) -> Bool {
        guard !key.isEmpty else { return false }
        return key.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F || byte == 0x2D
        }
    }
}
