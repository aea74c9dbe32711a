import FleetTransport
import Testing
@testable import FleetEngine

private let ms: UInt64 = 1_000_000

@Suite("ConnectWindow")
struct ConnectWindowTests {
    @Test("the bound starts at the ceiling and holds the connects in flight to it")
    func bound() {
        var window = ConnectWindow(ceiling: 3)
        #expect(window.limit == 3)
        for _ in 0..<3 {
            #expect(window.mayStart)
            window.started()
        }
        #expect(!window.mayStart)
        #expect(window.inFlight == 3)
        window.finished(startedAt: 0, retransmitted: false, now: 5 * ms)
        #expect(window.mayStart)
        #expect(window.inFlight == 2)
        #expect(window.peakInFlight == 3)
        #expect(window.limit == 3)  // clean connects never raise it past the ceiling
    }

    @Test("a retransmitted connect halves the bound once per episode; failures change nothing")
    func halves() {
        var window = ConnectWindow(ceiling: 64)
        for _ in 0..<64 { window.started() }
        // Three connects of one episode (started before the decrease) retransmitted: one halving.
        window.finished(startedAt: 1 * ms, retransmitted: true, now: 1_000 * ms)
        #expect(window.limit == 32)
        window.finished(startedAt: 2 * ms, retransmitted: true, now: 1_001 * ms)
        window.finished(startedAt: 1_000 * ms, retransmitted: true, now: 1_002 * ms)  // same turn as the decrease
        #expect(window.limit == 32)
        #expect(window.decreases == 1)
        #expect(window.retransmittedConnects == 3)
        // One started after the decrease: a new episode.
        window.finished(startedAt: 1_003 * ms, retransmitted: true, now: 2_000 * ms)
        #expect(window.limit == 16)
        #expect(window.decreases == 2)
        // Failures (unknown) only free their place.
        window.finished(startedAt: 1_004 * ms, retransmitted: nil, now: 2_001 * ms)
        #expect(window.limit == 16)
        #expect(window.inFlight == 59)
        #expect(window.retransmittedConnects == 4)
        #expect(window.lowestLimit == 16)
    }

    @Test("never below 1, and `limit` clean connects in a row raise it by one, back up to the ceiling")
    func recovers() {
        var window = ConnectWindow(ceiling: 4)
        var now: UInt64 = 0
        for _ in 0..<3 {
            now += 10 * ms
            window.started()
            window.finished(startedAt: now - 1, retransmitted: true, now: now)
        }
        #expect(window.limit == 1)  // 4 → 2 → 1 → 1
        #expect(window.decreases == 3)
        #expect(window.lowestLimit == 1)
        // 1 clean connect raises 1 → 2, then 2 → 3, then 3 more → 4; more stay at 4.
        var limits: [Int] = []
        for _ in 0..<8 {
            window.started()
            window.finished(startedAt: now, retransmitted: false, now: now + 1)
            limits.append(window.limit)
        }
        #expect(limits == [2, 2, 3, 3, 3, 4, 4, 4])
        // A retransmission resets the clean count.
        window.started()
        window.finished(startedAt: now + 2, retransmitted: true, now: now + 3)
        #expect(window.limit == 2)
        window.started()
        window.finished(startedAt: now + 4, retransmitted: false, now: now + 5)
        #expect(window.limit == 2)
        window.started()
        window.finished(startedAt: now + 6, retransmitted: false, now: now + 7)
        #expect(window.limit == 3)
    }
}

@Suite("BrokerConnectWindows")
struct BrokerConnectWindowsTests {
    static let a = try! SocketAddress(ipAddress: "127.0.0.1", port: 1883)
    static let b = try! SocketAddress(ipAddress: "127.0.0.2", port: 1883)

    @Test("a window per address; a full one queues clients and each end wakes the oldest, as many as fit")
    func queues() {
        var windows = BrokerConnectWindows(brokers: [(Self.a, 2), (Self.b, 1), (Self.a, 99)])
        #expect(windows.windows.map(\.ceiling) == [2, 1])
        let slotA = windows.slot(of: Self.a)
        let slotB = windows.slot(of: Self.b)
        #expect([slotA, slotB] == [0, 1])
        var admitted: [Bool] = []
        for client in 0..<2 {
            admitted.append(windows.admit(client, slot: slotA))
            windows.started(slot: slotA)
        }
        admitted.append(windows.admit(2, slot: slotA))
        admitted.append(windows.admit(3, slot: slotA))
        admitted.append(windows.admit(4, slot: slotB))  // the other address is not held up
        windows.started(slot: slotB)
        #expect(admitted == [true, true, false, false, true])
        #expect(windows.waitingCount(slotA) == 2)
        var woken: [Int] = []
        windows.finished(slot: slotA, startedAt: 0, retransmitted: false, now: 1) { woken.append($0) }
        #expect(woken == [2])
        let secondAdmitted = windows.admit(2, slot: slotA)
        #expect(secondAdmitted)
        windows.started(slot: slotA)
        // A halving leaves 2 in flight over a bound of 1: the end of one wakes nobody.
        let decreased = windows.finished(slot: slotA, startedAt: 0, retransmitted: true, now: 2) { woken.append($0) }
        #expect(decreased)
        #expect(windows.windows[slotA].limit == 1)
        #expect(woken == [2])
        windows.finished(slot: slotA, startedAt: 0, retransmitted: nil, now: 3) { woken.append($0) }
        #expect(woken == [2, 3])
        #expect(windows.waitingCount(slotA) == 0)
        #expect(windows.windows[slotA].peakInFlight == 2)
    }

    @Test("each lane's share: the bound over lanes and over the segments that reach the address")
    func shares() throws {
        let brokers = try (0..<7).map { try SocketAddress(ipAddress: "127.0.0.1", port: UInt16(1883 + $0)) }
        var configuration = EngineConfiguration(fleets: [], brokers: brokers)
        configuration.maxConnectsInFlightPerBroker = 64
        #expect(Engine.connectWindowShare(configuration: configuration, laneCount: 1)(brokers[0], false) == 64)
        #expect(Engine.connectWindowShare(configuration: configuration, laneCount: 2)(brokers[0], false) == 32)
        configuration.segmentCount = 7  // worker K talks to broker K only
        #expect(Engine.connectWindowShare(configuration: configuration, laneCount: 1)(brokers[0], false) == 64)
        configuration.segmentCount = 14  // two workers per broker
        #expect(Engine.connectWindowShare(configuration: configuration, laneCount: 1)(brokers[0], false) == 32)
        configuration.segmentCount = 3  // every worker talks to every broker
        #expect(Engine.connectWindowShare(configuration: configuration, laneCount: 2)(brokers[0], false) == 10)
        #expect(Engine.connectWindowShare(configuration: configuration, laneCount: 1)(brokers[0], true) == 21)
        configuration.maxConnectsInFlightPerBroker = 1
        #expect(Engine.connectWindowShare(configuration: configuration, laneCount: 2)(brokers[0], false) == 1)
    }
}
