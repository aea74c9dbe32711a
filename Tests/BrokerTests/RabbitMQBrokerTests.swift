import FleetBroker
import Foundation
import Glibc
import Testing

/// The launcher itself: what it writes, what it leaves behind, and its error without RabbitMQ.
@Suite("RabbitMQBroker: a private node's files, ports and cleanup")
struct RabbitMQBrokerTests {
    @Test("a missing start script is a clear error naming where it looked and how to install it")
    func notInstalled() throws {
        var configuration = RabbitMQConfiguration()
        configuration.serverScript = "/nonexistent/rabbitmq-server"
        #expect(throws: RabbitMQError.notInstalled(searched: ["/nonexistent/rabbitmq-server"])) {
            try RabbitMQBroker(configuration: configuration)
        }
        #expect(RabbitMQError.notInstalled(searched: ["/a", "/b"]).description
            == "rabbitmq-server was not found (searched: /a, /b). Install it with `sudo apt-get install "
                + "--no-install-recommends rabbitmq-server` (scripts/deps.sh does), or pass `--broker URL` to use a "
                + "running broker.")
    }

    @Test("the configuration is stock apart from the two loopback listeners; the environment points only at the node's own files and ports")
    func configurationAndEnvironment() {
        let layout = RabbitMQLayout(host: "127.0.0.1", mqttPort: 11_883, amqpPort: 15_672, distributionPort: 25_672,
                                    epmdPort: 14_369, nodeName: "fleetbench-11883@localhost", directory: "/tmp/x")
        #expect(RabbitMQBroker.renderedConfiguration(layout: layout) == """
            # Written by fleetbench for a private test node; everything else is RabbitMQ's default.
            listeners.tcp.1 = 127.0.0.1:15672
            mqtt.listeners.tcp.1 = 127.0.0.1:11883

            """)
        let environment = RabbitMQBroker.environment(layout: layout, inherited: [
            "PATH": "/usr/bin", "RABBITMQ_NODENAME": "rabbit@host", "RABBITMQ_NODE_PORT": "5672", "ERL_EPMD_PORT": "4369",
        ])
        #expect(environment == [
            "PATH": "/usr/bin", "HOME": "/tmp/x",
            "RABBITMQ_NODENAME": "fleetbench-11883@localhost",
            "RABBITMQ_MNESIA_BASE": "/tmp/x/mnesia", "RABBITMQ_LOG_BASE": "/tmp/x/log",
            "RABBITMQ_CONFIG_FILE": "/tmp/x/rabbitmq.conf", "RABBITMQ_ADVANCED_CONFIG_FILE": "/tmp/x/advanced.config",
            "RABBITMQ_ENABLED_PLUGINS_FILE": "/tmp/x/enabled_plugins",
            "RABBITMQ_CONF_ENV_FILE": "/tmp/x/rabbitmq-env.conf", "RABBITMQ_PID_FILE": "/tmp/x/rabbitmq.pid",
            "RABBITMQ_DIST_PORT": "25672",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
            "ERL_EPMD_PORT": "14369", "ERL_EPMD_ADDRESS": "127.0.0.1",
        ])
    }

    /// A node of its own (the suite's shared one must keep running): started, then stopped, it leaves no Erlang
    /// VM, no epmd and no files.
    @Test("stop() ends the Erlang VM and the node's epmd and removes the data directory")
    func stopLeavesNothing() throws {
        let node = try RabbitMQBroker()
        let directory = node.layout.directory
        let epmdPort = node.layout.epmdPort
        let vm = try #require(node.nodePid)
        #expect(kill(vm, 0) == 0)
        #expect(Self.accepts(port: epmdPort))
        #expect(FileManager.default.contents(atPath: node.layout.enabledPluginsPath) == Data("[rabbitmq_mqtt].\n".utf8))
        #expect(FileManager.default.fileExists(atPath: node.layout.mnesiaBase))
        node.stop()
        #expect(!node.isRunning)
        #expect(node.nodePid == nil)
        // The VM is a grandchild (wrapper, start script, beam.smp): gone means kill(2) finds no such process.
        #expect(kill(vm, 0) == -1 && errno == ESRCH)
        #expect(!Self.accepts(port: node.port))
        // epmd exits on its request; give it a moment to close its listener.
        var epmdGone = false
        for _ in 0..<50 where !epmdGone {
            epmdGone = !Self.accepts(port: epmdPort)
            if !epmdGone { usleep(20_000) }
        }
        #expect(epmdGone)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test("fleetbench run --embedded-broker rabbitmq: the quickstart at 3.1.1 passes against a node of its own, which is gone afterwards")
    func embeddedRabbitMQ() throws {
        let (outcome, written) = try RabbitMQTests.fleetbench([
            "run", "scenarios/quickstart.json", "--embedded-broker", "rabbitmq", "--duration", "2s",
            "--set", "fleets.sensors.protocol=3.1.1", "--set", "fleets.dashboard.protocol=3.1.1",
            "--set", RabbitMQTests.countThresholds,
        ], againstNode: false)
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.error)")
        #expect(outcome.output.hasPrefix("fleetbench: RabbitMQ node ready at mqtt://127.0.0.1:"))
        let report = try #require(written)
        #expect(report["passed"] as? Bool == true)
        let brokers = try #require(report["brokers"] as? [String])
        #expect(brokers.count == 1)
        let port = try #require(brokers.first.flatMap { UInt16($0.split(separator: ":").last ?? "") })
        #expect(!Self.accepts(port: port))
        let qos1 = try #require((report["messages"] as? [String: Any])?["qos1"] as? [String: Any])
        #expect((qos1["acked"] as? Int ?? 0) > 0)
        #expect(qos1["acked"] as? Int == qos1["published"] as? Int)
    }

    @Test("--embedded-broker: an unknown name, and a non-mqtt transport with rabbitmq, are usage errors (exit 2) before any node starts",
          arguments: [
              (["--embedded-broker", "nats"], "fleetbench run: --embedded-broker takes mosquitto or rabbitmq (got 'nats')\n"),
              (["--embedded-broker", "rabbitmq", "--set", "fleets.sensors.transport=ws"],
               "fleetbench: --embedded-broker rabbitmq serves plain mqtt only; drop the fleets' transport\n"),
          ])
    func embeddedBrokerUsage(arguments: [String], error: String) throws {
        let (outcome, report) = try RabbitMQTests.fleetbench(["run", "scenarios/quickstart.json"] + arguments,
                                                             againstNode: false)
        #expect(outcome.status == 2)
        #expect(outcome.error.hasPrefix(error), "\(outcome.error)")
        #expect(report == nil)
    }

    static func accepts(port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }
}
