import Dispatch
import Glibc
import Synchronization

/// Ctrl-C and SIGTERM during a run: the first asks the run to stop cleanly (DISCONNECT, results written,
/// marked interrupted); the second exits at once with 130.
final class RunControl: Sendable {
    private let requests = Atomic<Int>(0)
    /// Kept alive for the process's lifetime; only written once, before any signal can arrive.
    nonisolated(unsafe) private var sources: [DispatchSourceSignal] = []

    private let stagesOver = Atomic<Bool>(false)
    /// What a second signal does before it exits: stop the embedded broker, remove partial results.
    private let quitActions = Mutex<[@Sendable () -> Void]>([])

    /// Registers `action` to run when a second signal quits at once (before `_exit(130)`).
    func onQuit(_ action: @escaping @Sendable () -> Void) { quitActions.withLock { $0.append(action) } }

    /// A signal asked the run to stop.
    var stopRequested: Bool { requests.load(ordering: .relaxed) > 0 }
    /// The run ended (or was asked to): the stage timeline stops too.
    var stagesShouldStop: Bool { stopRequested || stagesOver.load(ordering: .relaxed) }

    func requestStopOfStages() { stagesOver.store(true, ordering: .relaxed) }

    func requestStop() { requests.add(1, ordering: .relaxed) }

    /// Routes SIGINT and SIGTERM to this control instead of the default (terminate).
    func installSignalHandlers(console: Console) {
        // A file size limit (ulimit -f) must fail the results' write with EFBIG, reported, not kill the process.
        signal(SIGXFSZ, SIG_IGN)
        var installed: [DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let previous = requests.add(1, ordering: .relaxed).oldValue
                if previous == 0 {
                    console.error("\nfleetbench: stopping (DISCONNECT, then results are written); press Ctrl-C again to quit at once")
                } else {
                    console.error("fleetbench: quitting without writing results")
                    for action in quitActions.withLock({ $0 }) { action() }
                    _exit(130)
                }
            }
            source.resume()
            installed.append(source)
        }
        sources = installed
    }
}
