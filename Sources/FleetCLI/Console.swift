import FleetPayload
import Foundation
import Glibc

/// Where commands write. Writes go straight to file descriptors: the C `stdout`/`stderr` globals are shared
/// mutable state that Swift 6 strict concurrency rejects, and unbuffered writes keep progress lines in order.
public struct Console: Sendable {
    public var outputDescriptor: Int32 = 1
    public var errorDescriptor: Int32 = 2
    /// `NO_COLOR` set (and not empty) or `TERM=dumb`: no escape sequences at all, even on a terminal. fleetbench
    /// prints no colour; the only escape it writes is the one that clears the refreshed progress line.
    public var plainTerminal: Bool

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        plainTerminal = !(environment["NO_COLOR"] ?? "").isEmpty || environment["TERM"] == "dumb"
    }

    public func print(_ text: String) { write(text + "\n", to: outputDescriptor) }
    public func error(_ text: String) { write(text + "\n", to: errorDescriptor) }

    /// Whether standard output is a terminal (live progress refreshes one line only there).
    public var outputIsTerminal: Bool { isatty(outputDescriptor) == 1 }

    public func write(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// A command line that cannot be understood: exit code 2. Printed with the command's usage, except for an
/// unknown option, where the closest option says more than a screen of help.
struct UsageError: Error {
    let message: String
    /// Whether the command's whole help follows the message.
    var showsHelp = true
    init(_ message: String) { self.message = message }

    /// `unknown option '--qiuet' for run; did you mean '--quiet'?`, the options being those the help names.
    static func unknownOption(_ argument: String, command: String, help: String) -> UsageError {
        let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
        var message = "unknown option '\(argument)' for \(command)"
        if let suggestion = closestMatch(to: name, among: options(in: help)) { message += "; did you mean '\(suggestion)'?" }
        var error = UsageError(message)
        error.showsHelp = false
        return error
    }

    /// Every option a help text names (`--tolerance`, `-h`): the help is the one list of options there is.
    static func options(in help: String) -> [String] {
        var found: [String] = []
        for word in help.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "[" || $0 == "]" || $0 == "," }) {
            let option = word.prefix { $0.isLetter || $0.isNumber || $0 == "-" }
            let isLong = option.hasPrefix("--") && option.count > 2
            let isShort = option.count == 2 && option.hasPrefix("-") && option.last!.isLetter
            guard isLong || isShort else { continue }
            let text = String(option)
            if !found.contains(text) { found.append(text) }
        }
        return found
    }
}

extension Console {
    /// A usage error of `command`: its message, then the command's help or a pointer to it.
    func usageError(_ error: UsageError, command: String, help: String) {
        if error.showsHelp {
            self.error("fleetbench \(command): \(error.message)\n\n\(help)")
        } else {
            self.error("fleetbench \(command): \(error.message)\n`fleetbench \(command) --help` lists every option.")
        }
    }
}
