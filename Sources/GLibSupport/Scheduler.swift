// SPDX-License-Identifier: Apache-2.0
import CGLib
import DBusKit

/// Work a ``Scheduler`` will run later, until it runs, is cancelled, or is
/// released (as a ``GLibSource`` is: whoever wants the work keeps the handle).
public protocol ScheduledWork: AnyObject {
    /// Stops the work; it never runs afterwards.
    func cancel()
    /// Whether it is still waiting to run.
    var isPending: Bool { get }
}

/// Time for the service: the wall clock and one-shot work after a delay or
/// when the loop has nothing else to do. Everything it runs runs on the
/// thread that owns it, like the loop's sources.
///
/// The daemons use ``GLibScheduler``; tests drive a `ManualScheduler` (in
/// the SchedulerTestSupport module, which no product links) by hand, so
/// that an expiration date or a batching deadline is reached by
/// `advance(byMilliseconds:)` instead of by sleeping.
public protocol Scheduler: AnyObject {
    /// Wall-clock time in Unix microseconds.
    var now: Int64 { get }
    /// Monotonic microseconds (unaffected by clock changes): for intervals,
    /// keepalives and deadlines rather than dates.
    var monotonic: Int64 { get }
    /// Runs `action` once, `milliseconds` from now.
    @discardableResult
    func after(milliseconds: UInt32, _ action: @escaping () -> Void) -> ScheduledWork
    /// Runs `action` once, when no descriptor, timer or other ready work waits.
    @discardableResult
    func whenIdle(_ action: @escaping () -> Void) -> ScheduledWork
}

extension GLibSource: ScheduledWork {
    public var isPending: Bool { isActive }
}

/// The daemon's ``Scheduler``: GLib timeout and idle sources on a loop.
public final class GLibScheduler: Scheduler {
    private let loop: MainLoop
    private let clock: () -> Int64

    /// - Parameter clock: the wall clock (Unix µs); GLib's real time unless given.
    public init(loop: MainLoop, clock: @escaping () -> Int64 = { currentTimeMicroseconds() }) {
        self.loop = loop
        self.clock = clock
    }

    public var now: Int64 { clock() }

    public var monotonic: Int64 { Int64(g_get_monotonic_time()) }

    public func after(milliseconds: UInt32, _ action: @escaping () -> Void) -> ScheduledWork {
        loop.after(milliseconds: milliseconds, action)
    }

    public func whenIdle(_ action: @escaping () -> Void) -> ScheduledWork {
        loop.whenNothingElseIsReady(action)
    }
}
