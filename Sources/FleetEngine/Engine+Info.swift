extension Engine {
    /// How many lanes (serial queues) the engine runs its clients on.
    public var laneCount: Int { lanes.count }
}

extension Engine {
    /// After `run`: frees what the clients kept (their state and the lanes' timing wheels), so the result's files
    /// are made in memory the clients held instead of on top of it (a worker's peak RSS was set at the end of its
    /// run, while its report and segment file were made beside every client of the run). The engine's result and
    /// settings stay; it cannot run again.
    public func releaseClients() {
        for lane in lanes { lane.queue.sync { lane.releaseClients() } }
    }
}

extension Lane {
    func releaseClients() {
        clients = []
        wheel = TimingWheel(clientCapacity: 1, kindsPerClient: wheel.kindsPerClient, tickNanoseconds: wheel.tickNanoseconds,
                            origin: wheel.origin)
        dirty = []
    }
}
