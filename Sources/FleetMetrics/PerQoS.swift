import MQTTCodec

/// A value that sums with another of its kind: counters of lanes, processes or segments added into a run's.
public protocol Mergeable {
    mutating func add(_ other: Self)
}

extension UInt64: Mergeable {
    @inlinable
    public mutating func add(_ other: UInt64) { self &+= other }
}

/// One value per QoS level (counts, delivery accounting), stored inline: reading or bumping one is a field access,
/// no allocation, so it serves the per-message path. The one place the three levels are spelled out.
public struct PerQoS<Value> {
    public var qos0: Value
    public var qos1: Value
    public var qos2: Value

    @inlinable
    public init(_ qos0: Value, _ qos1: Value, _ qos2: Value) {
        self.qos0 = qos0
        self.qos1 = qos1
        self.qos2 = qos2
    }

    @inlinable
    public init(repeating value: Value) { self.init(value, value, value) }

    @inlinable
    public subscript(qos: MQTTQoS) -> Value {
        get {
            switch qos {
            case .atMostOnce: return qos0
            case .atLeastOnce: return qos1
            case .exactlyOnce: return qos2
            }
        }
        set {
            switch qos {
            case .atMostOnce: qos0 = newValue
            case .atLeastOnce: qos1 = newValue
            case .exactlyOnce: qos2 = newValue
            }
        }
    }

    /// By QoS number 0, 1 or 2 (what report.json and segment files key by); any other index is a programming error.
    @inlinable
    public subscript(level: Int) -> Value {
        get { self[Self.qos(level)] }
        set { self[Self.qos(level)] = newValue }
    }

    @inlinable
    static func qos(_ level: Int) -> MQTTQoS {
        guard let qos = MQTTQoS(rawValue: UInt8(truncatingIfNeeded: level)), level >= 0 && level <= 2 else {
            preconditionFailure("QoS level \(level) is not 0, 1 or 2")
        }
        return qos
    }

    /// The three values in QoS order.
    public var levels: [Value] { [qos0, qos1, qos2] }
}

extension PerQoS: Equatable where Value: Equatable {}
extension PerQoS: Sendable where Value: Sendable {}

extension PerQoS: Mergeable where Value: Mergeable {
    @inlinable
    public mutating func add(_ other: PerQoS<Value>) {
        qos0.add(other.qos0)
        qos1.add(other.qos1)
        qos2.add(other.qos2)
    }

    /// The three levels added together.
    public func sum(from zero: Value) -> Value {
        var total = zero
        total.add(qos0)
        total.add(qos1)
        total.add(qos2)
        return total
    }
}

/// One count per QoS level.
public typealias PerQoSCounts = PerQoS<UInt64>

extension PerQoS where Value == UInt64 {
    @inlinable
    public init(qos0: UInt64 = 0, qos1: UInt64 = 0, qos2: UInt64 = 0) { self.init(qos0, qos1, qos2) }

    public var total: UInt64 { qos0 &+ qos1 &+ qos2 }
}
