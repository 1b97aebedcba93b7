// SPDX-License-Identifier: Apache-2.0

/// Validation of the reverse-DNS names the spec uses for activity types and app IDs.
public enum ReverseDNSName {
    public static let maximumLength = 255

    /// At least two dot-separated elements of `[A-Za-z0-9_-]`, none empty or
    /// starting with a digit, at most 255 bytes.
    public static func isValid(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLength else { return false }
        var elements = 0
        var elementLength = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard elementLength > 0 else { return false }
                elements += 1
                elementLength = 0
                continue
            }
            let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            let isLetter = (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            guard isDigit || isLetter || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") else { return false }
            if elementLength == 0 && isDigit { return false }
            elementLength += 1
        }
        guard elementLength > 0 else { return false }
        return elements + 1 >= 2
    }

    /// Throws `InvalidArgument` naming what `what` was expected to be.
    public static func validate(_ name: String, as what: String) throws(UserActivityError) {
        guard isValid(name) else {
            throw .invalidArgument(
                "\(what) '\(name.prefix(300))' is not a reverse-DNS name: use at least two dot-separated elements of letters, digits, '_' or '-', none empty or starting with a digit, at most 255 bytes (for example com.example.Editor)")
        }
    }

    /// `com.example.Editor` → `com.example`; nil for a name with fewer than three elements' worth of parent.
    public static func parent(of name: String) -> String? {
        guard let dot = name.lastIndex(of: ".") else { return nil }
        return String(name[..<dot])
    }

    /// Whether `ancestor` is `name` itself or a prefix of it ending at an element boundary.
    public static func isAncestorOrSelf(_ ancestor: String, of name: String) -> Bool {
        name == ancestor || name.hasPrefix(ancestor + ".")
    }
}
