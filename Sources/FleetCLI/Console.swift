import Glibc

/// Where commands write. Writes go straight to file descriptors: the C `stdout`/`stderr` globals are shared
/// mutable state that Swift 6 strict concurrency rejects, and unbuffered writes keep progress lines in order.
public struct Console: Sendable {
    public var outputDescriptor: Int32 = 1
    public var errorDescriptor: Int32 = 2

    public init() {}

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

/// A command line that cannot be understood: printed with the command's usage, exit code 2.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
