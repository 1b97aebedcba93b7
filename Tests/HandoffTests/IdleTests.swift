// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
import TypedValues

@Suite("Handoff idles asleep", .serialized)
struct IdleTests {
    /// Context switches of every thread of a process so far.
    func contextSwitches(_ pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            return total + status.split(separator: "\n").filter { $0.contains("ctxt_switches") }
                .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
        }
    }

    /// Enabled, listening, no device: nothing is due, so no timer is armed.
    /// Start-up work (replies, GLib's thread pool winding down) may come late
    /// on a loaded machine, so the test first waits (up to a minute) for two
    /// quiet seconds, which a daemon with a once-a-second check never has;
    /// then it stays asleep. Load cannot wake a sleeping process.
    /// Not under the sanitizers: ThreadSanitizer's runtime thread wakes the
    /// process ten times a second whatever the daemon does.
    @Test(.disabled(if: ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
                        || ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil,
                    "a sanitizer's runtime wakes the process on its own"))
    func enabledWithNoDeviceItDoesNotWakeUp() throws {
        let stack = try HandoffStack("A")
        try stack.set("Enabled", .boolean(true))
        #expect(waitUntil(timeout: 20) { stack.port > 0 })
        let pid = try #require(stack.handoffd?.pid)
        var quiet = false
        for _ in 0..<30 where !quiet {
            let before = contextSwitches(pid)
            Thread.sleep(forTimeInterval: 2)
            quiet = contextSwitches(pid) == before
        }
        #expect(quiet, "handoffd never stayed asleep for 2 s\n\(stack.handoffLog)")
        // A check once a second is 10 wake-ups here; a stray one (a bus
        // signal) is allowed, a timer is not.
        let before = contextSwitches(pid)
        Thread.sleep(forTimeInterval: 10)
        let after = contextSwitches(pid)
        #expect(after - before <= 4, "\(after - before) context switches in 10 s while idle\n\(stack.handoffLog)")
    }
}
