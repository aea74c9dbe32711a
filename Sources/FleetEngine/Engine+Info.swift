extension Engine {
    /// How many lanes (serial queues) the engine runs its clients on.
    public var laneCount: Int { lanes.count }
}
