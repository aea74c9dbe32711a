import FleetBroker
import Foundation

/// The throwaway CA and certificates the tests share (FleetBroker's `ThrowawayCertificates`, with a client
/// certificate and an unrelated CA), made once per test process with the `openssl` command and removed when the
/// process exits. One copy for every test target instead of one per target.
public enum TestCertificates {
    static let shared: Result<ThrowawayCertificates, ThrowawayCertificates.Failure> = Result {
        () throws(ThrowawayCertificates.Failure) in
        let certificates = try ThrowawayCertificates.make(clientCertificate: true, unrelatedCA: true, label: "test-certs")
        createdDirectory = certificates.directory
        // Static storage is never deinitialized: remove the files when the test process exits.
        atexit {
            if let directory = TestCertificates.createdDirectory { try? FileManager.default.removeItem(atPath: directory) }
        }
        return certificates
    }

    public static func get() throws -> ThrowawayCertificates { try shared.get() }

    /// Written once, inside the one-time initialization of `shared`; read by the exit handler.
    nonisolated(unsafe) private static var createdDirectory: String?
}
