// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One spinning thread per CPU at `SCHED_IDLE` priority (`--keep-awake`).
///
/// A round trip through the bus wakes three processes in turn. When the CPUs
/// have nothing else to do they halt between hops, and under a hypervisor
/// waking a halted vCPU costs tens of microseconds: a quiet machine then
/// measures a *slower* Ping than a busy one, and the short Ping baseline
/// suffers most. `SCHED_IDLE` threads run only when nothing else wants the
/// CPU, so they keep it awake without delaying the client, the bus or the
/// daemon (they are preempted at once on wake-up).
enum CPUKeepAwake {
    nonisolated(unsafe) private static var started = false
    /// `SCHED_IDLE` from <linux/sched.h>: Glibc declares it only under
    /// _GNU_SOURCE, which the Swift overlay does not define.
    private static let schedIdle: Int32 = 5

    static func start() {
        guard !started else { return }
        started = true
        for _ in 0..<max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) {
            Thread.detachNewThread {
                // On Linux, pid 0 means the calling thread, not the whole process.
                var parameter = sched_param(sched_priority: 0)
                guard sched_setscheduler(0, schedIdle, &parameter) == 0 else { return }
                var counter: UInt64 = 0
                while true { counter &+= 1; if counter == 0 { sched_yield() } }
            }
        }
    }
}
