/// The inputs fuzzed with libFuzzer (FuzzTesting/, `scripts/fuzz`), and the corpus replay of the normal test suite.
/// Each target takes arbitrary bytes and must return without trapping; a broken invariant is a
/// `preconditionFailure`, which libFuzzer reports as a crash with the input that caused it.
public enum FuzzTarget: String, CaseIterable, Sendable {
    case mqttDecoderV311 = "mqtt-decoder-v311"
    case mqttDecoderV5 = "mqtt-decoder-v5"
    case webSocketFrames = "websocket-frames"
    case sessionV311 = "session-v311"
    case sessionV5 = "session-v5"
    case scenario = "scenario"
    case threshold = "threshold"
    case reportJSON = "report-json"
    case histogramLog = "hlog"

    /// Runs one input.
    public func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .mqttDecoderV311: MQTTDecoderFuzz.run(bytes, version: .v3_1_1)
        case .mqttDecoderV5: MQTTDecoderFuzz.run(bytes, version: .v5)
        case .webSocketFrames: WebSocketFrameFuzz.run(bytes)
        case .sessionV311: SessionFuzz.run(bytes, version: .v3_1_1)
        case .sessionV5: SessionFuzz.run(bytes, version: .v5)
        case .scenario: TextInputFuzz.scenario(bytes)
        case .threshold: TextInputFuzz.threshold(bytes)
        case .reportJSON: TextInputFuzz.reportJSON(bytes)
        case .histogramLog: TextInputFuzz.histogramLog(bytes)
        }
    }

    public func run(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { run($0) }
    }
}
