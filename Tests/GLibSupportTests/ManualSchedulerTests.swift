// SPDX-License-Identifier: Apache-2.0
import SchedulerTestSupport
import GLibSupport
import Testing

@Suite struct ManualSchedulerTests {
    @Test("Timers run at their due time, earliest first, with the clock reading that time")
    func timersRunInDueOrder() {
        let scheduler = ManualScheduler(now: 1_000_000)
        var ran: [(String, Int64)] = []
        let late = scheduler.after(milliseconds: 30) { ran.append(("late", scheduler.now)) }
        let early = scheduler.after(milliseconds: 10) { ran.append(("early", scheduler.now)) }
        let alsoEarly = scheduler.after(milliseconds: 10) { ran.append(("also early", scheduler.now)) }
        scheduler.advance(byMilliseconds: 9)
        #expect(ran.isEmpty)
        #expect(scheduler.now == 1_009_000)
        scheduler.advance(byMilliseconds: 25)
        #expect(ran.map(\.0) == ["early", "also early", "late"])
        #expect(ran.map(\.1) == [1_010_000, 1_010_000, 1_030_000])
        #expect(scheduler.now == 1_034_000)
        #expect(![late, early, alsoEarly].contains { $0.isPending })
    }

    @Test("Cancelled or released work never runs; work added by work runs when it falls due within the span")
    func cancelReleaseAndChains() {
        let scheduler = ManualScheduler(now: 0)
        var ran: [String] = []
        let cancelled = scheduler.after(milliseconds: 1) { ran.append("cancelled") }
        cancelled.cancel()
        scheduler.after(milliseconds: 1) { ran.append("released") }
        var chained: ScheduledWork?
        let first = scheduler.after(milliseconds: 5) {
            ran.append("first")
            chained = scheduler.after(milliseconds: 5) { ran.append("second") }
        }
        scheduler.advance(byMilliseconds: 9)
        #expect(ran == ["first"])
        scheduler.advance(byMilliseconds: 1)
        #expect(ran == ["first", "second"])
        withExtendedLifetime((first, chained)) {}
    }

    @Test("Idle work runs on runIdle or after an advance, oldest first; what it adds waits for the next turn")
    func idleWork() {
        let scheduler = ManualScheduler(now: 0)
        var ran: [String] = []
        var later: ScheduledWork?
        let a = scheduler.whenIdle {
            ran.append("a")
            later = scheduler.whenIdle { ran.append("later") }
        }
        let b = scheduler.whenIdle { ran.append("b") }
        #expect(scheduler.pendingCount == 2)
        scheduler.runIdle()
        #expect(ran == ["a", "b"])
        #expect(scheduler.pendingCount == 1)
        scheduler.advance(byMilliseconds: 0)
        #expect(ran == ["a", "b", "later"])
        #expect(scheduler.pendingCount == 0)
        withExtendedLifetime((a, b, later)) {}
    }
}
