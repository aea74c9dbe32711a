import Testing
@testable import FleetEngine

private let ms: UInt64 = 1_000_000
private let run: UInt64 = 0xA11CE

/// A subscriber's classifier: client key 5 << 32, streams 0...9 of the run, stream 3 untracked; the client's
/// own streams are 20...21 with 21 a request stream (timeout 50 ms); its command topic `cmd/5`.
private func classifier(retainAsPublished: Bool = false, subscribeSentAt: UInt64 = 0, routes: DeliveryRoutes? = nil,
                        commandTopic: String = "cmd/5") -> ArrivalClassifier {
    ArrivalClassifier(
        runID: run, commandTopic: Array(commandTopic.utf8), ownStreams: 20..<22, isRequestStream: [false, true],
        requestTimeouts: [0, 50 * ms], streamTracked: [true, true, true, false, true, true, true, true, true, true],
        subscriberKey: 5 << 32, deliveryRoutes: routes, retainAsPublished: retainAsPublished,
        subscribeSentAt: subscribeSentAt)
}

private func binary(_ header: EndToEndHeader, size: Int = 64) -> [UInt8] {
    var bytes: [UInt8] = []
    header.appendBinary(to: &bytes)
    bytes += Array(repeating: 0, count: max(0, size - bytes.count))
    return bytes
}

private func classify(_ classifier: ArrivalClassifier, topic: String, payload: [UInt8], retain: Bool = false,
                      now: UInt64 = 1_000 * ms) -> ArrivalClassifier.Arrival {
    let topic = Array(topic.utf8)
    return topic.withUnsafeBytes { topic in
        payload.withUnsafeBytes { payload in
            classifier.classify(topic: topic, payload: payload, retain: retain, now: now)
        }
    }
}

@Suite("ArrivalClassifier")
struct ArrivalClassifierTests {
    let header = EndToEndHeader(streamID: 7, sequence: 42, intendedTime: 900 * ms, runID: run, sentTime: 901 * ms)

    @Test("a delivery of this run is recorded under the subscriber's key and the stream id")
    func delivery() {
        #expect(classify(classifier(), topic: "cars/7", payload: binary(header))
            == .delivery(header, key: 5 << 32 | 7))
    }

    @Test("the text header of a JSON payload is read too")
    func textHeader() {
        var payload = Array("{".utf8)
        header.appendTextField(to: &payload, trailingComma: true)
        payload += Array("\"speed\":12}".utf8)
        #expect(classify(classifier(), topic: "cars/7", payload: payload) == .delivery(header, key: 5 << 32 | 7))
    }

    @Test("no header, another run's, or a version 1 header: foreign")
    func foreign() {
        #expect(classify(classifier(), topic: "cars/7", payload: Array("hello".utf8)) == .foreign)
        #expect(classify(classifier(), topic: "cars/7", payload: []) == .foreign)
        var other = header
        other.runID = run + 1
        #expect(classify(classifier(), topic: "cars/7", payload: binary(other)) == .foreign)
        // Version 1: 24 bytes, no run id (reads as run 0).
        let version1: [UInt8] = [0xFB, 0x01, 0, 0, 0, 0, 0, 7] + Array(repeating: 0, count: 16)
        #expect(classify(classifier(), topic: "cars/7", payload: version1) == .foreign)
    }

    @Test("RETAIN without Retain As Published: handed over on subscribe, whatever run it is from")
    func retainedOnSubscribe() {
        #expect(classify(classifier(), topic: "cars/7", payload: binary(header), retain: true) == .retainedOnSubscribe)
        var other = header
        other.runID = 99
        #expect(classify(classifier(), topic: "cars/7", payload: binary(other), retain: true) == .retainedOnSubscribe)
        // Without a header it is foreign, retained or not.
        #expect(classify(classifier(), topic: "cars/7", payload: [1, 2, 3], retain: true) == .foreign)
    }

    @Test("RETAIN with Retain As Published: only this run's messages sent before the SUBSCRIBE were handed over")
    func retainAsPublished() {
        let subscribedAfter = classifier(retainAsPublished: true, subscribeSentAt: 901 * ms + 1)
        #expect(classify(subscribedAfter, topic: "cars/7", payload: binary(header), retain: true) == .retainedOnSubscribe)
        let subscribedBefore = classifier(retainAsPublished: true, subscribeSentAt: 901 * ms)
        #expect(classify(subscribedBefore, topic: "cars/7", payload: binary(header), retain: true)
            == .delivery(header, key: 5 << 32 | 7))
        var other = header
        other.runID = 99
        #expect(classify(subscribedAfter, topic: "cars/7", payload: binary(other), retain: true) == .foreign)
    }

    @Test("a stream without delivery accounting is received and nothing more; ids beyond the table are accounted")
    func untracked() {
        var untracked = header
        untracked.streamID = 3
        #expect(classify(classifier(), topic: "cars/3", payload: binary(untracked)) == .untracked)
        var beyond = header
        beyond.streamID = 10
        #expect(classify(classifier(), topic: "cars/10", payload: binary(beyond)) == .delivery(beyond, key: 5 << 32 | 10))
    }

    @Test("a reply to the client's own request stream is a response, late after the stream's timeout")
    func response() {
        let request = EndToEndHeader(streamID: 21, sequence: 3, intendedTime: 900 * ms, runID: run, sentTime: 900 * ms)
        #expect(classify(classifier(), topic: "replies/5", payload: binary(request), now: 950 * ms)
            == .response(request, late: false))
        #expect(classify(classifier(), topic: "replies/5", payload: binary(request), now: 950 * ms + 1)
            == .response(request, late: true))
        // Its own stream that makes no requests (20), and another client's request stream: not responses.
        var own = request
        own.streamID = 20
        #expect(classify(classifier(), topic: "cars/20", payload: binary(own)) == .delivery(own, key: 5 << 32 | 20))
    }

    @Test("on the command topic: a request, counted as received only when it is this run's")
    func request() {
        #expect(classify(classifier(), topic: "cmd/5", payload: binary(header)) == .request(ours: true))
        #expect(classify(classifier(), topic: "cmd/5", payload: Array("reboot".utf8)) == .request(ours: false))
        var other = header
        other.runID = 1
        #expect(classify(classifier(), topic: "cmd/5", payload: binary(other)) == .request(ours: false))
        // A client that answers no requests: its topics are never commands.
        #expect(classify(classifier(commandTopic: ""), topic: "cmd/5", payload: binary(header))
            == .delivery(header, key: 5 << 32 | 7))
    }

    @Test("a client mixing shared and plain subscriptions keys each arrival by the topic's route")
    func routes() {
        let groupKey = Engine.groupDeliveryKey(2)
        let routes = DeliveryRoutes(plainFilters: ["cars/own/#"], sharedFilters: [("cars/+", groupKey)], ownKey: 5 << 32)
        let mixed = classifier(routes: routes)
        #expect(classify(mixed, topic: "cars/7", payload: binary(header)) == .delivery(header, key: groupKey | 7))
        #expect(classify(mixed, topic: "cars/own/7", payload: binary(header)) == .delivery(header, key: 5 << 32 | 7))
        #expect(classify(mixed, topic: "trucks/7", payload: binary(header)) == .delivery(header, key: 5 << 32 | 7))
    }
}
