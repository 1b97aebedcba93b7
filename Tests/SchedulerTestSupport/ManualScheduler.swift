// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport

/// A ``Scheduler`` whose time moves only when the test says so
/// (after swift-nio's `EmbeddedEventLoop`).
///
/// Call it on the thread that runs the code under test (for a service on a
/// loop thread, from work run on that loop).
///
/// ```swift
/// let scheduler = ManualScheduler(now: 1_800_000_000_000_000)
/// scheduler.after(milliseconds: 10) { print("ran") }
/// scheduler.advance(byMilliseconds: 10)   // prints "ran"
/// ```
public final class ManualScheduler: Scheduler, @unchecked Sendable {
    private final class Work: ScheduledWork {
        let due: Int64
        let order: Int
        var action: (() -> Void)?
        init(due: Int64, order: Int, action: @escaping () -> Void) {
            self.due = due
            self.order = order
            self.action = action
        }
        func cancel() { action = nil }
        var isPending: Bool { action != nil }
    }

    /// Held weakly: released work is cancelled work, as with GLib sources.
    private struct Entry {
        weak var work: Work?
        let due: Int64
        let order: Int
    }

    /// Read from any thread (a test checking dates); the work lists from the owning thread only.
    /// ThreadLock, not NSLock: Foundation would bring ICU into the daemon.
    private let lock = ThreadLock()
    private var microseconds: Int64
    private var timers: [Entry] = []
    private var idle: [Entry] = []
    private var nextOrder = 0

    public init(now: Int64) { microseconds = now }

    public var now: Int64 { lock.withLock { microseconds } }

    /// Moves with ``now``: a test steps one clock.
    public var monotonic: Int64 { now }

    public func after(milliseconds: UInt32, _ action: @escaping () -> Void) -> ScheduledWork {
        let work = Work(due: now + Int64(milliseconds) * 1000, order: nextOrder, action: action)
        nextOrder += 1
        timers.append(Entry(work: work, due: work.due, order: work.order))
        return work
    }

    public func whenIdle(_ action: @escaping () -> Void) -> ScheduledWork {
        let work = Work(due: now, order: nextOrder, action: action)
        nextOrder += 1
        idle.append(Entry(work: work, due: work.due, order: work.order))
        return work
    }

    /// How many timers and idle work wait to run.
    public var pendingCount: Int {
        (timers + idle).filter { $0.work?.isPending == true }.count
    }

    /// Runs the idle work waiting now, oldest first (work it adds waits for the next call).
    public func runIdle() {
        let ready = idle
        idle = []
        for entry in ready { fire(entry.work) }
    }

    /// Moves the clock forward by `milliseconds`, running each timer that
    /// falls due at its own time (earliest first, then in the order they were
    /// added), then the idle work. Timers that the work adds run too if they
    /// fall due within the span.
    public func advance(byMilliseconds milliseconds: Int64) {
        let end = now + milliseconds * 1000
        while true {
            timers.removeAll { $0.work?.isPending != true }
            guard let next = timers.min(by: { ($0.due, $0.order) < ($1.due, $1.order) }), next.due <= end else { break }
            timers.removeAll { $0.order == next.order }
            lock.withLock { microseconds = max(microseconds, next.due) }
            fire(next.work)
        }
        lock.withLock { microseconds = end }
        runIdle()
    }

    private func fire(_ work: Work?) {
        guard let work, let action = work.action else { return }
        work.action = nil
        action()
    }
}
