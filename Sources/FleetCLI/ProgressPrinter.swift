import FleetMetrics
import Foundation
import Synchronization

/// Live progress while a run goes: on a terminal one line refreshed each second; otherwise a plain line every
/// 5 s (logs of CI jobs, pipes), never an escape sequence; nothing with --quiet. With NO_COLOR or TERM=dumb the
/// refreshed line is rewritten with a carriage return and spaces only.
final class ProgressPrinter: Sendable {
    let console: Console
    let quiet: Bool
    let totalSeconds: Double
    let targetClients: Int
    let refreshesInPlace: Bool
    private let lastPlainLine = Mutex<Double>(-5)
    private let shownInPlace = Atomic<Bool>(false)
    /// The length of the line shown in place, for blanking its rest without an escape sequence.
    private let shownLength = Atomic<Int>(0)

    init(console: Console, quiet: Bool, totalSeconds: Double, targetClients: Int) {
        self.console = console
        self.quiet = quiet
        self.totalSeconds = totalSeconds
        self.targetClients = targetClients
        self.refreshesInPlace = console.outputIsTerminal
    }

    func show(_ status: LiveStatus) {
        show(line: Self.line(status, totalSeconds: totalSeconds, targetClients: targetClients),
             elapsedSeconds: status.elapsedSeconds)
    }

    /// Shows a progress line of `elapsedSeconds` (`--workers`: the line summed from the workers' figures).
    func show(line: String, elapsedSeconds: Double) {
        guard !quiet else { return }
        if refreshesInPlace {
            if console.plainTerminal {
                // Spaces over what is left of the previous line instead of ESC [K (NO_COLOR, TERM=dumb).
                let blank = max(0, shownLength.exchange(line.count, ordering: .relaxed) - line.count)
                console.write("\r" + line + String(repeating: " ", count: blank), to: console.outputDescriptor)
            } else {
                console.write("\r\u{1B}[K" + line, to: console.outputDescriptor)
            }
            shownInPlace.store(true, ordering: .relaxed)
        } else {
            let due = lastPlainLine.withLock { last -> Bool in
                guard elapsedSeconds - last >= 5 else { return false }
                last = elapsedSeconds
                return true
            }
            if due { console.print(line) }
        }
    }

    /// Ends the refreshing line so the summary starts on its own line.
    func finish() {
        if shownInPlace.load(ordering: .relaxed) { console.write("\n", to: console.outputDescriptor) }
    }

    static func line(_ status: LiveStatus, totalSeconds: Double, targetClients: Int) -> String {
        line(elapsedSeconds: status.elapsedSeconds, totalSeconds: totalSeconds, connected: status.connected,
             targetClients: targetClients, publishedPerSecond: status.publishedPerSecond,
             receivedPerSecond: status.receivedPerSecond,
             arrivedPerSecond: status.lastArrived > status.lastReceived ? status.arrivedPerSecond : nil,
             endToEndP99Ms: status.endToEndP99Ms,
             ackTimeouts: status.counters.ackTimeouts.total, errors: errors(status.counters),
             linkCuts: status.counters.disconnects(.linkCut))
    }

    /// Failed connects and connections lost to an error (`DisconnectReason.Cause.error`). Not the client's own
    /// DISCONNECTs (end of run, churn), nor the links the scenario cut on purpose (tunnels, emulated drops and
    /// outages): those are `linkCuts`, shown apart.
    static func errors(_ counters: ClientCounters) -> UInt64 {
        counters.connectsFailed + counters.disconnects(.error)
    }

    static func line(elapsedSeconds: Double, totalSeconds: Double, connected: Int, targetClients: Int,
                     publishedPerSecond: Double, receivedPerSecond: Double, arrivedPerSecond: Double? = nil,
                     endToEndP99Ms: Double?, ackTimeouts: UInt64, errors: UInt64, linkCuts: UInt64 = 0) -> String {
        // Past the plan's end the run waits for acks and messages still on their way (the drain), which can take
        // long (vehicles still in a tunnel); say so rather than show a clock running past its end unexplained.
        let draining = elapsedSeconds.rounded(.down) > totalSeconds.rounded(.down)
        var parts = [
            "[\(pad(Int(elapsedSeconds.rounded(.down)), 4))s/\(Int(totalSeconds))s\(draining ? " draining" : "")]",
            "connected \(connected)/\(targetClients)",
            "pub \(Int(publishedPerSecond.rounded()))/s",
            "recv \(Int(receivedPerSecond.rounded()))/s",
        ]
        // recv is this run's messages; once others' (another run's, other tools', retained leftovers) have
        // arrived too, every arrival is shown beside it.
        if let arrivedPerSecond { parts.append("arrived \(Int(arrivedPerSecond.rounded()))/s") }
        if let p99 = endToEndP99Ms { parts.append(String(format: "e2e p99 %.2f ms", p99)) }
        parts.append("ack timeouts \(ackTimeouts)")
        parts.append("errors \(errors)")
        // Tunnels and emulated link drops and outages: what the scenario asked for, named as such.
        if linkCuts > 0 { parts.append("link cuts \(linkCuts)") }
        return parts.joined(separator: "  ")
    }

    static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
