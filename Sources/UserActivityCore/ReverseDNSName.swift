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

/// Validation of app IDs: desktop-file IDs without `.desktop`.
///
/// An app ID is a ``ReverseDNSName``, or a legacy desktop ID (Debian's
/// `firefox-esr`, `chromium`, `vlc`): one or more dot-separated elements of
/// `[A-Za-z0-9_-]`, at most 255 bytes, which is an app ID only while a
/// desktop entry with that ID is installed. A legacy ID's team is the app
/// itself, and it declares no activity types (types stay reverse-DNS and
/// begin with the declaring app's team).
public enum AppIDName {
    /// Whether `id` has the shape of an app ID, reverse-DNS or legacy.
    /// Whether a legacy ID is installed is the catalog's question.
    public static func isWellFormed(_ id: String) -> Bool {
        ReverseDNSName.isValid(id) || isLegacyDesktopID(id)
    }

    /// One or more dot-separated, non-empty elements of `[A-Za-z0-9_-]`, at most
    /// 255 bytes; true for reverse-DNS names too.
    public static func isLegacyDesktopID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= ReverseDNSName.maximumLength else { return false }
        var elementLength = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard elementLength > 0 else { return false }
                elementLength = 0
                continue
            }
            let allowed = (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            guard allowed else { return false }
            elementLength += 1
        }
        return elementLength > 0
    }

    /// Throws `InvalidArgument` when `id` cannot be an app ID at all.
    public static func validate(_ id: String, as what: String) throws(UserActivityError) {
        guard isWellFormed(id) else {
            throw .invalidArgument(
                "\(what) '\(id.prefix(300))' is not an app ID: use a desktop-file ID without .desktop, a reverse-DNS name such as com.example.Editor or an installed legacy ID such as firefox-esr (letters, digits, '_', '-' and '.', at most 255 bytes)")
        }
    }

    /// As ``validate(_:as:)``, and a legacy ID that is not installed is
    /// `UnknownApplication`: only an installed entry makes it an app ID.
    public static func validate(_ id: String, as what: String, catalog: AppCatalog) throws(UserActivityError) {
        try validate(id, as: what)
        guard ReverseDNSName.isValid(id) || catalog.app(id) != nil else {
            throw .unknownApplication(
                "\(what) '\(id)' is a legacy desktop ID (not reverse-DNS), which is an app ID only while \(id).desktop is installed, and it is not")
        }
    }
}
