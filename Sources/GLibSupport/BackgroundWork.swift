// SPDX-License-Identifier: Apache-2.0
import CGLib

/// One piece of work for another thread and what the loop does with its result.
private final class BackgroundJob: @unchecked Sendable {
    /// Runs on the worker thread and returns what the loop is to run.
    let work: () -> (() -> Void)
    let context: OpaquePointer
    private var finish: () -> Void = {}

    init(context: OpaquePointer, work: @escaping () -> (() -> Void)) {
        self.context = context
        self.work = work
    }

    /// On the worker thread: works, then hands the result to the loop.
    func runOnWorkerThread() {
        let result = work()
        crossThreadHandoff.withLock { finish = result }
        // From another thread GLib adds an idle source on the loop's context.
        g_main_context_invoke(context, { data in
            let job = Unmanaged<BackgroundJob>.fromOpaque(data!).takeRetainedValue()
            crossThreadHandoff.withLock { job.finish }()
            return CGLIB_SOURCE_REMOVE
        }, Unmanaged.passRetained(self).toOpaque())
    }
}

extension MainLoop {
    /// Runs `work` on a new thread and then `finish` with its result on this
    /// loop's thread, so that reading a large file never holds up the loop.
    ///
    /// `work` must touch nothing the loop's thread uses (give it copies);
    /// `finish` runs like any other callback of the loop.
    public func inBackground<T: Sendable>(name: String, _ work: @escaping @Sendable () -> T,
                                          then finish: @escaping (T) -> Void) {
        let job = BackgroundJob(context: context) {
            let result = work()
            return { finish(result) }
        }
        let thread = g_thread_new(name, { data in
            let job = Unmanaged<BackgroundJob>.fromOpaque(data!).takeRetainedValue()
            job.runOnWorkerThread()
            return nil
        }, Unmanaged.passRetained(job).toOpaque())
        // Detached: the thread ends by itself once it has handed the result over.
        g_thread_unref(thread)
    }
}
