@testable import FleetEngine
import Testing

@Suite("Engine: receive coalescing under heavy inbound traffic")
struct ReceiveCoalescingTests {
    @Test(
        "a lane pauses only while it receives 64,000 messages a second or more, two a turn at least",
        arguments: [
            // messages, ns since the previous turn began, pauses
            (64, 1_000_000, true),      // exactly 64,000/s
            (63, 1_000_000, false),
            (9, 70_000, true),          // eager reads of a heavy stream: 9 per 70 µs = 128,571/s
            (1, 10_000, false),         // a reply right after its request: one message is no rate
            (2, 31_250, true),          // 2 per 31.25 µs = 64,000/s
            (2, 31_251, false),
            (100, 0, true),             // two turns within the same nanosecond
            // Products beyond 64 bits compare right.
            (Int(Int32.max), UInt64.max, false),   // 2^31 x 1e9 < 64,000 x (2^64 - 1)
            (Int.max, UInt64.max / 2, true),       // 2^63 x 1e9 > 64,000 x 2^63
        ] as [(Int, UInt64, Bool)])
    func rate(messages: Int, since: UInt64, pauses: Bool) {
        #expect(Lane.isReceivingHeavily(messages: messages, sinceLastTurn: since) == pauses)
    }
}
