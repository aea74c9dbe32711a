import FleetBroker
import FleetEngine
import FleetScenario
import Foundation

/// Fires the timeline's fault stages at their start times while the engine runs: broker restarts (embedded
/// broker only), tunnels and churn. Runs on its own thread; the engine's API is safe to call from any thread.
final class StageRunner: @unchecked Sendable {
    struct Action {
        /// Nanoseconds after the run's start.
        let offset: UInt64
        let stage: Stage
    }

    let actions: [Action]
    let broker: MosquittoBroker?
    let control: RunControl
    let console: Console
    let quiet: Bool
    private let finished = DispatchSemaphore(value: 0)
    private var thread: Thread?

    init(scenario: Scenario, broker: MosquittoBroker?, control: RunControl, console: Console, quiet: Bool) {
        var actions: [Action] = []
        var offset: UInt64 = 0
        for stage in scenario.stages {
            switch stage.kind {
            case .brokerRestart, .tunnel, .churn: actions.append(Action(offset: offset, stage: stage))
            default: break
            }
            offset += stage.duration.nanoseconds
        }
        self.actions = actions
        self.broker = broker
        self.control = control
        self.console = console
        self.quiet = quiet
    }

    /// Starts the timeline now (the run's start).
    func start(engine: Engine) {
        guard !actions.isEmpty else {
            finished.signal()
            return
        }
        let start = MonotonicClock.now()
        let thread = Thread { [self] in
            defer { finished.signal() }
            for action in actions {
                guard sleep(until: start &+ action.offset) else { return }
                perform(action.stage, engine: engine)
            }
        }
        self.thread = thread
        thread.start()
    }

    /// Waits for a stage still in progress (a broker restart) so the broker is up when results are written.
    func wait() { finished.wait() }

    /// Sleeps in short steps so a stop request ends the timeline; false when stopped.
    private func sleep(until deadline: UInt64) -> Bool {
        while MonotonicClock.now() < deadline {
            if control.stagesShouldStop { return false }
            let remaining = deadline - MonotonicClock.now()
            usleep(UInt32(min(remaining / 1000, 50_000)))
        }
        return !control.stagesShouldStop
    }

    private func perform(_ stage: Stage, engine: Engine) {
        switch stage.kind {
        case .brokerRestart(let downtime):
            guard let broker else { return }
            if !quiet { console.print("stage restart: stopping the embedded broker for \(downtime)") }
            broker.stop()
            _ = sleep(until: MonotonicClock.now() &+ downtime.nanoseconds)
            do {
                try broker.restart()
                if !quiet { console.print("stage restart: broker back on \(broker.url)") }
            } catch {
                console.error("fleetbench: the embedded broker did not come back: \(error)")
            }
        case .tunnel, .churn:
            performClientFault(stage, engine: engine)
        default:
            break
        }
    }
}
