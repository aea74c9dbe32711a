import MQTTCodec
@testable import MQTTSession

/// Records everything the session reports, copying received topics and payloads.
struct EventRecorder: MQTTSessionEventHandler {
    struct Message: Equatable {
        var topic: String
        var payload: [UInt8]
        var qos: MQTTQoS
        var retain: Bool
        var dup: Bool
        var packetID: UInt16
        var topicAlias: UInt16
    }

    var events: [MQTTSessionEvent] = []
    var messages: [Message] = []

    mutating func sessionEvent(_ event: MQTTSessionEvent) { events.append(event) }

    mutating func messageReceived(
        _ message: MQTTReceivedMessage, topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer
    ) {
        messages.append(Message(
            topic: String(decoding: topic, as: UTF8.self), payload: Array(payload), qos: message.qos,
            retain: message.retain, dup: message.dup, packetID: message.packetID, topicAlias: message.topicAlias))
    }
}

/// A session with its decoder, output buffer and recorder: feed bytes, take output, take events.
struct Harness {
    var session: MQTTClientSession
    var decoder: MQTTDecoder
    var output = MQTTByteBuffer(capacity: 64)
    var recorder = EventRecorder()

    init(_ settings: MQTTSessionSettings, clientID: String = "c1", keepsStatistics: Bool = true,
         keepsSubscriptions: Bool = true, windowStorage: MQTTWindowStoragePool? = nil) {
        session = MQTTClientSession(settings: settings, clientID: clientID, keepsStatistics: keepsStatistics,
                                    keepsSubscriptions: keepsSubscriptions, windowStorage: windowStorage)
        decoder = MQTTDecoder(version: settings.version, initialCapacity: 64)
    }

    /// Bytes written since the last call.
    mutating func sent() -> [UInt8] {
        let bytes = output.readableBytes
        output.clear()
        return bytes
    }

    /// Events reported since the last call.
    mutating func takeEvents() -> [MQTTSessionEvent] {
        let events = recorder.events
        recorder.events.removeAll()
        return events
    }

    mutating func connect(at now: UInt64) { session.connect(now: now, into: &output) }

    mutating func feed(_ bytes: [UInt8], at now: UInt64) {
        decoder.feed(bytes)
        session.receive(from: &decoder, now: now, output: &output, events: &recorder)
    }

    mutating func tick(_ now: UInt64) { session.checkDeadlines(now: now, output: &output, events: &recorder) }

    mutating func lose(at now: UInt64) {
        session.connectionLost(now: now, events: &recorder)
        decoder = MQTTDecoder(version: session.settings.version, initialCapacity: 64)
    }

    @discardableResult
    mutating func publish(_ topic: String, _ payload: [UInt8], qos: MQTTQoS, retain: Bool = false,
                          intendedAt: UInt64 = 0, tag: UInt64 = 0, at now: UInt64) -> MQTTPublishResult {
        let name = try! MQTTTopicName(topic)
        return payload.withUnsafeBytes { bytes in
            session.publish(topic: name, qos: qos, retain: retain, payload: bytes, intendedAt: intendedAt, tag: tag,
                            now: now, into: &output)
        }
    }

    /// CONNECT at `now`, then a CONNACK with the given bytes; clears output and events.
    mutating func connected(connAck: [UInt8], at now: UInt64 = 0) {
        connect(at: now)
        feed(connAck, at: now)
        _ = sent()
        _ = takeEvents()
    }
}

let second: UInt64 = 1_000_000_000
let ms: UInt64 = 1_000_000

/// CONNACK accepted, no session present: 3.1.1 and 5.0 (empty properties).
let connAckV3: [UInt8] = [0x20, 0x02, 0x00, 0x00]
let connAckV5: [UInt8] = [0x20, 0x03, 0x00, 0x00, 0x00]
