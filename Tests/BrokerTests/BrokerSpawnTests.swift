import FleetBroker
import Foundation
import Glibc
import Testing

@Suite("Brokers start without the descriptors of the process that starts them")
struct BrokerSpawnTests {
    /// A descriptor opened without close-on-exec, as `flock` hands its lock to the command it runs.
    private static func openInheritable() throws -> (descriptor: Int32, path: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-marker-\(getpid())").path
        let descriptor = open(path, O_CREAT | O_RDWR, 0o600)
        try #require(descriptor >= 3)
        #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC == 0)
        return (descriptor, path)
    }

    private static func openPaths(of pid: Int32) throws -> [String] {
        let directory = "/proc/\(pid)/fd"
        return try FileManager.default.contentsOfDirectory(atPath: directory).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0)
        }
    }

    @Test("mosquitto holds none of our descriptors beyond 0, 1 and 2")
    func mosquittoInheritsNothing() throws {
        let marker = try Self.openInheritable()
        defer { close(marker.descriptor); unlink(marker.path) }
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let pid = try #require(broker.pid)
        let paths = try Self.openPaths(of: pid)
        #expect(!paths.contains(marker.path))
        // Its own descriptors are there: the console log on 1 and 2 (the check above is not vacuous).
        #expect(paths.filter { $0.hasSuffix("console.log") }.count == 2)
    }
}
