// Placeholder until this layer lands.
enum FleetBrokerPlaceholder {}
