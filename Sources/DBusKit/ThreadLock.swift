// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// A mutual-exclusion lock on a `pthread_mutex_t`, for state that the loop's
/// thread shares with others.
///
/// Why not `Synchronization.Mutex`: on Linux its contended path hands the
/// lock over inside the kernel (a priority-inheritance futex), which
/// ThreadSanitizer cannot see, so it reports races between accesses that the
/// lock does order. ThreadSanitizer intercepts `pthread_mutex_lock`.
///
/// ```swift
/// let lock = ThreadLock()
/// lock.withLock { counter += 1 }
/// ```
public final class ThreadLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
