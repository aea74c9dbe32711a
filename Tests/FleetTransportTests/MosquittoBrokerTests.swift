import FleetBroker
import FleetTransport
import Foundation
import Glibc
import Testing

@Suite("MosquittoBroker: the embedded mosquitto")
struct MosquittoBrokerTests {
    @Test("starts on a free loopback port and accepts a plain TCP connection")
    func startsAndAcceptsTCP() throws {
        let broker = try MosquittoBroker()
        #expect(broker.host == "127.0.0.1")
        // Below the ephemeral range, so reconnecting clients can never hold the port while the broker restarts.
        let range = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let ephemeralStart = try #require(range.split(whereSeparator: \.isWhitespace).first.flatMap { UInt16($0) })
        #expect(broker.port >= 10_000 && broker.port < ephemeralStart)
        #expect(broker.url == "mqtt://127.0.0.1:\(broker.port)")
        #expect(broker.isRunning)
        let pid = try #require(broker.pid)
        #expect(Glibc.kill(pid, 0) == 0)  // the process exists
        #expect(FileManager.default.fileExists(atPath: broker.logPath))
        let socket = try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: broker.port))
        try socket.close()
    }

    @Test("stop ends the process and the port refuses connections")
    func stopRefusesConnections() throws {
        let broker = try MosquittoBroker()
        let pid = try #require(broker.pid)
        broker.stop()
        #expect(broker.pid == nil)
        #expect(!broker.isRunning)
        #expect(Glibc.kill(pid, 0) == -1 && errno == ESRCH)  // reaped, not a zombie
        let error = #expect(throws: SystemError.self) {
            try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: broker.port))
        }
        #expect(error?.description == "connect failed: Connection refused (errno 111)")
        broker.stop()  // idempotent
    }

    @Test("restart comes back on the same port with a new process, after clients were connected")
    func restartKeepsPort() throws {
        let broker = try MosquittoBroker()
        let port = broker.port
        let firstPid = try #require(broker.pid)
        // A connection open across the restart leaves TIME_WAIT state behind on the broker's port.
        let client = try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: port))
        try broker.restart()
        try client.close()
        #expect(broker.port == port)
        let secondPid = try #require(broker.pid)
        #expect(secondPid != firstPid)
        let again = try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: port))
        try again.close()
    }

    @Test("kill ends the broker abruptly; restart brings it back")
    func killThenRestart() throws {
        let broker = try MosquittoBroker()
        broker.kill()
        #expect(broker.pid == nil)
        #expect(throws: SystemError.self) {
            try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: broker.port))
        }
        try broker.restart()
        let socket = try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: broker.port))
        try socket.close()
    }

    @Test("a missing mosquitto names the directories searched and how to install it")
    func missingBinary() throws {
        var configuration = MosquittoConfiguration()
        configuration.searchDirectories = ["/nonexistent/fleetbench-a", "/nonexistent/fleetbench-b"]
        let error = #expect(throws: MosquittoError.self) { try MosquittoBroker(configuration: configuration) }
        #expect(error == .notInstalled(searchedDirectories: ["/nonexistent/fleetbench-a", "/nonexistent/fleetbench-b"]))
        #expect(
            error?.description
                == "mosquitto was not found (searched: /nonexistent/fleetbench-a, /nonexistent/fleetbench-b). "
                + "Install it with `sudo apt-get install mosquitto`, or pass `--broker URL` to use a running broker.")
    }

    @Test("the default search path is $PATH, then /usr/sbin and /usr/local/sbin, without duplicates")
    func defaultSearchDirectories() {
        #expect(
            MosquittoLocator.defaultSearchDirectories(pathVariable: "/usr/bin:/usr/sbin::/opt/bin")
                == ["/usr/bin", "/usr/sbin", "/opt/bin", "/usr/local/sbin"])
        #expect(MosquittoLocator.defaultSearchDirectories(pathVariable: nil) == ["/usr/sbin", "/usr/local/sbin"])
    }

    @Test("a configuration mosquitto rejects fails the start with mosquitto's own message")
    func badConfigurationFailsWithLogTail() throws {
        var configuration = MosquittoConfiguration()
        configuration.extraLines = ["bogus_option 1"]
        let error = #expect(throws: MosquittoError.self) { try MosquittoBroker(configuration: configuration) }
        guard case .exitedDuringStart(let status, let logTail) = error else {
            Issue.record("expected exitedDuringStart, got \(String(describing: error))")
            return
        }
        #expect(status == 3)
        #expect(logTail.contains("Error: Unknown configuration variable \"bogus_option\"."))
    }

    @Test("the websockets listener gets its own port and accepts TCP")
    func websocketsListener() throws {
        var configuration = MosquittoConfiguration()
        configuration.websocketsListener = true
        let broker = try MosquittoBroker(configuration: configuration)
        let port = try #require(broker.layout.websocketsPort)
        #expect(port != broker.port)
        #expect(broker.websocketsURL == "ws://127.0.0.1:\(port)/")
        let socket = try connectThroughEpoll(to: SocketAddress(ipAddress: "127.0.0.1", port: port))
        try socket.close()
    }

    @Test("the generated configuration, line by line")
    func renderedConfiguration() {
        var configuration = MosquittoConfiguration()
        configuration.maxKeepAlive = 600
        configuration.maxInflightMessages = 32
        configuration.maxQueuedMessages = 10_000
        configuration.websocketsListener = true
        configuration.tlsListener = MosquittoTLSListener(
            caFile: "/c/ca.pem", certificateFile: "/c/server.pem", keyFile: "/c/server.key",
            requireClientCertificate: true)
        configuration.extraLines = ["memory_limit 0"]
        configuration.connectionMessages = false
        configuration.tcpNoDelay = true
        let layout = MosquittoLayout(host: "127.0.0.1", port: 40001, websocketsPort: 40002, tlsPort: 40003, directory: "/t")
        let expected = """
            # Generated by fleetbench for one embedded broker run.
            per_listener_settings false
            allow_anonymous true
            max_keepalive 600
            max_inflight_messages 32
            max_queued_messages 10000
            set_tcp_nodelay true
            persistence false
            persistence_location /t/
            log_dest file /t/mosquitto.log
            log_type error
            log_type warning
            log_type notice
            log_type information
            log_timestamp true
            connection_messages false
            user root
            listener 40001 127.0.0.1
            listener 40002 127.0.0.1
            protocol websockets
            listener 40003 127.0.0.1
            cafile /c/ca.pem
            certfile /c/server.pem
            keyfile /c/server.key
            require_certificate true
            memory_limit 0

            """
        #expect(configuration.renderedFile(layout: layout, runAsUser: "root") == expected)
    }

    @Test("by default no set_tcp_nodelay line (mosquitto as shipped); .stock also leaves the limits to mosquitto")
    func stockConfiguration() {
        let layout = MosquittoLayout(host: "127.0.0.1", port: 40001, websocketsPort: nil, tlsPort: nil, directory: "/t")
        let byDefault = MosquittoConfiguration().renderedFile(layout: layout, runAsUser: nil)
            .split(separator: "\n").map(String.init)
        #expect(!byDefault.contains { $0.hasPrefix("set_tcp_nodelay") })
        #expect(byDefault.contains("max_inflight_messages 0"))
        #expect(byDefault.contains("max_queued_messages 0"))
        let stock = MosquittoConfiguration.stock.renderedFile(layout: layout, runAsUser: nil)
        #expect(stock == """
            # Generated by fleetbench for one embedded broker run.
            per_listener_settings false
            allow_anonymous true
            max_keepalive 65535
            persistence false
            persistence_location /t/
            log_dest file /t/mosquitto.log
            log_type error
            log_type warning
            log_type notice
            log_type information
            log_timestamp true
            connection_messages true
            listener 40001 127.0.0.1

            """)
    }

    /// A directory holding an executable named `mosquitto` with the given shell script body, to fake failures.
    static func fakeMosquitto(_ script: String) throws -> String {
        var template = Array("/tmp/fleetbench-fake-XXXXXX".utf8CString)
        let directory = try template.withUnsafeMutableBufferPointer { buffer -> String in
            guard let made = mkdtemp(buffer.baseAddress!) else { throw SystemError(call: "mkdtemp", errno: errno) }
            return String(cString: made)
        }
        let path = directory + "/mosquitto"
        // O_CLOEXEC: a child spawned meanwhile by a parallel test must not keep this file open for writing, or
        // executing it fails with ETXTBSY.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw SystemError(call: "open", errno: errno) }
        let text = Array(("#!/bin/sh\n" + script + "\n").utf8)
        #expect(write(descriptor, text, text.count) == text.count)
        #expect(close(descriptor) == 0)
        return directory
    }

    @Test("a broker that exits at once reports its exit status and what it printed")
    func exitsDuringStart() throws {
        let directory = try Self.fakeMosquitto("echo 'fake broker: cannot start' >&2; exit 7")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = MosquittoConfiguration()
        configuration.searchDirectories = [directory]
        let error = #expect(throws: MosquittoError.self) { try MosquittoBroker(configuration: configuration) }
        #expect(error == .exitedDuringStart(status: 7, logTail: "fake broker: cannot start\n"))
    }

    @Test("a broker that runs but never listens fails after the start deadline and is stopped")
    func neverListens() throws {
        let directory = try Self.fakeMosquitto("echo started; exec sleep 30")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = MosquittoConfiguration()
        configuration.searchDirectories = [directory]
        configuration.startTimeout = 0.3
        let error = #expect(throws: MosquittoError.self) { try MosquittoBroker(configuration: configuration) }
        guard case .notListening(_, let seconds, let logTail) = error else {
            Issue.record("expected notListening, got \(String(describing: error))")
            return
        }
        #expect(seconds == 0.3)
        #expect(logTail == "started\n")
        #expect(error?.description.hasPrefix("mosquitto did not accept connections on 127.0.0.1:") == true)
    }

    @Test("the child's open-file limit is this process's hard limit")
    func openFileLimit() {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        #expect(MosquittoBroker.openFileLimitForChild() == UInt64(limit.rlim_max))
    }
}

@Suite("MosquittoBroker: which start failures get new ports")
struct MosquittoPortRaceTests {
    @Test("a taken TCP or websockets port, or an exit before anything was logged; not a bad configuration",
          arguments: [
              ("1764428400: Error: Address already in use\n", true),
              ("Error: Unable to create websockets listener on port 40123.\n", true),
              ("", true),
              ("\n  \n", true),
              ("Error: Unable to open config file /tmp/x/mosquitto.conf.\n", false),
              ("1764428400: Error: Unable to load server certificate \"/tmp/x/server.pem\".\n", false),
          ] as [(String, Bool)])
    func portRace(tail: String, retried: Bool) {
        #expect(MosquittoBroker.mayBeAPortRace(tail) == retried)
    }
}
