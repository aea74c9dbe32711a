import FleetBroker
import Testing

/// One private RabbitMQ node (MQTT plugin) for a whole suite: an Erlang node takes seconds to boot (6 s on an
/// idle 2-core machine, more under load), too slow to start per test. The trait starts it before the suite's first
/// test and stops it after its last; tests reach it through `RabbitMQNode.current`.
///
/// Without rabbitmq-server installed, `RabbitMQError.notInstalled` fails every test of the suite with a message
/// saying how to install it (scripts/deps.sh does); nothing is skipped.
struct RabbitMQNodeTrait: SuiteTrait, TestScoping {
    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let broker = try RabbitMQBroker()
        defer { broker.stop() }
        try await RabbitMQNode.$current.withValue(broker) { try await function() }
    }
}

extension Trait where Self == RabbitMQNodeTrait {
    /// Runs the suite against one private RabbitMQ node.
    static var rabbitMQNode: Self { RabbitMQNodeTrait() }
}

enum RabbitMQNode {
    @TaskLocal static var current: RabbitMQBroker?

    struct Missing: Error, CustomStringConvertible {
        var description: String { "no RabbitMQ node: the suite needs the .rabbitMQNode trait" }
    }

    /// The suite's node.
    static func broker() throws -> RabbitMQBroker {
        guard let broker = current else { throw Missing() }
        return broker
    }
}
