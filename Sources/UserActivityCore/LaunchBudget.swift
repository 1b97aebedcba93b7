// SPDX-License-Identifier: Apache-2.0

/// A token bucket per key (the app or connection that asked): at most
/// `burst` launches at once, then one per `intervalMicroseconds`. Time is
/// passed in, so tests step a clock instead of sleeping.
///
/// Each key's credit is kept in microseconds: a launch costs one interval,
/// and credit accrues with time up to `burst` intervals.
public struct LaunchBudget: Sendable {
    public var burst: Int
    public var intervalMicroseconds: Int64
    private var credit: [String: (microseconds: Int64, updated: Int64)] = [:]

    public init(burst: Int, intervalMicroseconds: Int64) {
        self.burst = burst
        self.intervalMicroseconds = max(1, intervalMicroseconds)
    }

    private var capacity: Int64 { Int64(max(0, burst)) * intervalMicroseconds }

    /// Takes one launch for `key` at `now` (µs); false when its bucket is empty.
    public mutating func take(_ key: String, now: Int64) -> Bool {
        let available = self.available(key, now: now)
        guard available >= intervalMicroseconds else {
            credit[key] = (available, now)
            return false
        }
        credit[key] = (available - intervalMicroseconds, now)
        if credit.count > 4096 { forgetFull(now: now) }
        return true
    }

    /// Microseconds until `key` may launch again (0: now).
    public func wait(_ key: String, now: Int64) -> Int64 {
        max(0, intervalMicroseconds - available(key, now: now))
    }

    private func available(_ key: String, now: Int64) -> Int64 {
        guard let entry = credit[key] else { return capacity }
        return min(capacity, entry.microseconds + max(0, now - entry.updated))
    }

    /// Keys whose bucket has refilled are the same as keys never seen.
    private mutating func forgetFull(now: Int64) {
        credit = credit.filter { available($0.key, now: now) < capacity }
    }
}
