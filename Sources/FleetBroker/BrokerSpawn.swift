import CLinux
import Glibc

/// Spawn attributes for a broker process. The child inherits the calling thread's signal mask and ignored signals;
/// Dispatch and test-runner threads block SIGTERM, so without a reset a broker never sees our SIGTERM and every stop
/// ends in SIGKILL. `ownProcessGroup` puts the child in a group of its own, so a whole tree can be killed at once.
public enum BrokerSpawn {
    public static func resetSignals(_ attributes: inout posix_spawnattr_t, ownProcessGroup: Bool) {
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaultSignals = sigset_t()
        sigemptyset(&defaultSignals)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2] { sigaddset(&defaultSignals, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
    }

    /// Closes every descriptor from 3 up in the child, after the spawn's own dup2/open actions. Descriptors that
    /// are not close-on-exec would otherwise live on in the broker: a lock held by whoever started us (`flock`
    /// passes its lock to the command it runs, so an orphaned broker kept the lock of a finished test run), the
    /// write end of another broker's stdin pipe (keeping that one alive), or a worker's log file.
    public static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
    }
}
