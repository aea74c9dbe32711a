// Placeholder until this layer lands.
enum MQTTSessionPlaceholder {}
