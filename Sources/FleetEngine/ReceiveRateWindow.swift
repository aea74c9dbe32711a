/// A lane's inbound message rate, judged once per window: whether the last whole window received a steady stream
/// (`steadyRate` messages a second or more). The per-turn rate (`Lane.isReceivingHeavily`) cannot tell: when
/// each message wakes its own turn (vehicles each getting a command now and then), every turn holds one message.
/// Used by the lane's driver for `EngineConfiguration.receiveBatching`. Plain counters: no allocation.
struct ReceiveRateWindow: Equatable {
    /// 4,000 messages a second: below it a pause of 500 µs would find one message or none to batch.
    static let steadyRate: UInt64 = 4_000
    static let window: UInt64 = 10_000_000

    /// When the current window began (the start of its first turn), and the messages of its turns so far.
    private(set) var start: UInt64 = 0
    private(set) var messages = 0
    /// The judgement of the last whole window (false until one has passed).
    private(set) var steady = false

    init() {}

    /// A turn that began at `turnStart` received `messages`. A turn at least a window after the current window's
    /// start closes it (its messages counted in): steady if they came at `steadyRate` or more over the time
    /// from the window's start to this turn's; the next window starts at this turn. A lane that was idle for
    /// long therefore judges its first turn after against the whole idle span.
    mutating func note(messages: Int, turnStart: UInt64) {
        self.messages &+= messages
        let elapsed = turnStart &- start
        guard elapsed >= Self.window else { return }
        steady = Self.isSteady(messages: self.messages, over: elapsed)
        start = turnStart
        self.messages = 0
    }

    /// Whether `messages` over `elapsed` ns come at `steadyRate` a second or more (two messages at least).
    static func isSteady(messages: Int, over elapsed: UInt64) -> Bool {
        reaches(steadyRate, messages: messages, over: elapsed)
    }

    /// Whether `messages` over `elapsed` ns come at `rate` a second or more. Two messages at least: a request and
    /// its reply a few µs apart do not make a rate. Exact for any span (128-bit products).
    static func reaches(_ rate: UInt64, messages: Int, over elapsed: UInt64) -> Bool {
        guard messages >= 2 else { return false }
        let arrived = UInt64(messages).multipliedFullWidth(by: 1_000_000_000)
        let needed = rate.multipliedFullWidth(by: elapsed)
        return arrived >= needed  // (high, low) tuples compare as 128-bit numbers
    }
}
