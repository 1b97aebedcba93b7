// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`).
///
/// A D-Bus peer may send up to 16 descriptors with a message (more on some
/// buses), and libdbus drops the whole connection when it cannot receive
/// them (`EMFILE`): for a daemon that owns a name, that is exiting. The
/// daemon therefore raises its soft limit to the hard limit (at most
/// 65536), as dbus-daemon does, and gives the apps it launches the soft
/// limit it started with (programs using `select()` expect 1024).
public enum DescriptorLimit {
    private nonisolated(unsafe) static var original: rlimit?
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    /// Raises the soft limit to the hard limit, capped at `ceiling`; returns the new soft limit.
    @discardableResult
    public static func raise(ceiling: rlim_t = 65536) -> rlim_t {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return 0 }
        if original == nil { original = limit }
        let wanted = min(limit.rlim_max, ceiling)
        guard wanted > limit.rlim_cur else { return limit.rlim_cur }
        var raised = limit
        raised.rlim_cur = wanted
        return setrlimit(Self.resource, &raised) == 0 ? wanted : limit.rlim_cur
    }

    /// Runs `body` (which starts a child process) with the soft limit the
    /// process started with, so the child inherits that, then raises it again.
    public static func withOriginalLimit<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard var startLimit = original else { return try body() }
        var current = rlimit()
        guard getrlimit(Self.resource, &current) == 0, current.rlim_cur != startLimit.rlim_cur,
              setrlimit(Self.resource, &startLimit) == 0 else { return try body() }
        defer { _ = setrlimit(Self.resource, &current) }
        return try body()
    }
}
