import FleetPayload
import FleetJSON

/// One problem found in a scenario: where, which JSON path, and what was expected.
/// Printed as `file:line:column: path: message`; for a value that came from `--set`, the location is the
/// `--set` argument instead of a file position.
public struct ScenarioDiagnostic: Equatable, Sendable, CustomStringConvertible {
    /// `file:line:column` or `--set fleets.vehicles.count=abc`.
    public var location: String
    public var path: JSONPath
    public var message: String

    public init(location: String, path: JSONPath, message: String) {
        self.location = location
        self.path = path
        self.message = message
    }

    public var description: String { "\(location): \(path): \(message)" }
}

/// Every problem of one scenario, in file order of discovery. Thrown by `Scenario.decode`.
public struct ScenarioError: Error, Equatable, Sendable, CustomStringConvertible {
    public var diagnostics: [ScenarioDiagnostic]

    public init(diagnostics: [ScenarioDiagnostic]) {
        self.diagnostics = diagnostics
    }

    /// One diagnostic per line.
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// Collects diagnostics while a scenario is decoded so all errors of a file are reported at once.
final class DecodingContext {
    let document: JSONDocument
    /// Paths replaced by `--set`, with the argument as the user wrote it.
    let overriddenPaths: [(path: JSONPath, argument: String)]
    let environment: [String: String]
    /// When set, every diagnostic is located here (values from the command line have no file position).
    var fixedLocation: String?
    private var entries: [(order: (Int, Int, Int), diagnostic: ScenarioDiagnostic)] = []

    /// Diagnostics in file order (line, column), then those from `--set`, each group in discovery order.
    var diagnostics: [ScenarioDiagnostic] {
        entries.enumerated().sorted { left, right in
            let a = left.element.order
            let b = right.element.order
            if a != b { return a < b }
            return left.offset < right.offset
        }.map(\.element.diagnostic)
    }

    var hasErrors: Bool { !entries.isEmpty }

    init(document: JSONDocument, overriddenPaths: [(path: JSONPath, argument: String)], environment: [String: String]) {
        self.document = document
        self.overriddenPaths = overriddenPaths
        self.environment = environment
    }

    func location(of path: JSONPath, atKey: Bool = false, characterOffset: Int? = nil) -> (text: String, order: (Int, Int, Int)) {
        if let fixedLocation { return (fixedLocation, (Int.max, Int.max, 0)) }
        if let overrideIndex = overriddenPaths.lastIndex(where: { path.hasPrefix($0.path) }) {
            return ("--set \(overriddenPaths[overrideIndex].argument)", (Int.max, overrideIndex, 0))
        }
        let positions = document.positions
        let position: JSONPosition
        if atKey, let keyPosition = positions.keyPosition(of: path) {
            position = keyPosition
        } else if let characterOffset,
            let inString = positions.position(ofCharacter: characterOffset, inStringAt: path)
        {
            position = inString
        } else {
            position = document.position(of: path)
        }
        return ("\(document.file):\(position.line):\(position.column)", (position.line, position.column, 0))
    }

    /// The value text of the last `--set` that replaced exactly this path (`fleets.a.protocol=3.1` → `3.1`).
    func overrideText(at path: JSONPath) -> String? {
        guard let argument = overriddenPaths.last(where: { $0.path == path })?.argument,
            let equals = argument.firstIndex(of: "=")
        else { return nil }
        return String(argument[argument.index(after: equals)...])
    }

    func error(_ path: JSONPath, _ message: String, atKey: Bool = false, characterOffset: Int? = nil) {
        let found = location(of: path, atKey: atKey, characterOffset: characterOffset)
        entries.append((found.order, ScenarioDiagnostic(location: found.text, path: path, message: message)))
    }

    /// A diagnostic about a `--set` argument itself (its path does not exist).
    func overrideError(argument: String, path: JSONPath, message: String) {
        entries.append(((Int.max, -1, 0), ScenarioDiagnostic(location: "--set \(argument)", path: path, message: message)))
    }

    func expected(_ what: String, _ path: JSONPath, got value: JSONValue) {
        error(path, "expected \(what), got \(value.kindDescription)")
    }

    /// Reads an object's members, checks for unknown keys (with a did-you-mean), and hands out values by key.
    func object(_ value: JSONValue, _ path: JSONPath, allowed: [String], what: String = "an object") -> ObjectReader? {
        guard case .object(let members) = value else {
            expected(what, path, got: value)
            return nil
        }
        for member in members where !allowed.contains(member.key) {
            var message = "unknown key '\(member.key)'"
            if let suggestion = closestMatch(to: member.key, among: allowed) {
                message += "; did you mean '\(suggestion)'?"
            } else {
                message += "; expected one of: " + allowed.joined(separator: ", ")
            }
            error(path.appending(member.key), message, atKey: true)
        }
        return ObjectReader(members: members, path: path, context: self)
    }
}

/// Access to one object's members during decoding.
struct ObjectReader {
    let members: [JSONMember]
    let path: JSONPath
    unowned let context: DecodingContext

    func value(_ key: String) -> JSONValue? {
        members.first(where: { $0.key == key })?.value
    }

    func has(_ key: String) -> Bool { value(key) != nil }

    /// Decodes a member when present (nil when absent or invalid; invalid values have been reported).
    func optional<T>(_ key: String, _ decode: (JSONValue, JSONPath) -> T?) -> T? {
        guard let found = value(key) else { return nil }
        return decode(found, path.appending(key))
    }

    /// Decodes a member that must be present; reports a missing key at the object's position.
    func required<T>(_ key: String, _ what: String, _ decode: (JSONValue, JSONPath) -> T?) -> T? {
        guard let found = value(key) else {
            context.error(path, "missing required key '\(key)' (\(what))")
            return nil
        }
        return decode(found, path.appending(key))
    }
}
