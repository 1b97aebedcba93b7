// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A request to the service that an activity method started, like
/// ``UserActivity/becomeCurrent()``.
///
/// As with `NSUserActivity`, the methods return at once and the requests are
/// sent in the order they were made. Await ``wait()`` to learn that the
/// service accepted one (or why it did not); a failure nobody waits for
/// (within 100 ms of it) is reported to ``UserActivityClient/onError``.
///
/// ```swift
/// activity.becomeCurrent()                    // fire and forget, like NSUserActivity
/// try await activity.becomeCurrent().wait()   // or wait for the service's answer
/// ```
public final class ActivityOperation: @unchecked Sendable {
    /// What was asked, for messages: `becomeCurrent() of com.example.Editor.edit-document`.
    public let summary: String

    private let lock = NSLock()
    private var result: Result<Void, UserActivityError>?
    private var waiters: [CheckedContinuation<Void, any Error>] = []
    private var observed = false
    private let report: @Sendable (UserActivityError, String) -> Void

    init(summary: String, report: @escaping @Sendable (UserActivityError, String) -> Void) {
        self.summary = summary
        self.report = report
    }

    /// An operation that already failed (no client, an invalidated activity).
    static func failed(_ error: UserActivityError, summary: String,
                       report: @escaping @Sendable (UserActivityError, String) -> Void) -> ActivityOperation {
        let operation = ActivityOperation(summary: summary, report: report)
        operation.finish(.failure(error))
        return operation
    }

    /// Waits until the service answered; throws ``UserActivityError`` when it refused.
    public func wait() async throws {
        let ready: Result<Void, UserActivityError>? = lock.withLock {
            observed = true
            return result
        }
        if let ready { return try ready.get() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ready: Result<Void, UserActivityError>? = lock.withLock {
                if result == nil { waiters.append(continuation) }
                return result
            }
            if let ready { continuation.resume(with: ready.mapError { $0 as any Error }) }
        }
    }

    /// Whether the service answered already.
    public var isFinished: Bool { lock.withLock { result != nil } }

    /// The error the service answered with, once known.
    public var error: UserActivityError? {
        lock.withLock {
            if case .failure(let error) = result { return error }
            return nil
        }
    }

    func finish(_ outcome: Result<Void, UserActivityError>) {
        let (waiting, wasObserved): ([CheckedContinuation<Void, any Error>], Bool) = lock.withLock {
            guard result == nil else { return ([], true) }
            result = outcome
            defer { waiters = [] }
            return (waiters, observed)
        }
        for waiter in waiting { waiter.resume(with: outcome.mapError { $0 as any Error }) }
        if case .failure(let error) = outcome, !wasObserved {
            // The caller may not have had the chance to wait yet (a failure
            // known at once): give it a moment before calling it unobserved.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
                if !lock.withLock({ observed }) { report(error, summary) }
            }
        }
    }
}
