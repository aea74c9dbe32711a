// Placeholder until this layer lands.
enum FleetJSONPlaceholder {}
