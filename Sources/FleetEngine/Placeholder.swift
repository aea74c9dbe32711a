// Placeholder until this layer lands.
enum FleetEnginePlaceholder {}
