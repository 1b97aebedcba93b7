// SPDX-License-Identifier: Apache-2.0

/// One issued `continuation-token`: which live activity it leads back to and
/// which app may use it.
public struct ContinuationToken: Sendable, Equatable {
    /// The token itself (32 lowercase hex digits, 128 random bits).
    public let value: String
    /// The origin live activity (its object-path element).
    public let originActivityID: String
    /// The connection that owns the origin (its lifetime bounds the token).
    public let originConnection: String
    /// The app the continuation went to: the only one that may open the stream.
    public let receivingApp: String
    /// When it was issued (Unix µs).
    public let issuedAt: Int64
    /// Whose share of ``ContinuationTokenBook/maximumOutstanding`` it counts
    /// against (the app or connection that asked for the continuation).
    public internal(set) var shareKey: String? = nil
    /// When the origin is on another device: the path of the relay object on
    /// ``originConnection`` that receives the origin's end of the stream.
    public internal(set) var relayPath: String? = nil

    /// A token as ``ContinuationTokenBook`` issues it.
    public init(value: String, originActivityID: String, originConnection: String, receivingApp: String, issuedAt: Int64) {
        self.value = value
        self.originActivityID = originActivityID
        self.originConnection = originConnection
        self.receivingApp = receivingApp
        self.issuedAt = issuedAt
    }
}

/// The continuation tokens handed out in platform data and redeemed by
/// `OpenContinuationStream`.
///
/// A token is single-use, valid for ``lifetimeMicroseconds`` and while its
/// origin lives, and only the app that received the continuation may open
/// it. A refused attempt (wrong or unidentified caller) does not consume it,
/// so an app racing a stranger still gets its stream.
///
/// Time is passed in, never read here, so the rules are testable without
/// waiting a minute.
public final class ContinuationTokenBook {
    /// 60 s, the spec's validity.
    public static let lifetimeMicroseconds: Int64 = 60_000_000
    /// A bound on outstanding tokens, so that a flood of continuations cannot
    /// grow memory without limit; the oldest token goes first.
    public static let maximumOutstanding = 4096
    /// One caller's share of them: its own oldest token goes first past this,
    /// and when the book is full the caller holding the most loses its oldest,
    /// so a flood of continuations only ever evicts the flooder's tokens.
    public static let maximumOutstandingPerCaller = 512

    private var tokens: [String: ContinuationToken] = [:]
    private let makeValue: () -> String

    /// - Parameter makeValue: The token generator (tests inject a counter);
    ///   by default 128 bits from the system's random number generator.
    public init(makeValue: @escaping () -> String = ContinuationTokenBook.randomValue) {
        self.makeValue = makeValue
    }

    /// 32 lowercase hex digits from `SystemRandomNumberGenerator`.
    public static func randomValue() -> String {
        var generator = SystemRandomNumberGenerator()
        return [generator.next(), generator.next()].map { (word: UInt64) in
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// The number of outstanding tokens.
    public var count: Int { tokens.count }

    /// Issues a token for a continuation of `originActivityID` that went to `receivingApp`.
    ///
    /// `shareKey`: whose share it counts against (see ``maximumOutstandingPerCaller``).
    public func issue(originActivityID: String, originConnection: String, receivingApp: String, now: Int64,
                      shareKey: String? = nil, relayPath: String? = nil) -> String {
        purgeExpired(now: now)
        let held = tokens.values.lazy.filter { $0.shareKey == shareKey }.count
        if shareKey != nil, held >= Self.maximumOutstandingPerCaller {
            evictOldest(of: shareKey)
        } else if tokens.count >= Self.maximumOutstanding {
            var counts: [String?: Int] = [:]
            for token in tokens.values { counts[token.shareKey, default: 0] += 1 }
            evictOldest(of: counts.max { $0.value < $1.value }?.key ?? nil)
        }
        var value = makeValue()
        while tokens[value] != nil { value = makeValue() }
        var token = ContinuationToken(value: value, originActivityID: originActivityID,
                                      originConnection: originConnection, receivingApp: receivingApp, issuedAt: now)
        token.shareKey = shareKey
        token.relayPath = relayPath
        tokens[value] = token
        return value
    }

    private func evictOldest(of shareKey: String?) {
        if let oldest = tokens.values.filter({ $0.shareKey == shareKey }).min(by: { $0.issuedAt < $1.issuedAt }) {
            tokens[oldest.value] = nil
        }
    }

    /// How many outstanding tokens count against `shareKey`.
    public func count(shareKey: String?) -> Int {
        tokens.values.lazy.filter { $0.shareKey == shareKey }.count
    }

    /// Redeems a token for a caller; on success the token is used up.
    ///
    /// Checks, in order: the caller is identified at all (`AccessDenied`);
    /// the token exists, has not expired and its origin lives (`NotFound`,
    /// and a dead token is dropped); the caller may act for the receiving app
    /// (`AccessDenied`, the token stays).
    ///
    /// - Parameters:
    ///   - value: The token as given to `OpenContinuationStream`.
    ///   - callerIsIdentified: Whether the caller acts for any app at all.
    ///   - callerMayActFor: Whether the caller may act for an app.
    ///   - originIsAlive: Whether the token's origin activity still exists.
    ///   - now: Unix µs.
    public func redeem(_ value: String, callerIsIdentified: Bool, callerMayActFor: (String) -> Bool,
                       originIsAlive: (ContinuationToken) -> Bool, now: Int64) throws(UserActivityError) -> ContinuationToken {
        guard callerIsIdentified else {
            throw .accessDenied("OpenContinuationStream needs to know which app is calling: call RegisterApplication first (only the app that received the continuation may open its stream)")
        }
        guard let token = tokens[value] else {
            throw .notFound("no continuation token '\(value.prefix(64))': it was never issued, was already used, or expired")
        }
        if now - token.issuedAt >= Self.lifetimeMicroseconds {
            tokens[value] = nil
            throw .notFound("the continuation token expired: tokens are valid for 60 s; continue the activity again for a new one")
        }
        if !originIsAlive(token) {
            tokens[value] = nil
            throw .notFound("the continuation token's origin activity was invalidated (or its app quit), so there is nobody to stream with")
        }
        guard callerMayActFor(token.receivingApp) else {
            // Not named: the caller may be a sandboxed app that must not learn which app continues what.
            throw .accessDenied("this continuation token was issued to another app; only the app that received the continuation may open its stream")
        }
        tokens[value] = nil
        return token
    }

    /// Withdraws a token whose continuation failed (nobody received it).
    public func revoke(_ value: String) {
        tokens[value] = nil
    }

    /// Drops the tokens whose origin is this activity (it was invalidated).
    public func originEnded(activityID: String) {
        tokens = tokens.filter { $0.value.originActivityID != activityID }
    }

    /// Drops the tokens whose origin belonged to a connection that closed.
    public func connectionClosed(_ connection: String) {
        tokens = tokens.filter { $0.value.originConnection != connection }
    }

    /// Drops every expired token.
    public func purgeExpired(now: Int64) {
        tokens = tokens.filter { now - $0.value.issuedAt < Self.lifetimeMicroseconds }
    }
}
