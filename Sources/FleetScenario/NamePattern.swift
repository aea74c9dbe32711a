import FleetPayload
/// A placeholder inside a client-id, topic, username or file pattern.
public enum NamePlaceholder: String, Equatable, Hashable, Sendable, CaseIterable {
    /// The client id (after its own pattern was expanded).
    case clientID = "client_id"
    /// The client's index in its fleet, from 0.
    case index = "i"
    /// The fleet name.
    case fleet = "fleet"
    /// In a request topic: the client id of the target client in the target fleet.
    case targetClientID = "target_client_id"
    /// In a request topic: the index of the target client in the target fleet.
    case targetIndex = "target_i"
}

/// A text with placeholders such as `veh-{i:05}` or `fleet/{fleet}/{client_id}/telemetry`.
/// `{i:05}` pads with zeros to 5 digits; `{{` and `}}` write literal braces.
public struct NamePattern: Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Segment: Equatable, Hashable, Sendable {
        case literal(String)
        /// A placeholder; `width` > 0 pads numbers with zeros.
        case placeholder(NamePlaceholder, width: Int)
    }

    public var source: String
    public var segments: [Segment]

    public var description: String { source }

    /// Which placeholders appear.
    public var placeholders: Set<NamePlaceholder> {
        Set(segments.compactMap { if case .placeholder(let name, _) = $0 { return name } else { return nil } })
    }

    /// Parses a pattern allowing only `allowed` placeholders. Errors carry the 0-based character offset.
    public static func parse(_ text: String, allowed: Set<NamePlaceholder>) -> Result<NamePattern, PatternError> {
        var segments: [Segment] = []
        var literal = ""
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character == "{", index + 1 < characters.count, characters[index + 1] == "{" {
                literal.append("{")
                index += 2
                continue
            }
            if character == "}", index + 1 < characters.count, characters[index + 1] == "}" {
                literal.append("}")
                index += 2
                continue
            }
            if character == "}" {
                return .failure(PatternError(offset: index, message: "unmatched '}' (write '}}' for a literal brace)"))
            }
            guard character == "{" else {
                literal.append(character)
                index += 1
                continue
            }
            guard let close = characters[(index + 1)...].firstIndex(of: "}") else {
                return .failure(PatternError(offset: index, message: "unclosed '{' (write '{{' for a literal brace)"))
            }
            let inside = String(characters[(index + 1)..<close])
            let parts = inside.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let names = allowed.map(\.rawValue).sorted()
            guard let placeholder = NamePlaceholder(rawValue: name), allowed.contains(placeholder) else {
                var message = "unknown placeholder '{\(name)}'"
                if let suggestion = closestMatch(to: name, among: names) {
                    message += "; did you mean '{\(suggestion)}'?"
                } else {
                    message += "; expected one of: " + names.map { "{\($0)}" }.joined(separator: ", ")
                }
                return .failure(PatternError(offset: index, message: message))
            }
            var width = 0
            if parts.count == 2 {
                let format = String(parts[1])
                guard placeholder == .index || placeholder == .targetIndex,
                    format.count >= 2, format.hasPrefix("0"), let parsed = Int(format.dropFirst()), parsed > 0, parsed <= 20
                else {
                    return .failure(PatternError(offset: index, message:
                        "invalid format '{\(inside)}'; only {i:0N} and {target_i:0N} with N from 1 to 20 are supported"))
                }
                width = parsed
            }
            if !literal.isEmpty {
                segments.append(.literal(literal))
                literal = ""
            }
            segments.append(.placeholder(placeholder, width: width))
            index = close + 1
        }
        if !literal.isEmpty { segments.append(.literal(literal)) }
        return .success(NamePattern(source: text, segments: segments))
    }

    /// Expands the pattern for one client (not on the hot path: topics are expanded once per client).
    public func render(clientID: String = "", index: Int = 0, fleet: String = "", targetClientID: String = "", targetIndex: Int = 0) -> String {
        var output = ""
        for segment in segments {
            switch segment {
            case .literal(let text): output += text
            case .placeholder(let name, let width):
                switch name {
                case .clientID: output += clientID
                case .fleet: output += fleet
                case .targetClientID: output += targetClientID
                case .index: output += padded(index, width)
                case .targetIndex: output += padded(targetIndex, width)
                }
            }
        }
        return output
    }

    func padded(_ number: Int, _ width: Int) -> String {
        let digits = String(number)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A pattern or template error at a 0-based character offset of the string.
public struct PatternError: Error, Equatable, Sendable {
    public var offset: Int
    public var message: String
}
