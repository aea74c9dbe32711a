// Placeholder until this layer lands.
enum FleetMetricsPlaceholder {}
