import CSeccomp
import Foundation
import Glibc

/// A thread on which io_uring_setup fails as it does in a container whose seccomp profile forbids io_uring (EPERM)
/// or on a kernel without it (ENOSYS), for testing the send(2) fallback without touching the rest of the process.
///
/// The filter holds for that thread and every thread it creates, so `body` must not start threads (no Dispatch
/// `async`, which may create a worker from the calling thread): build the object under test there, use it elsewhere.
public enum ThreadWithoutIOURing {
    /// One filtered thread at a time, so `filteredThreadsLeft` counts only the current run's.
    private static let exclusive = NSLock()

    /// Runs `body` on a new thread whose io_uring_setup fails with `error`, waits for the thread to end, and returns
    /// body's value with the number of the process's threads still under a seccomp filter afterwards (0 unless a
    /// thread started by `body` inherited it).
    public static func run<Value>(failingWith error: Int32, _ body: () throws -> Value) throws
        -> (value: Value, filteredThreadsLeft: Int)
    {
        try exclusive.withLock {
            let outcome = try withoutActuallyEscaping(body) { body in
                let box = Box(body, error: error)
                var thread = pthread_t()
                let context = Unmanaged<FilteredWork>.passRetained(box).toOpaque()
                let created = pthread_create(&thread, nil, { context in
                    Unmanaged<FilteredWork>.fromOpaque(context!).takeRetainedValue().runFiltered()
                    return nil
                }, context)
                guard created == 0 else {
                    Unmanaged<FilteredWork>.fromOpaque(context).release()
                    throw ThreadError(message: "pthread_create failed: errno \(created)")
                }
                pthread_join(thread, nil)
                return (try box.outcome().get(), box.threadID)
            }
            // pthread_join returns when the kernel clears the thread's id, which is before the exited thread leaves
            // /proc/self/task: the filtered thread itself may still be listed there for a moment, so it is not
            // counted (the question is whether a thread it started kept the filter).
            return (outcome.0, filteredThreads(excluding: outcome.1))
        }
    }

    /// The calling thread's kernel id, as /proc/self/task names it.
    public static func currentThreadID() -> pid_t { pid_t(fb_thread_id()) }

    /// Threads of this process in seccomp filter mode (`Seccomp: 2` in /proc/self/task/*/status).
    static func filteredThreads(excluding excluded: pid_t = 0) -> Int {
        guard let directory = opendir("/proc/self/task") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true, pid_t(name) != excluded,
                  let file = fopen("/proc/self/task/\(name)/status", "r") else { continue }
            defer { fclose(file) }
            var line = [CChar](repeating: 0, count: 256)
            while fgets(&line, Int32(line.count), file) != nil {
                let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let fields = text.split(whereSeparator: \.isWhitespace)
                if fields.first == "Seccomp:" {
                    if fields.dropFirst().first == "2" { count += 1 }
                    break
                }
            }
        }
        return count
    }

    public struct ThreadError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// What the filtered thread runs (not generic: a C thread entry cannot name a generic type).
    private class FilteredWork: @unchecked Sendable {
        let error: Int32
        /// The filtered thread's kernel id, written by that thread before it runs the body.
        var threadID: pid_t = 0
        init(error: Int32) { self.error = error }

        func runFiltered() {
            threadID = pid_t(fb_thread_id())
            let installed = fb_forbid_io_uring_setup(error)
            guard installed == 0 else {
                fail("the seccomp filter was refused: errno \(-installed)")
                return
            }
            run()
        }

        func run() {}
        func fail(_ message: String) {}
    }

    private final class Box<Value>: FilteredWork, @unchecked Sendable {
        let body: () throws -> Value
        /// Written by the filtered thread, read after pthread_join.
        var result: Result<Value, any Error>?

        init(_ body: @escaping () throws -> Value, error: Int32) {
            self.body = body
            super.init(error: error)
        }

        override func run() { result = Result { try body() } }
        override func fail(_ message: String) { result = .failure(ThreadError(message: message)) }

        func outcome() -> Result<Value, any Error> {
            result ?? .failure(ThreadError(message: "the filtered thread did not run"))
        }
    }
}
