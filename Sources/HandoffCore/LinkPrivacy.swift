// SPDX-License-Identifier: Apache-2.0
import CGnuTLS

/// HMAC-SHA256 and random bytes from GnuTLS, the library the daemon
/// already links for TLS.
public enum HMACSHA256 {
    public static func mac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let code = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                digest.withUnsafeMutableBytes { out in
                    gnutls_hmac_fast(GNUTLS_MAC_SHA256, keyBytes.baseAddress, keyBytes.count, messageBytes.baseAddress, messageBytes.count,
                                     out.baseAddress)
                }
            }
        }
        // Only fails for an unknown algorithm or out of memory.
        precondition(code == 0, "gnutls_hmac_fast(SHA256) failed: \(code)")
        return digest
    }

    /// Compares two MACs in time that does not depend on where they differ.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

public enum SecureRandom {
    /// `count` bytes from GnuTLS's key-grade generator.
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let code = out.withUnsafeMutableBytes { gnutls_rnd(GNUTLS_RND_KEY, $0.baseAddress, $0.count) }
        precondition(code == 0, "gnutls_rnd failed: \(code)")
        return out
    }
}

/// The rotating identifier a device publishes over DNS-SD while it is not
/// Discoverable (the idea of Bluetooth LE's resolvable private addresses):
/// `nonce || HMAC(resolving key, label || nonce)[:8]`, 16 bytes in hex. Only
/// a device that was given the resolving key at pairing can tell whose it
/// is; to anyone else two tokens of one device are unrelated random strings.
public enum ResolvableToken {
    public static let nonceBytes = 8
    public static let macBytes = 8
    /// Hex digits in a token.
    public static let length = 2 * (nonceBytes + macBytes)
    static let label = Array("useractivity-handoff-resolvable-v1".utf8) + [0]

    public static func make(resolvingKey: [UInt8], nonce: [UInt8] = SecureRandom.bytes(nonceBytes)) -> String {
        Hex.encode(nonce + tag(resolvingKey: resolvingKey, nonce: nonce))
    }

    /// Whether `token` was made with `resolvingKey`.
    public static func resolves(_ token: String, with resolvingKey: [UInt8]) -> Bool {
        guard token.utf8.count == length, !resolvingKey.isEmpty, let bytes = Hex.decode(token) else { return false }
        let nonce = Array(bytes.prefix(nonceBytes))
        return HMACSHA256.equal(Array(bytes.suffix(macBytes)), tag(resolvingKey: resolvingKey, nonce: nonce))
    }

    /// The first candidate whose resolving key made `token`, or nil.
    public static func resolve(_ token: String, candidates: [(id: String, resolvingKey: [UInt8])]) -> String? {
        candidates.first { resolves(token, with: $0.resolvingKey) }?.id
    }

    private static func tag(resolvingKey: [UInt8], nonce: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.mac(key: resolvingKey, label + nonce).prefix(macBytes))
    }
}

/// How two paired devices recognise each other on a TLS link where neither
/// showed its long-lived key: each proves it holds the secret of their
/// pairing, bound to this TLS session's exporter (RFC 9266 channel binding),
/// so a proof seen on one connection is worthless on any other.
public enum LinkProof {
    /// Bytes of a link secret and of a resolving key.
    public static let secretBytes = 32
    static let secretLabel = Array("useractivity-handoff-link-secret-v1".utf8) + [0]
    static let clientLabel = Array("useractivity-handoff-proof-client-v1".utf8) + [0]
    static let serverLabel = Array("useractivity-handoff-proof-server-v1".utf8) + [0]

    /// The link secret of a pair, derived on the link where both keys were
    /// pinned (the pairing link): only the two ends know its exporter, and
    /// both compute the same bytes without sending them.
    public static func linkSecret(channelBinding: [UInt8], localKeyID: [UInt8], remoteKeyID: [UInt8]) -> [UInt8] {
        let ordered = localKeyID.lexicographicallyPrecedes(remoteKeyID) ? localKeyID + remoteKeyID : remoteKeyID + localKeyID
        return HMACSHA256.mac(key: channelBinding, secretLabel + ordered)
    }

    /// What the connecting device sends first.
    public static func client(linkSecret: [UInt8], channelBinding: [UInt8]) -> [UInt8] {
        HMACSHA256.mac(key: linkSecret, clientLabel + channelBinding)
    }

    /// What the listening device answers once it found the client's pair.
    public static func server(linkSecret: [UInt8], channelBinding: [UInt8]) -> [UInt8] {
        HMACSHA256.mac(key: linkSecret, serverLabel + channelBinding)
    }

    /// The listening side: which candidate's secret made the client's proof.
    /// Every candidate is tried (a person pairs a handful of devices), so the
    /// proof itself is the identifier and nothing else has to travel.
    public static func identifyClient(proof: [UInt8], channelBinding: [UInt8], candidates: [(id: String, linkSecret: [UInt8])]) -> String? {
        guard proof.count == 32, !channelBinding.isEmpty else { return nil }
        var found: String?
        for candidate in candidates where candidate.linkSecret.count == secretBytes {
            if HMACSHA256.equal(client(linkSecret: candidate.linkSecret, channelBinding: channelBinding), proof) && found == nil {
                found = candidate.id
            }
        }
        return found
    }

    /// The connecting side: whether the answer came from the device it meant.
    public static func verifyServer(proof: [UInt8], linkSecret: [UInt8], channelBinding: [UInt8]) -> Bool {
        !channelBinding.isEmpty && HMACSHA256.equal(server(linkSecret: linkSecret, channelBinding: channelBinding), proof)
    }
}

/// When the published token and the certificate shown to strangers are
/// replaced: at each start and every ``intervalSeconds`` after.
public struct PrivacyRotation: Sendable, Equatable {
    public static let intervalSeconds: Int64 = 15 * 60
    public private(set) var due: Int64 = .max
    public init() {}

    /// Rotated now (monotonic µs): the next one is due an interval later.
    public mutating func rotated(now: Int64, intervalSeconds: Int64 = PrivacyRotation.intervalSeconds) {
        due = now + intervalSeconds * 1_000_000
    }

    public mutating func stop() { due = .max }

    public func isDue(now: Int64) -> Bool { now >= due }
}
