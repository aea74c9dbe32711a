#if canImport(Glibc)
import Glibc
#endif

/// Finds the mosquitto executable. Debian installs it in /usr/sbin, which is often not on a user's PATH.
public enum MosquittoLocator {
    /// The directories searched by default: each entry of `pathVariable`, then /usr/sbin and /usr/local/sbin.
    public static func defaultSearchDirectories(pathVariable: String?) -> [String] {
        var directories: [String] = []
        for entry in (pathVariable ?? "").split(separator: ":") where !entry.isEmpty {
            let directory = String(entry)
            if !directories.contains(directory) { directories.append(directory) }
        }
        for directory in ["/usr/sbin", "/usr/local/sbin"] where !directories.contains(directory) {
            directories.append(directory)
        }
        return directories
    }

    /// The first executable `mosquitto` in `directories`, or `MosquittoError.notInstalled` naming them all.
    public static func locate(in directories: [String]) throws(MosquittoError) -> String {
        for directory in directories {
            let candidate = directory.hasSuffix("/") ? directory + "mosquitto" : directory + "/mosquitto"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw .notInstalled(searchedDirectories: directories)
    }

    /// Searches $PATH, then /usr/sbin and /usr/local/sbin.
    public static func locate() throws(MosquittoError) -> String {
        let pathVariable = getenv("PATH").map { String(cString: $0) }
        return try locate(in: defaultSearchDirectories(pathVariable: pathVariable))
    }
}
