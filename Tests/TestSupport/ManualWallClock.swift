// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A wall clock in Unix microseconds that the test moves by hand, for an
/// in-process service's `ServiceConfiguration.clock`.
public final class ManualWallClock: @unchecked Sendable {
    private let lock = NSLock()
    private var microseconds: Int64

    public init(start: Int64) { microseconds = start }

    public var now: Int64 { lock.withLock { microseconds } }

    public func advance(by microseconds: Int64) { lock.withLock { self.microseconds += microseconds } }

    public func advance(days: Double) { advance(by: Int64(days * 86_400_000_000)) }

    /// ``now`` as the closure a service configuration takes.
    public var closure: @Sendable () -> Int64 { { self.now } }
}
