import Glibc

/// The engine's only clock: CLOCK_MONOTONIC in nanoseconds. Never the wall clock: latency must not jump when NTP
/// adjusts the time. A read is cheap but not free (figure in docs/performance.md), so lanes read it once per turn
/// and pass the value down.
public enum MonotonicClock {
    @inline(__always)
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
