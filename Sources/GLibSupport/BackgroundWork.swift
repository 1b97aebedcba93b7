// SPDX-License-Identifier: Apache-2.0
import CGLib
#if canImport(Glibc)
import Glibc
#endif

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

/// One thread of its own that runs the work handed to it in order, and
/// hands results back to a loop: for a stream of pieces (a file being
/// written) where a thread per piece would cost more than the piece.
public final class SerialWorker: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Under `mutex`.
    private var jobs: [@Sendable () -> Void] = []
    private var stopping = false
    private let context: OpaquePointer
    private let niceness: Int32

    /// Starts the thread; results go back to `loop`'s thread. A positive
    /// `niceness` lowers the thread's priority below the loop's, so that
    /// bulk work yields the processor to what a person is waiting for.
    public init(name: String, replyingOn loop: MainLoop, niceness: Int32 = 0) {
        context = g_main_context_ref(loop.context)
        self.niceness = niceness
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        // The thread holds the worker until it ends (after ``stop()``).
        let thread = g_thread_new(name, { data in
            let worker = Unmanaged<SerialWorker>.fromOpaque(data!).takeRetainedValue()
            worker.run()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        g_thread_unref(thread)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
        g_main_context_unref(context)
    }

    /// Queues `job` for the worker's thread, behind what is queued.
    public func async(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// The worker runs what is queued, then its thread ends.
    public func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// From the worker's thread: runs `action` on the loop's thread.
    public func reply(_ action: @escaping () -> Void) {
        let job = BackgroundJob(context: context) { action }
        job.runOnWorkerThread()
    }

    private func run() {
        // On Linux a nice value belongs to a thread: 0 names the calling one.
        if niceness > 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) }
        while true {
            pthread_mutex_lock(mutex)
            while jobs.isEmpty && !stopping { pthread_cond_wait(condition, mutex) }
            let batch = jobs
            jobs = []
            let done = batch.isEmpty && stopping
            pthread_mutex_unlock(mutex)
            if done { return }
            for job in batch { job() }
        }
    }
}
