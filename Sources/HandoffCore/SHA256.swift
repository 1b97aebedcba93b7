// SPDX-License-Identifier: Apache-2.0
import CGnuTLS

/// SHA-256, for the pairing code: GnuTLS's, the library the daemon already
/// links for its TLS identity.
public enum SHA256 {
    public static func hash(_ input: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let code = input.withUnsafeBytes { inputBytes in
            digest.withUnsafeMutableBytes { out in
                gnutls_hash_fast(GNUTLS_DIG_SHA256, inputBytes.baseAddress, inputBytes.count, out.baseAddress)
            }
        }
        // Only fails for an unknown algorithm or out of memory.
        precondition(code == 0, "gnutls_hash_fast(SHA256) failed: \(code)")
        return digest
    }
}

public enum Hex {
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 0xf)]) }
        return out
    }

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let high = nibble(chars[i]), let low = nibble(chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    /// A device id: 64 lowercase hex digits (a SHA-256).
    public static func isDeviceID(_ text: String) -> Bool {
        text.utf8.count == 64 && decode(text) != nil
    }
}

/// The 6 digits both people compare.
public enum PairingCode {
    /// SHA-256 over a domain label, both SPKI SHA-256s in sorted order (so
    /// both sides compute the same), and the TLS exporter of this session (so
    /// a machine in the middle, which holds two sessions, sees other codes),
    /// reduced to 6 decimal digits.
    public static func derive(localKeyID: [UInt8], remoteKeyID: [UInt8], channelBinding: [UInt8]) -> String {
        let ordered = localKeyID.lexicographicallyPrecedes(remoteKeyID) ? [localKeyID, remoteKeyID] : [remoteKeyID, localKeyID]
        var input = Array("useractivity-handoff-pairing-v1".utf8)
        input.append(0)
        input += ordered[0] + ordered[1] + channelBinding
        let digest = SHA256.hash(input)
        let number = (UInt64(digest[0]) << 32 | UInt64(digest[1]) << 24 | UInt64(digest[2]) << 16 | UInt64(digest[3]) << 8 | UInt64(digest[4])) % 1_000_000
        let text = String(number)
        return String(repeating: "0", count: 6 - text.count) + text
    }
}
