// SPDX-License-Identifier: Apache-2.0
import Foundation

// Fixture files for the recent-files bridge: the Desktop Bookmark format
// (XBEL) GTK's GtkRecentManager and KDE's KIO write to recently-used.xbel.

/// One `<bookmark>` of a fixture file: a document `app` opened.
public struct XBELEntry: Sendable {
    public var uri: String
    /// `<title>`; nil: none (the bridge then uses the file's name).
    public var title: String?
    /// The `<bookmark:application>`'s name and exec, as GTK writes them.
    public var app: String
    public var exec: String
    public var count: Int
    /// The bookmark's added, modified and visited times and the application's.
    public var modified: Date
    /// `<bookmark:private/>`.
    public var isPrivate: Bool
    public var mimeType: String

    public init(uri: String, title: String?, app: String, exec: String = "'fixture %u'", count: Int = 1, modified: Date,
                isPrivate: Bool = false, mimeType: String = "text/plain") {
        self.uri = uri
        self.title = title
        self.app = app
        self.exec = exec
        self.count = count
        self.modified = modified
        self.isPrivate = isPrivate
        self.mimeType = mimeType
    }
}

/// A `recently-used.xbel` with `entries`, as GTK writes it.
public func xbel(_ entries: [XBELEntry]) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&apos;")
    }
    var text = """
        <?xml version="1.0" encoding="UTF-8"?>
        <xbel version="1.0" xmlns:bookmark="http://www.freedesktop.org/standards/desktop-bookmarks" xmlns:mime="http://www.freedesktop.org/standards/shared-mime-info">

        """
    for entry in entries {
        let stamp = formatter.string(from: entry.modified)
        text += "<bookmark href=\"\(escape(entry.uri))\" added=\"\(stamp)\" modified=\"\(stamp)\" visited=\"\(stamp)\">\n"
        if let title = entry.title { text += "<title>\(escape(title))</title>\n" }
        text += """
            <info><metadata owner="http://freedesktop.org"><mime:mime-type type="\(entry.mimeType)"/>
            <bookmark:applications><bookmark:application name="\(escape(entry.app))" exec="\(escape(entry.exec))" modified="\(stamp)" count="\(entry.count)"/></bookmark:applications>
            \(entry.isPrivate ? "<bookmark:private/>" : "")</metadata></info></bookmark>

            """
    }
    return text + "</xbel>\n"
}

