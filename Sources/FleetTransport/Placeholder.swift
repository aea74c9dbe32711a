// Placeholder until this layer lands.
enum FleetTransportPlaceholder {}
