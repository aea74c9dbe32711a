import FleetJSON

/// Makes a scenario's JSON safe to copy into reports: literal passwords are masked; `${ENV_VAR}` references stay,
/// because they name a variable, not its value (values are only ever substituted into the decoded `SecretText`).
public enum ScenarioRedaction {
    public static let mask = "********"

    /// The tree with every `fleets[*].credentials.password` that is not exactly one `${NAME}` reference masked.
    public static func redact(_ root: JSONValue) -> JSONValue {
        guard case .object(var members) = root,
            let fleetsIndex = members.firstIndex(where: { $0.key == "fleets" }),
            case .array(var fleets) = members[fleetsIndex].value
        else { return root }
        for fleetIndex in fleets.indices {
            guard case .object(var fleet) = fleets[fleetIndex],
                let credentialsIndex = fleet.firstIndex(where: { $0.key == "credentials" }),
                case .object(var credentials) = fleet[credentialsIndex].value
            else { continue }
            for index in credentials.indices where credentials[index].key == "password" {
                if case .string(let text) = credentials[index].value, isOnlyReference(text) { continue }
                credentials[index].value = .string(mask)
            }
            fleet[credentialsIndex].value = .object(credentials)
            fleets[fleetIndex] = .object(fleet)
        }
        members[fleetsIndex].value = .array(fleets)
        return .object(members)
    }

    public static func isOnlyReference(_ text: String) -> Bool {
        text.hasPrefix("${") && text.hasSuffix("}") && text.dropFirst(2).firstIndex(of: "$") == nil
            && text.dropFirst(2).dropLast().firstIndex(of: "}") == nil
    }
}
