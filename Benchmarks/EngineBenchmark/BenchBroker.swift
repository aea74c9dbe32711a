import FleetBroker
import Glibc

/// The broker the workloads run against: mosquitto ("stock" or "tuned") or a private RabbitMQ node with its MQTT
/// plugin ("rabbitmq", stock settings, multi-threaded: the broker where a larger in-flight window can show).
enum BenchBroker {
    case mosquitto(MosquittoBroker)
    case rabbitmq(RabbitMQBroker)

    static let names = ["stock", "tuned", "rabbitmq"]

    var port: UInt16 {
        switch self {
        case .mosquitto(let broker): return broker.port
        case .rabbitmq(let broker): return broker.port
        }
    }

    /// The process whose CPU is the broker's: mosquitto, or RabbitMQ's Erlang VM (all its scheduler threads).
    var pid: Int32? {
        switch self {
        case .mosquitto(let broker): return broker.pid
        case .rabbitmq(let broker): return broker.nodePid
        }
    }

    var isRabbitMQ: Bool {
        if case .rabbitmq = self { return true }
        return false
    }

    func stop() {
        switch self {
        case .mosquitto(let broker): broker.stop()
        case .rabbitmq(let broker): broker.stop()
        }
    }

    /// Starts the broker `name`, or prints why not and exits 1.
    static func start(_ name: String) -> BenchBroker {
        do {
            switch name {
            case "rabbitmq":
                let node = try RabbitMQBroker()
                // Erlang boots slowly: the figure goes with the benchmark's output, not into any workload.
                print(json(["broker": name, "startup_seconds": round3(node.startupSeconds)]))
                return .rabbitmq(node)
            case "tuned":
                return .mosquitto(try MosquittoBroker(configuration: tunedBrokerConfiguration()))
            default:
                return .mosquitto(try MosquittoBroker(configuration: stockBrokerConfiguration()))
            }
        } catch {
            print(json(["broker": name, "error": "\(name) did not start: \(error)"]))
            exit(1)
        }
    }
}
