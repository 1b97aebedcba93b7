// SPDX-License-Identifier: Apache-2.0

/// When a link sends a keepalive and when it gives up on a silent peer.
public struct LinkLiveness: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case nothing
        case sendKeepalive
        /// Nothing arrived for the timeout: `midFrame` when part of a frame had.
        case timedOut(midFrame: Bool)
    }

    public let keepaliveMicroseconds: Int64
    public let timeoutMicroseconds: Int64
    public private(set) var lastReceived: Int64
    public private(set) var lastSent: Int64

    /// A keepalive after `keepaliveSeconds` without sending; a peer silent for three of them is gone.
    public init(keepaliveSeconds: Int64, now: Int64) {
        keepaliveMicroseconds = keepaliveSeconds * 1_000_000
        timeoutMicroseconds = keepaliveMicroseconds * 3
        lastReceived = now
        lastSent = now
    }

    public mutating func received(now: Int64) { lastReceived = now }
    public mutating func sent(now: Int64) { lastSent = now }

    public func action(now: Int64, midFrame: Bool) -> Action {
        if now - lastReceived >= timeoutMicroseconds { return .timedOut(midFrame: midFrame) }
        if now - lastSent >= keepaliveMicroseconds { return .sendKeepalive }
        return .nothing
    }

    /// When ``action(now:midFrame:)`` next has something to do (unless a frame moves it later).
    public var nextDue: Int64 { min(lastSent + keepaliveMicroseconds, lastReceived + timeoutMicroseconds) }
}

/// Discoverable turns itself off after its timeout (0 = never).
public struct DiscoverableWindow: Sendable, Equatable {
    public private(set) var isOn = false
    private var since: Int64 = 0

    public init() {}

    public mutating func set(_ on: Bool, now: Int64) {
        isOn = on
        since = now
    }

    /// When it turns itself off; nil while off or without a timeout.
    public func nextDue(timeoutSeconds: UInt32) -> Int64? {
        isOn && timeoutSeconds > 0 ? since + Int64(timeoutSeconds) * 1_000_000 : nil
    }

    /// True when it just turned itself off.
    public mutating func expire(now: Int64, timeoutSeconds: UInt32) -> Bool {
        guard isOn, timeoutSeconds > 0, now - since >= Int64(timeoutSeconds) * 1_000_000 else { return false }
        isOn = false
        return true
    }
}
