import FleetBroker
import FleetEngine
import FleetScenario
import Foundation

/// The embedded broker of a fleet too large for one mosquitto: as many mosquitto processes as hold the fleet at
/// `clientsPerBroker` clients each. Clients are spread over them as over any list of brokers (the engine assigns
/// a fleet's client k to broker k mod B, the same in every segment), each with source addresses of its own.
enum EmbeddedBrokers {
    /// One mosquitto holds about 19,990 clients with 20,000 open files; 15,000 leaves it room for its own files
    /// and keeps its single thread's load per client set moderate. FLEETBENCH_CLIENTS_PER_BROKER lowers it (for
    /// a machine with fewer open files per process, and for tests, which spread small fleets over several).
    static var clientsPerBroker: Int {
        let given = ProcessInfo.processInfo.environment["FLEETBENCH_CLIENTS_PER_BROKER"].flatMap { Int($0) }
        return given.map { min(max($0, 1), 15_000) } ?? 15_000
    }

    /// How many mosquitto processes `clients` clients need.
    static func count(clients: Int, perBroker: Int = clientsPerBroker) -> Int {
        max(1, (clients + perBroker - 1) / perBroker)
    }

    /// The embedded mosquitto's configuration: stock network settings, in-flight and queue limits lifted.
    static func configuration() -> MosquittoConfiguration {
        var configuration = MosquittoConfiguration()
        configuration.connectionMessages = false
        return configuration
    }

    /// Starts `count` plain-MQTT mosquitto processes (stopping those already started if one fails).
    static func start(count: Int, configuration: MosquittoConfiguration = configuration()) throws -> [MosquittoBroker] {
        var started: [MosquittoBroker] = []
        do {
            for _ in 0..<count { started.append(try MosquittoBroker(configuration: configuration)) }
        } catch {
            for broker in started { broker.stop() }
            throw error
        }
        return started
    }

    /// Why a scenario cannot run on `count` embedded mosquitto processes (nil: it can): they serve plain MQTT only
    /// and a restart stage would restart one of them.
    static func refusal(_ scenario: Scenario, count: Int) -> String? {
        guard count > 1 else { return nil }
        let clients = scenario.fleets.reduce(0) { $0 + $1.count }
        if scenario.fleets.contains(where: { ($0.transport ?? .tcp) != .tcp }) {
            return "\(clients) clients need \(count) embedded mosquitto processes (at most \(clientsPerBroker) clients "
                + "each), which serve plain mqtt only: drop the fleets' transport, or give --broker"
        }
        if scenario.stages.contains(where: { if case .brokerRestart = $0.kind { return true } else { return false } }) {
            return "\(clients) clients need \(count) embedded mosquitto processes (at most \(clientsPerBroker) clients "
                + "each): restart stages need one embedded broker, or give --broker"
        }
        return nil
    }

    /// The refusal of a run whose subscribers would need messages published through another of the brokers: the
    /// mosquitto processes share nothing, so the run would count those messages lost.
    static func crossBrokerRefusal(_ cross: CrossBrokerSubscription, brokers: Int) -> String {
        "fleetbench: the fleet is spread over \(brokers) embedded mosquitto processes that share nothing, but \(cross): "
            + "give --broker with one broker (or a cluster) that holds the whole fleet"
    }
}
