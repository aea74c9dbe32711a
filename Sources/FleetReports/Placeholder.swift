// Placeholder until this layer lands.
enum FleetReportsPlaceholder {}
