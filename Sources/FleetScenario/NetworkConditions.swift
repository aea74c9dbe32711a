import FleetJSON
import FleetMetrics

/// A fleet's `network` key: the link its vehicles sit on, emulated by the engine in user space.
/// Where the preset figures come from is in docs/network-conditions.md.
public struct NetworkConditions: Equatable, Sendable {
    public enum Delay: Equatable, Sendable, CustomStringConvertible {
        case fixed(TimeSpan)
        /// Log-normal through these percentiles.
        case distribution(p50: TimeSpan, p99: TimeSpan)

        public var description: String {
            switch self {
            case .fixed(let span): return "\(span)"
            case .distribution(let p50, let p99): return "p50 \(p50), p99 \(p99)"
            }
        }
    }

    public struct Loss: Equatable, Sendable {
        /// Share of sends that stall one retransmission timeout (Gilbert-Elliott bad state), 0 ≤ rate < 1.
        public var rate: Double
        /// Mean stalls in a row (≥ 1).
        public var burst: Double = 1
        /// Mean time between link drops that end the connection.
        public var dropInterval: TimeSpan?
    }

    public struct Outages: Equatable, Sendable {
        public var meanInterval: TimeSpan
        public var minimum: TimeSpan
        public var maximum: TimeSpan
    }

    /// The preset the profile starts from (nil: written out in full).
    public var preset: String?
    public var fraction: Double = 1
    public var latencyUp: Delay = .fixed(.zero)
    public var latencyDown: Delay = .fixed(.zero)
    public var jitter: TimeSpan = .zero
    /// Bits per second; nil: unlimited.
    public var bandwidthUp: UInt64?
    public var bandwidthDown: UInt64?
    public var loss: Loss?
    public var outages: Outages?

    public init(preset: String? = nil) { self.preset = preset }

    /// The name reports use: the preset's, with "+" when keys changed it, or "custom".
    public var name: String {
        guard let preset else { return "custom" }
        return self == Self.presets[preset].map({ base in
            var same = base
            same.fraction = fraction
            return same
        }) ? preset : preset + "+"
    }

    /// One line for the summary and report.json: every figure the run used.
    public var summary: String {
        var parts: [String] = []
        if latencyUp == latencyDown {
            parts.append("latency \(latencyUp) each way")
        } else {
            parts.append("latency up \(latencyUp), down \(latencyDown)")
        }
        if jitter.nanoseconds > 0 { parts.append("jitter ±\(jitter)") }
        if bandwidthUp != nil || bandwidthDown != nil {
            parts.append("bandwidth up \(bandwidthUp.map(Self.rateText) ?? "unlimited"), down \(bandwidthDown.map(Self.rateText) ?? "unlimited")")
        }
        if let loss {
            var text = "loss \(Self.percent(loss.rate)) in bursts of \(Self.number(loss.burst))"
            if let drop = loss.dropInterval { text += ", a link drop every \(drop) on average" }
            parts.append(text)
        }
        if let outages {
            parts.append("outages every \(outages.meanInterval) on average, \(outages.minimum)-\(outages.maximum) each")
        }
        return parts.joined(separator: "; ")
    }

    static func rateText(_ bits: UInt64) -> String {
        if bits >= 1_000_000_000, bits % 1_000_000 == 0 { return number(Double(bits) / 1e9) + "Gbit" }
        if bits >= 1_000_000, bits % 1_000 == 0 { return number(Double(bits) / 1e6) + "Mbit" }
        if bits >= 1_000 { return number(Double(bits) / 1e3) + "kbit" }
        return "\(bits)bit"
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static func percent(_ value: Double) -> String { number((value * 10_000).rounded() / 100) + "%" }

    /// Parses "256kbit", "2Mbit", "1.5Gbit", "9600bit" (also "kbps", "Mbps"): bits per second.
    public static func parseRate(_ text: String) -> UInt64? {
        let units: [(String, Double)] = [("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3), ("Gbps", 1e9), ("Mbps", 1e6),
                                         ("kbps", 1e3), ("bit", 1), ("bps", 1)]
        for (unit, factor) in units where text.hasSuffix(unit) {
            guard let value = Double(text.dropLast(unit.count)), value.isFinite, value > 0 else { return nil }
            let bits = (value * factor).rounded()
            return bits >= 1 && bits < 1e15 ? UInt64(bits) : nil
        }
        return nil
    }

    private static func ms(_ value: UInt64) -> TimeSpan { .milliseconds(value) }
    private static func minutes(_ value: UInt64) -> TimeSpan { .seconds(value * 60) }

    /// Presets: one-way latency (half the round trips the sources report), bandwidth, loss. Sources and
    /// reasoning per figure: docs/network-conditions.md.
    public static let presets: [String: NetworkConditions] = {
        func make(_ name: String, p50: UInt64, p99: UInt64, up: UInt64, down: UInt64, loss: Double, burst: Double,
                  drop: TimeSpan?) -> NetworkConditions {
            var profile = NetworkConditions(preset: name)
            profile.latencyUp = .distribution(p50: ms(p50), p99: ms(p99))
            profile.latencyDown = profile.latencyUp
            profile.bandwidthUp = up
            profile.bandwidthDown = down
            profile.loss = Loss(rate: loss, burst: burst, dropInterval: drop)
            return profile
        }
        return [
            "wifi": make("wifi", p50: 5, p99: 40, up: 20_000_000, down: 50_000_000, loss: 0.001, burst: 2, drop: nil),
            "lte": make("lte", p50: 30, p99: 120, up: 5_000_000, down: 17_000_000, loss: 0.005, burst: 3, drop: minutes(120)),
            "3g": make("3g", p50: 60, p99: 250, up: 1_000_000, down: 3_000_000, loss: 0.01, burst: 3, drop: minutes(60)),
            "edge": make("edge", p50: 250, p99: 800, up: 100_000, down: 200_000, loss: 0.02, burst: 4, drop: minutes(30)),
            "lte-m": make("lte-m", p50: 75, p99: 300, up: 300_000, down: 300_000, loss: 0.01, burst: 3, drop: minutes(60)),
            "nb-iot": make("nb-iot", p50: 800, p99: 5_000, up: 20_000, down: 20_000, loss: 0.02, burst: 3, drop: minutes(30)),
            "satellite": make("satellite", p50: 300, p99: 400, up: 3_000_000, down: 25_000_000, loss: 0.005, burst: 3, drop: minutes(120)),
        ]
    }()

    public static let presetNames = ["wifi", "lte", "3g", "edge", "lte-m", "nb-iot", "satellite"]

    /// Clients of a fleet of `count` per profile: profile k has ⌊count × (f_1 + … + f_k)⌋ − ⌊count × (f_1 + … +
    /// f_(k−1))⌋ (the engine's `EngineNetworkProfile.clientCounts`, which also picks which clients).
    public static func clientCounts(count: Int, profiles: [NetworkConditions]) -> [Int] {
        FractionShares.counts(of: count, fractions: profiles.lazy.map(\.fraction))
    }
}

extension ScenarioDecoder {
    static let networkKeys = ["preset", "fraction", "latency", "latency_up", "latency_down", "jitter", "bandwidth_up",
                              "bandwidth_down", "loss", "outages"]

    /// `network`: one profile (`decodeNetwork`), or an array of them, each an object with its `fraction` of
    /// the fleet (`[{"preset": "lte", "fraction": 0.7}, {"preset": "nb-iot", "fraction": 0.3}]`); the
    /// fractions add up to at most 1 (the rest of the fleet has no profile).
    func decodeNetworks(_ value: JSONValue, _ path: JSONPath) -> [NetworkConditions]? {
        guard case .array = value else { return decodeNetwork(value, path).map { [$0] } }
        guard let items = context.array(value, path) else { return nil }
        if items.isEmpty {
            context.error(path, "a list of network profiles needs at least one profile")
            return nil
        }
        var profiles: [NetworkConditions] = []
        var valid = true
        var total = 0.0
        for (item, itemPath) in items {
            if items.count > 1, case .object = item, item["fraction"] == nil {
                context.error(itemPath, "each of several network profiles needs its \"fraction\" of the fleet")
                valid = false
                continue
            }
            if items.count > 1, case .string = item {
                context.error(itemPath, "each of several network profiles needs its \"fraction\" of the fleet: write {\"preset\": ..., \"fraction\": ...}")
                return nil  // once: the same fix applies to every name of the list
            }
            guard let profile = decodeNetwork(item, itemPath) else {
                valid = false
                continue
            }
            total += profile.fraction
            profiles.append(profile)
        }
        guard valid else { return nil }
        if total > 1 + 1e-9 {
            context.error(path, "the network profiles' fractions add up to \(NetworkConditions.number((total * 1e6).rounded() / 1e6)), more than the whole fleet (1)")
            return nil
        }
        return profiles
    }

    /// `network`: a preset name, or an object (optionally starting from a `preset`, whose figures its other keys
    /// replace).
    func decodeNetwork(_ value: JSONValue, _ path: JSONPath) -> NetworkConditions? {
        let presetOptions = NetworkConditions.presetNames.map { ($0, $0) }
        if case .string = value {
            guard let name = context.choice(value, path, presetOptions) else { return nil }
            return NetworkConditions.presets[name]
        }
        guard let object = context.object(value, path, allowed: Self.networkKeys,
                                          what: "a network preset name or a network object") else { return nil }
        var profile = NetworkConditions()
        if let name = object.optional("preset", { context.choice($0, $1, presetOptions) }) {
            profile = NetworkConditions.presets[name] ?? profile
        }
        var valid = true
        if let fraction = object.optional("fraction", context.fraction) { profile.fraction = fraction }
        if let latency = object.optional("latency", decodeDelay) {
            profile.latencyUp = latency
            profile.latencyDown = latency
        }
        if let latency = object.optional("latency_up", decodeDelay) { profile.latencyUp = latency }
        if let latency = object.optional("latency_down", decodeDelay) { profile.latencyDown = latency }
        if let jitter = object.optional("jitter", { context.duration($0, $1) }) { profile.jitter = jitter }
        if let rate = object.optional("bandwidth_up", decodeRate) { profile.bandwidthUp = rate }
        if let rate = object.optional("bandwidth_down", decodeRate) { profile.bandwidthDown = rate }
        if let lossValue = object.value("loss") {
            if let loss = decodeLoss(lossValue, path.appending("loss")) { profile.loss = loss } else { valid = false }
        }
        if let outagesValue = object.value("outages") {
            if let outages = decodeOutages(outagesValue, path.appending("outages")) { profile.outages = outages } else { valid = false }
        }
        return valid ? profile : nil
    }

    /// A duration, or `{"p50": ..., "p99": ...}` (p99 at least p50, p50 above 0).
    func decodeDelay(_ value: JSONValue, _ path: JSONPath) -> NetworkConditions.Delay? {
        if case .object = value {
            guard let object = context.object(value, path, allowed: ["p50", "p99"]) else { return nil }
            let p50 = object.required("p50", "the median one-way delay") { context.duration($0, $1, allowZero: false) }
            let p99 = object.required("p99", "the 99th percentile one-way delay") { context.duration($0, $1, allowZero: false) }
            guard let p50, let p99 else { return nil }
            if p99 < p50 {
                context.error(path.appending("p99"), "p99 (\(p99)) must be at least p50 (\(p50))")
                return nil
            }
            return .distribution(p50: p50, p99: p99)
        }
        guard let span = context.duration(value, path) else { return nil }
        return .fixed(span)
    }

    func decodeRate(_ value: JSONValue, _ path: JSONPath) -> UInt64? {
        guard case .string(let text) = value, let rate = NetworkConditions.parseRate(text) else {
            context.expected("a bandwidth such as \"256kbit\", \"2Mbit\" or \"1Gbit\"", path, got: value)
            return nil
        }
        return rate
    }

    func decodeLoss(_ value: JSONValue, _ path: JSONPath) -> NetworkConditions.Loss? {
        guard let object = context.object(value, path, allowed: ["rate", "burst", "drop_interval"]) else { return nil }
        let rate = object.required("rate", "the share of sends that stall") { value, path -> Double? in
            guard let rate = context.fraction(value, path) else { return nil }
            if rate >= 1 {
                context.error(path, "a loss rate must be below 1 (100%): TCP would never get anything through")
                return nil
            }
            return rate
        }
        var burst = 1.0
        if let value = object.value("burst") {
            let burstPath = path.appending("burst")
            guard let number = value.numberValue, number.isFinite, number >= 1 else {
                context.expected("a mean burst length of at least 1", burstPath, got: value)
                return nil
            }
            burst = number
        }
        let drop = object.optional("drop_interval") { context.duration($0, $1, allowZero: false) }
        if object.has("drop_interval") && drop == nil { return nil }
        guard let rate else { return nil }
        return NetworkConditions.Loss(rate: rate, burst: burst, dropInterval: drop)
    }

    /// `{"every": "10m", "duration": "20s"}` or `"duration": ["5s", "30s"]` (a uniform draw in that range).
    func decodeOutages(_ value: JSONValue, _ path: JSONPath) -> NetworkConditions.Outages? {
        guard let object = context.object(value, path, allowed: ["every", "duration"]) else { return nil }
        let every = object.required("every", "the mean time between outages") { context.duration($0, $1, allowZero: false) }
        let range = object.required("duration", "how long an outage lasts") { value, path -> (TimeSpan, TimeSpan)? in
            if case .array = value {
                guard let items = context.array(value, path), items.count == 2 else {
                    context.expected("a duration or a [shortest, longest] pair of durations", path, got: value)
                    return nil
                }
                guard let low = context.duration(items[0].0, items[0].1), let high = context.duration(items[1].0, items[1].1) else {
                    return nil
                }
                if high < low {
                    context.error(items[1].1, "the longest outage (\(high)) must be at least the shortest (\(low))")
                    return nil
                }
                return (low, high)
            }
            guard let span = context.duration(value, path) else { return nil }
            return (span, span)
        }
        guard let every, let range else { return nil }
        return NetworkConditions.Outages(meanInterval: every, minimum: range.0, maximum: range.1)
    }
}
