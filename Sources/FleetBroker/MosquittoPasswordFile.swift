import Foundation

/// A mosquitto password file for one user, made with mosquitto's own `mosquitto_passwd` (its hash format is
/// mosquitto's business), for brokers that must refuse anonymous clients.
public enum MosquittoPasswordFile {
    /// Writes `path` holding `user` with `password`, readable by the broker even after it drops root for the
    /// `mosquitto` user. Throws with mosquitto_passwd's status when it fails.
    public static func create(at path: String, user: String, password: String) throws(MosquittoError) {
        try create(at: path, users: [(user: user, password: password)])
    }

    /// Writes `path` holding every (user, password) pair, in order (one `mosquitto_passwd` call per user).
    public static func create(at path: String, users: [(user: String, password: String)]) throws(MosquittoError) {
        for (position, entry) in users.enumerated() {
            let tool = Process()
            tool.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_passwd")
            // -c only for the first: it starts the file, the others are added to it.
            tool.arguments = position == 0 ? ["-b", "-c", path, entry.user, entry.password] : ["-b", path, entry.user, entry.password]
            tool.standardOutput = FileHandle.nullDevice
            tool.standardError = FileHandle.nullDevice
            do { try tool.run() } catch {
                throw .launchFailed(executable: "/usr/bin/mosquitto_passwd", reason: "\(error)")
            }
            tool.waitUntilExit()
            guard tool.terminationStatus == 0 else {
                throw .launchFailed(executable: "/usr/bin/mosquitto_passwd",
                                    reason: "exited with status \(tool.terminationStatus) writing \(path)")
            }
        }
        _ = chmod(path, 0o644)
    }
}
