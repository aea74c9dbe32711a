@testable import FleetEngine
import Testing

@Suite("Engine: receive coalescing under heavy inbound traffic")
struct ReceiveCoalescingTests {
    @Test(
        "a lane pauses only while messages arrive at 16 or more per coalescing interval, two at least",
        arguments: [
            // messages, ns since the previous turn began, coalescing ns, pauses
            (16, 250_000, 250_000, true),     // exactly 16 per 250 µs
            (15, 250_000, 250_000, false),
            (9, 70_000, 250_000, true),       // eager reads of a heavy stream: 9 per 70 µs = 32 per 250 µs
            (1, 10_000, 250_000, false),      // a reply right after its request: one message is no rate
            (2, 31_250, 250_000, true),       // 2 per 31.25 µs = 16 per 250 µs
            (2, 31_251, 250_000, false),
            (500, 1_000_000, 250_000, true),
            (100, 0, 250_000, true),          // two turns within the same nanosecond
            (1_000, 250_000, 0, false),       // 0 turns coalescing off
            // Products beyond 64 bits compare right: 2^31 x (2^64 - 1) > 16 x (2^64 - 1); 2 x 2^61 < 16 x 2^64.
            (Int(Int32.max), UInt64.max, UInt64.max, true),
            (2, UInt64.max, UInt64.max / 8, false),
        ] as [(Int, UInt64, UInt64, Bool)])
    func rate(messages: Int, since: UInt64, coalescing: UInt64, pauses: Bool) {
        #expect(Lane.isReceivingHeavily(messages: messages, sinceLastTurn: since, coalescing: coalescing) == pauses)
    }
}
