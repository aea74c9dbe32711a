// Placeholder until this layer lands.
enum FleetScenarioPlaceholder {}
