/// What a PUBLISH one client received is to the run's accounting, decided from its topic, payload and RETAIN
/// flag alone: a request to answer, another run's message, a retained message handed over because of a
/// SUBSCRIBE, the response to one of the client's requests, a message of a stream without delivery accounting,
/// or a delivery to record under its (subscriber, stream) key.
///
/// Pure: no lane, no metrics, no clock reads (the receive time comes in). The session sink (`LaneSessionSink`)
/// makes one per session call, asks it about each message and counts what it answers; the header is read in
/// place from the payload, so nothing is copied or allocated per message.
struct ArrivalClassifier {
    /// The run id written into every header; arrivals with another one are foreign.
    let runID: UInt64
    /// The client's command topic when its fleet answers requests, else empty.
    let commandTopic: [UInt8]
    /// Global ids of the client's own streams, and which of them are request streams (by stream index) with
    /// their timeouts in ns (0: none). Empty when the fleet makes no requests.
    let ownStreams: Range<UInt32>
    let isRequestStream: [Bool]
    let requestTimeouts: [UInt64]
    /// Per global stream id: false for streams without delivery accounting (fixed text, requests); ids beyond
    /// it are accounted.
    let streamTracked: [Bool]
    /// High 32 bits of the delivery keys (`SimulatedClient.deliveryKey`), or the routes of a client mixing
    /// shared and plain subscriptions (`SimulatedClient.deliveryRoutes`).
    let subscriberKey: UInt64
    let deliveryRoutes: DeliveryRoutes?
    /// Some subscription of the client keeps the RETAIN flag of forwarded messages (MQTT 5 Retain As
    /// Published), and when the client last wrote a SUBSCRIBE.
    let retainAsPublished: Bool
    let subscribeSentAt: UInt64

    enum Arrival: Equatable {
        /// A request on the client's command topic: answer it (whoever sent it); count it received when it is
        /// this run's (`ours`), else foreign.
        case request(ours: Bool)
        /// Not this run's: no header, or another run's (or a header from before run ids).
        case foreign
        /// Stored by the broker and handed over because of a SUBSCRIBE: not a delivery of the stream as it is
        /// published, so outside the exactly-once accounting and the latency histograms.
        case retainedOnSubscribe
        /// A reply to one of the client's requests (its payload echoes the request's header): a round trip,
        /// not an end-to-end delivery. `late`: after the request stream's timeout.
        case response(EndToEndHeader, late: Bool)
        /// Received, and nothing more: someone else's request or reply (3.1.1 reply filters catch every
        /// requester's replies), or a stream without delivery accounting.
        case untracked
        /// A delivery of stream `header.streamID` to record under `key` (subscriber or group | stream id):
        /// end-to-end latency and the tracker's sequence.
        case delivery(EndToEndHeader, key: UInt64)
    }

    /// What the message is. `now`: when it was read.
    @inline(__always)
    func classify(topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, retain: Bool, now: UInt64) -> Arrival {
        if !commandTopic.isEmpty, topic.elementsEqual(commandTopic) {
            if let header = try? EndToEndHeader.read(from: payload), header.runID == runID { return .request(ours: true) }
            return .request(ours: false)
        }
        guard let header = try? EndToEndHeader.read(from: payload) else { return .foreign }
        if retain, retainedOnSubscribe(header) { return .retainedOnSubscribe }
        guard header.runID == runID else { return .foreign }
        if ownStreams.contains(header.streamID), isRequestStream[Int(header.streamID - ownStreams.lowerBound)] {
            let timeout = requestTimeouts[Int(header.streamID - ownStreams.lowerBound)]
            return .response(header, late: timeout > 0 && now &- header.intendedTime > timeout)
        }
        if Int(header.streamID) < streamTracked.count, !streamTracked[Int(header.streamID)] { return .untracked }
        return .delivery(header, key: (deliveryRoutes?.key(topic: topic) ?? subscriberKey) | UInt64(header.streamID))
    }

    /// Whether a message with the RETAIN flag was delivered because of a subscription rather than forwarded as
    /// published. Without Retain As Published the broker clears the flag on forwarded messages (3.1.1 §3.3.1.3,
    /// 5.0 §3.3.1.3), so the flag alone says it; with it, only a message of this run sent before the client's
    /// latest SUBSCRIBE can be (another run's cannot be told apart and stays foreign).
    @inline(__always)
    private func retainedOnSubscribe(_ header: EndToEndHeader) -> Bool {
        guard retainAsPublished else { return true }
        return header.runID == runID && header.sentTime < subscribeSentAt
    }
}
