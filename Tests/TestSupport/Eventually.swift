// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Polls `condition` until it returns `true` or `timeout` seconds pass.
///
/// The condition is evaluated at least once, and once more after the
/// deadline if the last check was earlier, so a slow machine cannot make a
/// satisfied condition look like a timeout.
///
/// - Parameters:
///   - timeout: Seconds to keep trying.
///   - interval: Seconds between checks.
///   - condition: The check; an error it throws ends the wait and is rethrown.
/// - Returns: Whether the condition became `true` in time.
@discardableResult
public func waitUntil(timeout: Double, interval: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicNow() + timeout
    while true {
        if try condition() { return true }
        let remaining = deadline - monotonicNow()
        if remaining <= 0 { return false }
        sleepSeconds(min(interval, remaining))
    }
}

/// The `async` form of ``waitUntil(timeout:interval:_:)``: sleeps with
/// `Task.sleep`, so it does not hold a cooperative thread while waiting.
@discardableResult
public func waitUntil(
    timeout: Double, interval: Double = 0.02, _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = monotonicNow() + timeout
    while true {
        if try await condition() { return true }
        let remaining = deadline - monotonicNow()
        if remaining <= 0 { return false }
        try? await Task.sleep(nanoseconds: UInt64(min(interval, remaining) * 1e9))
    }
}
