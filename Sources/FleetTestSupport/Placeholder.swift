// Placeholder until this layer lands.
enum FleetTestSupportPlaceholder {}
