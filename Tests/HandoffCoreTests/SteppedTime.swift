// SPDX-License-Identifier: Apache-2.0

/// Monotonic microseconds a test steps by hand: HandoffCore reads no clock,
/// every call takes `now`.
final class ManualClock {
    private(set) var nowMicroseconds: Int64 = 1_000_000
    func advance(seconds: Double) { nowMicroseconds += Int64(seconds * 1_000_000) }
}
