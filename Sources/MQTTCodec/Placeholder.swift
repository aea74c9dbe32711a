// Placeholder until this layer lands.
enum MQTTCodecPlaceholder {}
