import FleetJSON

/// A `--set path=value` override applied to the JSON tree before decoding. Path components are object keys;
/// in an array they pick the element whose "name" is the component (`fleets.vehicles.count`) or a 0-based index.
/// The value is parsed as JSON when it parses (`5000`, `true`, `{"type":"none"}`), else taken as a string (`30s`).
public struct ScenarioOverride: Equatable, Sendable {
    public var argument: String
    public var components: [String]
    public var value: JSONValue

    public struct Failure: Error, Equatable, Sendable {
        public var path: JSONPath
        public var message: String
    }

    public static func parse(_ argument: String) -> Result<ScenarioOverride, Failure> {
        guard let equals = argument.firstIndex(of: "=") else {
            return .failure(Failure(path: .root, message: "expected path=value, e.g. fleets.vehicles.count=5000"))
        }
        let pathText = argument[..<equals]
        let valueText = String(argument[argument.index(after: equals)...])
        let components = pathText.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if pathText.isEmpty || components.contains(where: \.isEmpty) {
            return .failure(Failure(path: .root, message: "expected a dotted path before '=', e.g. fleets.vehicles.count=5000"))
        }
        let value = (try? JSONDocument.parse(text: valueText, file: "--set").root) ?? .string(valueText)
        return .success(ScenarioOverride(argument: argument, components: components, value: value))
    }

    /// Replaces (or, for the last component of an existing object, adds) the value; returns its JSON path.
    public func apply(to root: inout JSONValue) -> Result<JSONPath, Failure> {
        var path = JSONPath.root
        return Self.set(&root, components[...], value: value, path: &path).map { path }
    }

    static func set(_ node: inout JSONValue, _ rest: ArraySlice<String>, value: JSONValue, path: inout JSONPath) -> Result<Void, Failure> {
        guard let component = rest.first else {
            node = value
            return .success(())
        }
        switch node {
        case .object(var members):
            if let index = members.firstIndex(where: { $0.key == component }) {
                path = path.appending(component)
                let result = set(&members[index].value, rest.dropFirst(), value: value, path: &path)
                node = .object(members)
                return result
            }
            let missing = path.appending(component)
            if rest.count == 1 {
                members.append(JSONMember(component, value))
                node = .object(members)
                path = missing
                return .success(())
            }
            var message = "no key '\(component)' at \(path)"
            if let suggestion = closestMatch(to: component, among: members.map(\.key)) { message += "; did you mean '\(suggestion)'?" }
            return .failure(Failure(path: missing, message: message))
        case .array(var elements):
            let names = elements.compactMap { $0["name"]?.stringValue }
            var found = elements.firstIndex(where: { $0["name"]?.stringValue == component })
            if found == nil, let number = Int(component), number >= 0, number < elements.count { found = number }
            guard let index = found else {
                var message = "no element named '\(component)' in \(path)"
                if let suggestion = closestMatch(to: component, among: names) {
                    message += "; did you mean '\(suggestion)'?"
                } else if !names.isEmpty {
                    message += " (names: \(names.joined(separator: ", ")))"
                } else {
                    message += " (it has \(elements.count) elements; use an index from 0)"
                }
                return .failure(Failure(path: path.appending(component), message: message))
            }
            path = path.appending(index: index)
            let result = set(&elements[index], rest.dropFirst(), value: value, path: &path)
            node = .array(elements)
            return result
        default:
            return .failure(Failure(path: path.appending(component),
                message: "\(path) is \(node.kindDescription), not an object or array, so it has no '\(component)'"))
        }
    }
}
