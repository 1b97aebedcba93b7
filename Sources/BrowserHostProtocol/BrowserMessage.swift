// SPDX-License-Identifier: Apache-2.0
import UserActivityCore

/// The page a browser profile shows in its focused window's active tab.
public struct PageState: Sendable, Equatable {
    public var url: String
    public var title: String
    /// Saved for search too (the extension's option; off by default).
    public var searchable: Bool

    public init(url: String, title: String, searchable: Bool = false) {
        self.url = url
        self.title = title
        self.searchable = searchable
    }
}

/// A message from the extension.
///
/// ```json
/// {"type": "page", "url": "https://example.com/", "title": "Example", "searchable": false}
/// {"type": "none"}
/// ```
/// `none`: nothing may be published now (no focused window, a private or
/// excluded page, the extension switched off).
public enum BrowserMessage: Sendable, Equatable {
    case page(PageState)
    case none
}

/// Why a message was refused; sent back as `{"type": "error", "error": …}`.
public struct BrowserMessageError: Error, Equatable, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

extension BrowserMessage {
    /// The longest URL published (as Chromium's own limit for URLs it shows).
    public static let maximumURLBytes = 2 * 1024 * 1024
    /// The service's title limit; a longer title is cut at a character.
    public static let maximumTitleBytes = 1024

    /// Reads one message's payload; every refusal says what was wrong.
    public static func decode(_ payload: [UInt8]) throws(BrowserMessageError) -> BrowserMessage {
        let value: JSONValue
        do {
            value = try JSONReader.parse(payload)
        } catch {
            throw BrowserMessageError("not JSON (\(error.reason) at byte \(error.offset))")
        }
        guard case .object = value else { throw BrowserMessageError("a message must be a JSON object") }
        guard let type = value["type"]?.stringValue else { throw BrowserMessageError("'type' must be a string") }
        switch type {
        case "none":
            return .none
        case "page":
            guard let url = value["url"]?.stringValue else { throw BrowserMessageError("'url' must be a string") }
            let title: String
            switch value["title"] {
            case nil, .null?: title = ""
            case .string(let t)?: title = t
            default: throw BrowserMessageError("'title' must be a string")
            }
            var searchable = false
            if let flag = value["searchable"] {
                guard let b = flag.boolValue else { throw BrowserMessageError("'searchable' must be true or false") }
                searchable = b
            }
            guard url.utf8.count <= maximumURLBytes else { throw BrowserMessageError("'url' is longer than \(maximumURLBytes) bytes") }
            guard WebPageURL.isPublishable(url) else {
                throw BrowserMessageError("'url' must be an http or https URL without a user name or password")
            }
            return .page(PageState(url: url, title: title.prefix(utf8Bytes: maximumTitleBytes), searchable: searchable))
        default:
            throw BrowserMessageError("unknown message type '\(String(type.prefix(64)))' (expected 'page' or 'none')")
        }
    }

}

/// Replies to the extension.
public enum HostReply {
    /// `{"type":"ready","appId":…}`: connected, publishing as `appID`.
    public static func ready(appID: String) -> [UInt8] {
        JSONWriter.bytes(.object([("type", .string("ready")), ("appId", .string(appID))]))
    }

    /// `{"type":"error","error":…}`.
    public static func error(_ message: String) -> [UInt8] {
        JSONWriter.bytes(.object([("type", .string("error")), ("error", .string(String(message.prefix(4096))))]))
    }
}

/// Which URLs may leave the browser: http and https only, with a host, and
/// never with credentials in them.
public enum WebPageURL {
    public static func isPublishable(_ url: String) -> Bool {
        let bytes = Array(url.utf8)
        // No whitespace or control characters anywhere (browsers send URLs encoded).
        guard !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return false }
        let lower = url.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") { rest = url.dropFirst(8) } else if lower.hasPrefix("http://") { rest = url.dropFirst(7) } else { return false }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("\\") else { return false }
        return true
    }
}
