/// The version printed by `fleetbench --version` and written into every report.
public enum FleetVersion {
    public static let current = "0.1.0"
}
