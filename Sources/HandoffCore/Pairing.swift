// SPDX-License-Identifier: Apache-2.0

/// One pairing in progress.
public struct PairingAttempt: Sendable, Equatable {
    public var peer: String
    public var code: String
    /// The person started it here (Device.Pair), rather than the peer asking.
    public var initiatedLocally: Bool
    public var localAccepted = false
    public var remoteAccepted = false
    public var deadline: Int64
}

public enum PairingRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another pairing is in progress (one at a time).
    case busy
    /// Too many requests lately.
    case rateLimited
    /// The peer asked, and this device is not Discoverable.
    case notDiscoverable

    public var description: String {
        switch self {
        case .busy: return "another pairing is in progress"
        case .rateLimited: return "too many pairing requests; try again in a minute"
        case .notDiscoverable: return "this device is not discoverable"
        }
    }
}

public enum PairingEvent: Sendable, Equatable {
    /// Both sides accepted: pin the peer.
    case paired(peer: String)
    /// A person (here or there) refused.
    case refused(peer: String)
    /// Nobody answered within the timeout.
    case timedOut(peer: String)
    /// Cancelled here or by the peer.
    case cancelled(peer: String)
    /// The peer's link closed before both answered: the device went away.
    case wentAway(peer: String)
}

/// Pairing rules: one at a time, requests from peers only while
/// Discoverable, rate-limited, a deadline on the caller's clock (every
/// method takes `now`, monotonic microseconds).
public struct PairingMachine: Sendable {
    public private(set) var current: PairingAttempt?
    public let timeoutMicroseconds: Int64
    public let window: Int64
    public let maximumInWindow: Int
    private var recentStarts: [Int64] = []

    public init(timeoutSeconds: Int64 = 60, maximumInWindow: Int = 5, windowSeconds: Int64 = 60) {
        timeoutMicroseconds = timeoutSeconds * 1_000_000
        self.maximumInWindow = maximumInWindow
        window = windowSeconds * 1_000_000
    }

    public mutating func start(peer: String, code: String, initiatedLocally: Bool, discoverable: Bool,
                               now: Int64) throws(PairingRefusal) -> PairingAttempt {
        _ = expire(now: now)
        guard current == nil else { throw .busy }
        guard initiatedLocally || discoverable else { throw .notDiscoverable }
        recentStarts.removeAll { $0 <= now - window }
        guard recentStarts.count < maximumInWindow else { throw .rateLimited }
        recentStarts.append(now)
        let attempt = PairingAttempt(peer: peer, code: code, initiatedLocally: initiatedLocally,
                                     deadline: now + timeoutMicroseconds)
        current = attempt
        return attempt
    }

    /// The person here answered.
    public mutating func answerLocally(peer: String, accepted: Bool, now: Int64) -> PairingEvent? {
        if let event = expire(now: now) { return event }
        guard var attempt = current, attempt.peer == peer else { return nil }
        guard accepted else { current = nil; return .refused(peer: peer) }
        attempt.localAccepted = true
        current = attempt
        return finishIfBoth()
    }

    /// The peer sent its answer.
    public mutating func answerRemotely(peer: String, accepted: Bool, now: Int64) -> PairingEvent? {
        if let event = expire(now: now) { return event }
        guard var attempt = current, attempt.peer == peer else { return nil }
        guard accepted else { current = nil; return .refused(peer: peer) }
        attempt.remoteAccepted = true
        current = attempt
        return finishIfBoth()
    }

    public mutating func cancel(peer: String) -> PairingEvent? {
        guard current?.peer == peer else { return nil }
        current = nil
        return .cancelled(peer: peer)
    }

    /// The peer's link closed while the attempt was open.
    public mutating func peerWentAway(_ peer: String) -> PairingEvent? {
        guard current?.peer == peer else { return nil }
        current = nil
        return .wentAway(peer: peer)
    }

    /// Ends an attempt past its deadline (call on a timer).
    public mutating func expire(now: Int64) -> PairingEvent? {
        guard let attempt = current, now >= attempt.deadline else { return nil }
        current = nil
        return .timedOut(peer: attempt.peer)
    }

    private mutating func finishIfBoth() -> PairingEvent? {
        guard let attempt = current, attempt.localAccepted, attempt.remoteAccepted else { return nil }
        current = nil
        return .paired(peer: attempt.peer)
    }
}
