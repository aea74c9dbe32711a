import Foundation

/// Background work for tests on a thread of its own.
///
/// Swift Testing runs tests on the same Dispatch worker pool as `DispatchQueue.global()`, and many tests block
/// those workers (synchronous connects, semaphores, engine runs). On a 2-core CI machine a block sent to
/// `DispatchQueue.global().async` then waited more than 5 s for a worker, and a fake server never answered in time.
/// A `Thread` starts at once whatever the pool is doing.
public enum TestThread {
    /// Runs `body` now on a new thread.
    public static func start(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.start()
    }

    /// Runs `body` on a new thread after `delay`: for signals timed against a run (SIGSTOP, SIGCONT, SIGKILL)
    /// that must not slip behind a busy worker pool.
    public static func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) {
        start {
            let (seconds, attoseconds) = delay.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            body()
        }
    }
}
