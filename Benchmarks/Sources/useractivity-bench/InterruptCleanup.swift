// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C (or SIGTERM, SIGHUP) in the middle of a run must not leave the
/// private dbus-daemon and the useractivityd it activated running: they lead
/// their own process group, so the terminal's SIGINT never reaches them, and
/// an idle leftover daemon would sit in every later measurement.
///
/// The signals are blocked in every thread and taken by one thread with
/// `sigwait`, where ordinary code (not just async-signal-safe calls) may run.
/// Children are unaffected: `ChildProcess` starts them with an empty mask.
enum InterruptCleanup {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var processGroup: pid_t = 0
    nonisolated(unsafe) private static var directories: [String] = []
    nonisolated(unsafe) private static var _interrupted = false

    /// A signal arrived: the bus is being torn down under the run, so its
    /// errors are expected and the cleanup thread ends the process.
    static var interrupted: Bool {
        lock.lock(); defer { lock.unlock() }
        return _interrupted
    }

    /// Called where a failure may be the interruption's doing: never returns
    /// then (the cleanup thread exits), so no misleading error is printed.
    static func parkIfInterrupted() {
        guard interrupted else { return }
        while true { sleep(60) }
    }

    private static func signals() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, signal) }
        return set
    }

    /// Call first thing, before any other thread exists, so all inherit the mask.
    static func install() {
        var set = signals()
        pthread_sigmask(SIG_BLOCK, &set, nil)
        Thread.detachNewThread {
            var set = signals()
            var received: Int32 = 0
            guard sigwait(&set, &received) == 0 else { return }
            lock.lock()
            _interrupted = true
            let group = processGroup
            let leftovers = directories
            lock.unlock()
            if group > 0 {
                _ = kill(-group, SIGTERM)
                usleep(300_000)
                _ = kill(-group, SIGKILL)
            }
            for directory in leftovers { try? FileManager.default.removeItem(atPath: directory) }
            FileHandle.standardError.write(Data("useractivity-bench: interrupted; private bus stopped\n".utf8))
            exit(128 + received)
        }
    }

    /// What to stop and remove if a signal arrives now.
    static func track(processGroup group: pid_t, directories paths: [String]) {
        lock.lock(); defer { lock.unlock() }
        processGroup = group
        directories = paths
    }

    /// The run cleaned up itself.
    static func untrack() {
        track(processGroup: 0, directories: [])
    }
}
