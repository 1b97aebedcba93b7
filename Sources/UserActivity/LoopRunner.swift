// SPDX-License-Identifier: Apache-2.0
import Foundation
import GLibSupport

/// Runs jobs on the thread of a GLib ``MainLoop``, in the order they were
/// handed over, from any thread.
///
/// Every use of libdbus goes through here: the connection is attached to the
/// same loop, so its watches, timeouts, replies and incoming calls are all
/// handled on that one thread and need no locks of their own.
///
/// One idle source drains the whole queue, so jobs run strictly first in,
/// first out (separate idle sources would be ordered by GLib's source list,
/// which the contract does not promise).
final class LoopRunner: @unchecked Sendable {
    let loop: MainLoop
    /// Whether the loop runs on a thread of the library's own.
    let ownsThread: Bool

    private let lock = NSLock()
    private var jobs: [@Sendable () -> Void] = []
    private var drainSource: GLibSource?
    private var stopped = false
    private var thread: Thread?
    private let threadFinished = DispatchSemaphore(value: 0)
    /// The loop thread's identity, once known (the first job records it).
    private var loopThreadID: pthread_t?

    /// A loop of the library's own on a new GLib context, run on a new thread.
    static func ownThread(name: String = "UserActivity") -> LoopRunner {
        let runner = LoopRunner(loop: MainLoop.withNewContext(), ownsThread: true)
        let box = UncheckedBox(runner.loop)
        let finished = runner.threadFinished
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            // Named from inside, once start() has returned: Linux Foundation
            // ignores a name given before start(), and one given before the
            // Thread object knows its own pthread.
            started.wait()
            Thread.current.name = name
            box.value.run()
            finished.signal()
        }
        runner.thread = thread
        thread.start()
        started.signal()
        return runner
    }

    /// The caller's loop: jobs run whenever the caller runs it.
    static func attached(to loop: MainLoop) -> LoopRunner {
        LoopRunner(loop: loop, ownsThread: false)
    }

    private init(loop: MainLoop, ownsThread: Bool) {
        self.loop = loop
        self.ownsThread = ownsThread
        enqueue { [unowned self] in
            lock.lock()
            loopThreadID = pthread_self()
            lock.unlock()
        }
    }

    /// Queues `job` for the loop thread; false once the runner has stopped.
    @discardableResult
    func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return false }
        jobs.append(job)
        if drainSource == nil {
            // The callback may start on the loop thread before `idle` returns:
            // it takes the lock first, so it sees the source stored.
            drainSource = loop.idle { [self] in drain() }
        }
        return true
    }

    private func drain() {
        lock.lock()
        let batch = jobs
        jobs = []
        drainSource = nil
        lock.unlock()
        for job in batch { job() }
    }

    private var timers: [UInt64: GLibSource] = [:]
    private var nextTimer: UInt64 = 0

    /// Runs `job` on the loop thread after `milliseconds` (call on the loop thread).
    func after(milliseconds: UInt32, _ job: @escaping () -> Void) {
        let id: UInt64 = lock.withLock {
            nextTimer += 1
            return nextTimer
        }
        let source = loop.after(milliseconds: milliseconds) { [self] in
            _ = lock.withLock { timers.removeValue(forKey: id) }
            job()
        }
        lock.withLock { timers[id] = source }
    }

    /// Whether the calling thread is the loop's (known once the loop ran a job).
    var isOnLoopThread: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let loopThreadID else { return false }
        return pthread_equal(loopThreadID, pthread_self()) != 0
    }

    /// Runs `last` on the loop thread, then accepts no more jobs; a loop of
    /// the library's own is quit and its thread waited for (unless this is
    /// that thread).
    func stop(_ last: @escaping @Sendable () -> Void) {
        let onLoopThread = isOnLoopThread
        let queued = enqueue { [self] in
            last()
            if ownsThread { loop.quit() }
        }
        lock.lock()
        stopped = true
        lock.unlock()
        if queued, ownsThread, !onLoopThread {
            threadFinished.wait()
        }
    }
}

/// Carries a value that is only ever used on one thread at a time across a
/// `@Sendable` boundary.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
