// SPDX-License-Identifier: Apache-2.0
import CGLib

/// URLs checked by GLib's RFC 3986 parser (`g_uri_parse`, strict: no
/// `G_URI_FLAGS_PARSE_RELAXED`), the parser GIO itself opens them with.
///
/// GLib accepts some hosts no browser resolves (`https://\\evil/`,
/// `http://a b/`: it checks the syntax of the parts, not of a host name), so
/// a web URL's host is also checked: an IP literal, or labels of ASCII
/// letters, digits, `-` and `_` separated by dots (an internationalised name
/// comes back from GLib in its `xn--` form).
public enum GLibURI {
    /// Whether `text` is an absolute URL; with `webOnly`, an `http:` or
    /// `https:` URL with a host name. Control characters and white space are
    /// never allowed (GLib keeps a tab inside a host).
    public static func isValid(_ text: String, webOnly: Bool) -> Bool {
        // Unicode's white space above U+0020 is all outside ASCII: the
        // property lookup (the costly part) is left for those scalars.
        for scalar in text.unicodeScalars
        where scalar.value <= 0x20 || scalar.value == 0x7F || (scalar.value >= 0x80 && scalar.properties.isWhitespace) {
            return false
        }
        // GLib takes a bare "scheme:" for an absolute URI; nothing could open it.
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")), text.utf8.index(after: colon) != text.utf8.endIndex else {
            return false
        }
        guard let uri = g_uri_parse(text, G_URI_FLAGS_NONE, nil) else { return false }
        defer { g_uri_unref(uri) }
        guard let schemePointer = g_uri_get_scheme(uri) else { return false }
        guard webOnly else { return true }
        // Read in place: both parts are checked on every Donate with a URL,
        // and copying them into Strings (and the labels into substrings)
        // cost more than GLib's parse.
        guard isHTTPScheme(bytes(schemePointer)), let hostPointer = g_uri_get_host(uri) else { return false }
        return isHostName(bytes(hostPointer))
    }

    /// `http` or `https`, in any case.
    private static func isHTTPScheme(_ scheme: UnsafeBufferPointer<UInt8>) -> Bool {
        guard scheme.count == 4 || (scheme.count == 5 && scheme[4] | 0x20 == UInt8(ascii: "s")) else { return false }
        return scheme[0] | 0x20 == UInt8(ascii: "h") && scheme[1] | 0x20 == UInt8(ascii: "t")
            && scheme[2] | 0x20 == UInt8(ascii: "t") && scheme[3] | 0x20 == UInt8(ascii: "p")
    }

    /// An IPv6 literal (GLib drops the brackets), else dot-separated labels
    /// of `[A-Za-z0-9_-]`, none empty (one trailing dot allowed).
    static func isHostName(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !host.isEmpty, host.count <= 253 + 1 else { return false }
        if host.contains(UInt8(ascii: ":")) {
            return host.allSatisfy { isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }
        }
        var labelLength = 0
        for byte in host {
            if byte == UInt8(ascii: ".") {
                // An empty label, unless it is the root after the last dot.
                guard labelLength > 0 else { return false }
                labelLength = 0
            } else if (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") {
                labelLength += 1
                guard labelLength <= 63 else { return false }
            } else {
                return false
            }
        }
        return true
    }

    private static func bytes(_ pointer: UnsafePointer<CChar>) -> UnsafeBufferPointer<UInt8> {
        let start = UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self)
        var count = 0
        while start[count] != 0 { count += 1 }
        return UnsafeBufferPointer(start: start, count: count)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
    }
}
