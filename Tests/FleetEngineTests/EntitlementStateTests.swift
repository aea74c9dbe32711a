import Testing
@testable import FleetEngine

/// A subscriber owed streams 10 (persistent) and 11 (clean) under its own key, and stream 12 under its shared
/// subscription's group key; the published counts are set by hand.
private struct Subscriber {
    let state = EntitlementState(streams: [10, 11, 12], persistent: [true, false, false],
                                 keys: [5 << 32, 5 << 32, Engine.groupDeliveryKey(1)])
    var published: [UInt32: UInt64] = [10: 0, 11: 0, 12: 0]
    /// Windows closed so far, in order, with their keys.
    var closed: [(key: UInt64, window: EntitlementWindow)] = []

    mutating func subscribed() {
        let counts = published
        state.subscribed { counts[$0]! }
    }

    mutating func linkCut(runEnding: Bool = false) {
        let counts = published
        var closed: [(key: UInt64, window: EntitlementWindow)] = []
        state.linkCut(keepPersistent: !runEnding, published: { counts[$0]! }, close: { closed.append(($0, $1)) })
        self.closed += closed
    }

    mutating func sessionLost() {
        var closed: [(key: UInt64, window: EntitlementWindow)] = []
        state.sessionLost { closed.append(($0, $1)) }
        self.closed += closed
    }

    func open(groups: Bool) -> [String] {
        var windows: [String] = []
        state.forEachOpenWindow(groups: groups) { key, stream, start in windows.append("\(key >> 32 & 0xFFFF):\(stream) from \(start)") }
        return windows
    }

    func closedWindows() -> [String] {
        closed.map { "\($0.key >> 32 & 0xFFFF):\($0.key & 0xFFFF_FFFF) \($0.window.start)..<\($0.window.end)" }
    }
}

@Suite("EntitlementState")
struct EntitlementStateTests {
    @Test("SUBACK opens every window at the published count; a cut closes clean ones, keeps persistent ones open")
    func cutAndResume() {
        var subscriber = Subscriber()
        subscriber.published = [10: 3, 11: 7, 12: 1]
        subscriber.subscribed()
        #expect(subscriber.open(groups: false) == ["5:10 from 3", "5:11 from 7"])
        #expect(subscriber.open(groups: true) == ["1:12 from 1"])
        subscriber.published = [10: 5, 11: 9, 12: 4]
        subscriber.linkCut()
        #expect(subscriber.closedWindows() == ["5:11 7..<9", "1:12 1..<4"])
        #expect(subscriber.open(groups: false) == ["5:10 from 3"])
        // The broker kept the session: the persistent window goes on; SUBACK again opens the others from now.
        subscriber.published = [10: 8, 11: 12, 12: 6]
        subscriber.subscribed()
        #expect(subscriber.open(groups: false) == ["5:10 from 3", "5:11 from 12"])
        #expect(subscriber.open(groups: true) == ["1:12 from 6"])
    }

    @Test("a reconnect that finds no session ends the persistent window where the link was cut")
    func sessionLost() {
        var subscriber = Subscriber()
        subscriber.published = [10: 2, 11: 2, 12: 2]
        subscriber.subscribed()
        subscriber.published = [10: 6, 11: 6, 12: 6]
        subscriber.linkCut()
        subscriber.closed = []
        subscriber.published = [10: 9, 11: 9, 12: 9]
        subscriber.sessionLost()
        #expect(subscriber.closedWindows() == ["5:10 2..<6"])
        #expect(subscriber.open(groups: false) == [])
        // Nothing is left open to close twice.
        subscriber.sessionLost()
        #expect(subscriber.closedWindows() == ["5:10 2..<6"])
    }

    @Test("at the end of the run every window closes at the published count, persistent ones too")
    func runEnding() {
        var subscriber = Subscriber()
        subscriber.published = [10: 1, 11: 1, 12: 1]
        subscriber.subscribed()
        subscriber.published = [10: 4, 11: 5, 12: 6]
        subscriber.linkCut(runEnding: true)
        #expect(subscriber.closedWindows() == ["5:10 1..<4", "5:11 1..<5", "1:12 1..<6"])
        #expect(subscriber.open(groups: false) == [] && subscriber.open(groups: true) == [])
    }
}
