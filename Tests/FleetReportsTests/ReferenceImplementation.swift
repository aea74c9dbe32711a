import Foundation
import Testing

/// Runs the reference HdrHistogram implementation (the `hdrhistogram` Python package, module `hdrh`) on a small
/// script. Tests that need it fail, with the install command, when it is missing.
enum ReferenceImplementation {
    static let missingMessage =
        "the reference HdrHistogram implementation is missing: pip install hdrhistogram (python3 module hdrh)"

    /// Runs `script` with python3, `arguments` as sys.argv[1...]; returns stdout, or nil after recording an issue.
    static func runPython(_ script: String, arguments: [String] = []) -> String? {
        guard probe() else {
            Issue.record(Comment(rawValue: missingMessage))
            return nil
        }
        guard let result = run(["python3", "-c", script] + arguments) else {
            Issue.record("could not start python3")
            return nil
        }
        guard result.status == 0 else {
            Issue.record("python3 failed (\(result.status)): \(result.stderr)")
            return nil
        }
        return result.stdout
    }

    static func probe() -> Bool {
        run(["python3", "-c", "import hdrh.histogram, hdrh.log"])?.status == 0
    }

    private static func run(_ command: [String]) -> (status: Int32, stdout: String, stderr: String)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch { return nil }
        // Read before waiting so a large output cannot fill the pipe and block the child.
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    /// Writes `text` to a fresh temporary file and returns its path.
    static func temporaryFile(_ text: String, suffix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("fleetbench-\(UUID().uuidString)\(suffix)").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

enum Fixtures {
    static func text(_ name: String) throws -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures") else {
            throw FixtureError.missing(name)
        }
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func json(_ name: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(try text(name).utf8))
    }

    enum FixtureError: Error { case missing(String) }
}
