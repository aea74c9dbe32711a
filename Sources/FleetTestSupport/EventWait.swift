import FleetBroker
import Foundation

/// Waiting in tests for something to happen (a file to grow, a process to print a line, a broker to log a
/// subscription, an engine to reach a count) instead of sleeping for a guessed time. The condition is checked
/// every `interval` until it holds; `seconds` is a guard against hanging only, nothing asserts on how long it took.
public enum EventWait {
    /// True when `condition` held within `seconds`.
    @discardableResult
    public static func until(seconds: Double = 30, interval: Double = 0.01, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: interval)
        }
        return true
    }
}

extension MosquittoBroker {
    /// The configuration line that makes mosquitto log every subscription ("<time>: <client id> <qos> <filter>"),
    /// for `loggedSubscriptions`.
    public static let subscriptionLogging = "log_type subscribe"

    /// How many subscriptions to exactly `filter` mosquitto has logged (a broker started with
    /// `subscriptionLogging` among its `extraLines`; mosquitto writes each line as it happens).
    public func loggedSubscriptions(to filter: String) -> Int {
        guard let log = try? String(contentsOfFile: logPath, encoding: .utf8) else { return 0 }
        return log.split(separator: "\n").count { $0.hasSuffix(" " + filter) }
    }

    /// Waits until mosquitto has logged `count` subscriptions to `filter` (at most `seconds`). True when it has.
    public func waitForSubscriptions(to filter: String, count: Int = 1, seconds: Double = 20) -> Bool {
        EventWait.until(seconds: seconds) { loggedSubscriptions(to: filter) >= count }
    }
}
