// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// The activity types every app may publish, donate and make current without
/// declaring them (Apple's `NSUserActivityTypeBrowsingWeb` is the model).
///
/// They name no vendor, so the team rule does not apply to them: an app that
/// lists one in `X-UserActivityTypes` gets a warning and the entry is ignored,
/// like any other type outside its team. What each one carries is checked on
/// every write (create, update, donate, continue from outside):
///
/// - ``browsingWeb``: `webpage-url` is required. Continued by the publishing
///   app when it is installed here and its desktop entry handles
///   `x-scheme-handler/https`, else by the user's default web browser.
/// - ``openDocument``: `user-info` must hold `uri` (s); `mime-type` (s) is
///   optional. Continued by launching the publishing app with the URI when its
///   `Exec` takes `%u`, `%U`, `%f` or `%F`, else by the default handler for the
///   MIME type (for the URI's scheme when no type is given). A `file://` URI
///   whose file does not exist here is `NotFound`.
public enum SystemActivityType {
    /// A web page the user is reading.
    public static let browsingWeb = "org.example.UserActivity.browsing-web"
    /// A document the user has open.
    public static let openDocument = "org.example.UserActivity.open-document"
    /// Both, in the order the documentation lists them.
    public static let all = [browsingWeb, openDocument]

    /// The `user-info` key of an open-document activity's URI.
    public static let uriKey = "uri"
    /// The optional `user-info` key of an open-document activity's MIME type.
    public static let mimeTypeKey = "mime-type"

    /// Whether `type` is one of the system types.
    public static func isSystem(_ type: String) -> Bool {
        type == browsingWeb || type == openDocument
    }

    /// The document an open-document activity refers to.
    public struct Document: Sendable, Equatable {
        /// The URI (`file:///home/u/report.odt`, `https://…`, `sftp://…`).
        public var uri: String
        /// The MIME type, empty when the publisher gave none.
        public var mimeType: String

        public init(uri: String, mimeType: String = "") {
            self.uri = uri
            self.mimeType = mimeType
        }

        /// The local path of a `file://` URI (percent-decoded), nil for
        /// other schemes or a URI naming another host.
        public var localPath: String? { SystemActivityType.localPath(ofFileURI: uri) }
    }

    /// Checks what a system type requires; other types pass unchanged.
    ///
    /// - Throws: `InvalidArgument` naming the missing or malformed key.
    public static func validate(type: String, properties: ActivityProperties) throws(UserActivityError) {
        switch type {
        case browsingWeb:
            guard !properties.webpageURL.isEmpty else {
                throw .invalidArgument("the activity type \(browsingWeb) needs webpage-url (an https: or http: URL of the page)")
            }
        case openDocument:
            _ = try document(in: properties)
        default:
            break
        }
    }

    /// The document of an open-document activity's `user-info`.
    ///
    /// - Throws: `InvalidArgument` when `uri` is missing, not a string, empty
    ///   or not an absolute URI, or `mime-type` is not a string.
    public static func document(in properties: ActivityProperties) throws(UserActivityError) -> Document {
        guard let value = properties.userInfoValue(uriKey) else {
            throw .invalidArgument("the activity type \(openDocument) needs user-info key '\(uriKey)' (s): the document's URI, e.g. file:///home/user/report.odt")
        }
        guard case .string(let uri) = value.unwrappedVariant else {
            throw .invalidArgument("user-info key '\(uriKey)' of \(openDocument) must be a string (s), not \(value.unwrappedVariant.signature)")
        }
        guard hasScheme(uri) else {
            throw .invalidArgument("user-info key '\(uriKey)' of \(openDocument) must be an absolute URI with a scheme (file:///path, https://…), not '\(uri.prefix(200))'")
        }
        var mimeType = ""
        if let value = properties.userInfoValue(mimeTypeKey) {
            guard case .string(let text) = value.unwrappedVariant else {
                throw .invalidArgument("user-info key '\(mimeTypeKey)' of \(openDocument) must be a string (s), not \(value.unwrappedVariant.signature)")
            }
            mimeType = text
        }
        return Document(uri: uri, mimeType: mimeType)
    }

    /// `scheme:` per RFC 3986: a letter, then letters, digits, `+`, `-`, `.`.
    static func hasScheme(_ uri: String) -> Bool {
        let bytes = Array(uri.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon + 1 < bytes.count else { return false }
        func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z") }
        guard isLetter(bytes[0]) else { return false }
        return bytes[1..<colon].allSatisfy { isLetter($0) || ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// `file:///a%20b` → `/a b`; `file://localhost/a` → `/a`; nil for other
    /// schemes, other hosts and paths that decode to invalid UTF-8 or NUL.
    public static func localPath(ofFileURI uri: String) -> String? {
        let lower = uri.prefix(7).lowercased()
        guard lower == "file://" else { return nil }
        var rest = Substring(uri.dropFirst(7))
        if rest.hasPrefix("localhost/") { rest = rest.dropFirst("localhost".count) }
        guard rest.hasPrefix("/") else { return nil }
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<cut] }
        var bytes: [UInt8] = []
        var iterator = Array(rest.utf8).makeIterator()
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 48...57: return b - 48
            case 65...70: return b - 55
            case 97...102: return b - 87
            default: return nil
            }
        }
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hex), let low = iterator.next().flatMap(hex) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard !bytes.contains(0) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension TypedValue {
    /// The value inside any number of variants.
    var unwrappedVariant: TypedValue {
        if case .variant(let inner) = self { return inner.unwrappedVariant }
        return self
    }
}
