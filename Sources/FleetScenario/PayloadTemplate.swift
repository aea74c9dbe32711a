import FleetJSON
@_exported import FleetPayload

// Payload templates are compiled by FleetPayload, the one compiler the engine renders from; this layer only walks
// JSON templates (it knows FleetJSON) and hands each string to the compiler with its JSON-string context.

extension PayloadTemplate {
    /// Compiles a JSON template; errors name the JSON path of the string that holds the bad generator.
    static func compileJSON(_ value: JSONValue, path: JSONPath) -> (PayloadTemplate?, (JSONPath, PayloadTemplateError)?) {
        var builder = Builder()
        if let failure = builder.appendJSON(value, path: path) { return (nil, failure) }
        return (PayloadTemplate(segments: builder.finish(), isJSON: true), nil)
    }
}

extension PayloadTemplate.Builder {
    mutating func appendJSON(_ value: JSONValue, path: JSONPath) -> (JSONPath, PayloadTemplateError)? {
        switch value {
        case .object(let members):
            literal("{")
            for (offset, member) in members.enumerated() {
                if offset > 0 { literal(",") }
                literal(JSONWriter.quoted(member.key) + ":")
                if let failure = appendJSON(member.value, path: path.appending(member.key)) { return failure }
            }
            literal("}")
        case .array(let elements):
            literal("[")
            for (offset, element) in elements.enumerated() {
                if offset > 0 { literal(",") }
                if let failure = appendJSON(element, path: path.appending(index: offset)) { return failure }
            }
            literal("]")
        case .string(let text):
            // A lone numeric generator becomes a bare JSON number (a vehicle's boolean field a bare JSON boolean).
            if text.hasPrefix("{"), text.hasSuffix("}"), !text.hasPrefix("{{"),
                text.dropFirst().firstIndex(of: "{") == nil,
                case .success(let alone) = Self.parseGenerator(String(text.dropFirst().dropLast()), offset: 0),
                alone.isBareJSONValue
            {
                generator(alone, inJSONString: false)
                return nil
            }
            literal("\"")
            if let error = appendTemplateString(text, inJSONString: true) { return (path, error) }
            literal("\"")
        default:
            literal(JSONWriter.string(from: value, style: .compact))
        }
        return nil
    }
}
