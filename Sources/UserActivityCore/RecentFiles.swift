// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// One entry of the desktop's recently-used list (`recently-used.xbel`), as
/// GTK and KIO record it.
public struct RecentFileEntry: Sendable, Equatable {
    /// One app that recorded the entry.
    public struct Application: Sendable, Equatable {
        public var name: String
        public var exec: String
        public var count: UInt32
        /// Unix µs of its last recording; 0 when absent.
        public var stamp: Int64

        public init(name: String, exec: String, count: UInt32, stamp: Int64) {
            self.name = name
            self.exec = exec
            self.count = count
            self.stamp = stamp
        }
    }

    public var uri: String
    public var title: String
    public var mimeType: String
    public var isPrivate: Bool
    /// Unix µs; 0 when absent.
    public var modified: Int64
    public var visited: Int64
    public var applications: [Application]

    public init(uri: String, title: String = "", mimeType: String = "", isPrivate: Bool = false,
                modified: Int64 = 0, visited: Int64 = 0, applications: [Application] = []) {
        self.uri = uri
        self.title = title
        self.mimeType = mimeType
        self.isPrivate = isPrivate
        self.modified = modified
        self.visited = visited
        self.applications = applications
    }
}

/// A recent file as a saved `open-document` activity of the app that recorded it.
public struct RecentDocument: Sendable, Equatable {
    public var uri: String
    /// The recording app, or ``RecentFiles/unmatchedAppID``.
    public var appID: String
    /// The bookmark's title, else the file's name.
    public var title: String
    /// The folder, `~` for the home directory.
    public var folder: String
    public var mimeType: String
    /// The latest of the entry's modified, visited and application stamps (Unix µs).
    public var lastUsed: Int64
    /// The recording application's `count`.
    public var useCount: UInt32
    /// When the recording application last recorded a use (its `modified`,
    /// Unix µs; 0 when absent): how recent the use is that made it current.
    public var recordedAt: Int64 = 0
}

/// The recent-files bridge's rules, as pure functions: which entries become
/// saved activities, of which app, with what in them.
///
/// - Skipped: private entries (`<bookmark:private/>`), hidden files (a path
///   element starting with `.`), files under `/tmp`, URIs over
///   ``maximumURIBytes``, and, with
///   `maxAgeDays`, entries not used within that many days.
/// - The app: of the entry's applications the one that recorded it last; it
///   is matched to an installed desktop entry, as Zeitgeist's recent-manager
///   provider did: its name is an app ID (any case); else the program of its
///   exec is an entry's `Exec` program; else its name is the last element of
///   an app ID or an entry's `Name`. First match by app ID wins. Unmatched
///   entries keep the URI under ``unmatchedAppID`` (continued by the default
///   handler for their MIME type).
public enum RecentFiles {
    /// The bridge's name in the `Bridges` setting and in the store.
    public static let source = "recent-files"
    /// The app ID recent files are saved under when no installed app matches
    /// the one that recorded them. A reverse-DNS name so that it can be
    /// blocked (`BlockedApplications`) and forgotten (`ForgetApplication`).
    public static let unmatchedAppID = "org.example.UserActivity.RecentFiles"

    /// Longer URIs are skipped: no real document needs one, and each is
    /// kept in the store and its search index.
    public static let maximumURIBytes = 8192

    /// Why an entry is not imported, nil when it is.
    public static func skipReason(_ entry: RecentFileEntry) -> String? {
        if entry.isPrivate { return "private" }
        if entry.uri.utf8.count > maximumURIBytes || entry.uri.isEmpty { return "URI too long or empty" }
        guard let path = SystemActivityType.localPath(ofFileURI: entry.uri) else {
            // Remote documents (sftp:, smb:, https:) have no path to judge.
            return entry.uri.prefix(5).lowercased() == "file:" ? "not a local file" : nil
        }
        if path == "/tmp" || path.hasPrefix("/tmp/") { return "temporary" }
        if path.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { return "hidden" }
        return nil
    }

    /// The documents of `entries` that are imported, in file order.
    ///
    /// - Parameters:
    ///   - home: The home directory (shown as `~` in the folder).
    ///   - now: Unix µs, for `maxAgeDays`.
    ///   - maxAgeDays: `recent-files-max-age`: only entries used within this
    ///     many days; nil or negative: no cap; 0: none at all.
    public static func documents(_ entries: [RecentFileEntry], matcher: RecentAppMatcher, home: String,
                                 now: Int64, maxAgeDays: Int32?) -> [RecentDocument] {
        if let maxAgeDays, maxAgeDays == 0 { return [] }
        let cutoff: Int64? = maxAgeDays.flatMap { $0 > 0 ? now - Int64($0) * 86_400_000_000 : nil }
        var result: [RecentDocument] = []
        result.reserveCapacity(entries.count)
        for entry in entries where skipReason(entry) == nil {
            let recorder = entry.applications.max { $0.stamp < $1.stamp }
            let lastUsed = max(entry.modified, entry.visited, recorder?.stamp ?? 0)
            if let cutoff, lastUsed < cutoff { continue }
            let app = recorder.flatMap { matcher.match(name: $0.name, exec: $0.exec) } ?? unmatchedAppID
            result.append(RecentDocument(uri: entry.uri, appID: app, title: title(of: entry), folder: folder(of: entry.uri, home: home),
                                         mimeType: entry.mimeType, lastUsed: lastUsed, useCount: max(recorder?.count ?? 1, 1),
                                         recordedAt: recorder?.stamp ?? 0))
        }
        return result
    }

    /// The saved activity's properties: title, folder as content
    /// description, `user-info` `uri` and `mime-type`, persistent identifier
    /// the URI, eligible for search and prediction.
    public static func properties(of document: RecentDocument, limits: ActivityLimits) -> ActivityProperties {
        var properties = ActivityProperties()
        properties.title = truncated(document.title, to: limits.maximumTitleBytes)
        properties.contentDescription = truncated(document.folder, to: limits.maximumTextBytes)
        properties.userInfo = [(key: SystemActivityType.uriKey, value: .string(document.uri))]
        if !document.mimeType.isEmpty {
            properties.userInfo.append((key: SystemActivityType.mimeTypeKey, value: .string(document.mimeType)))
        }
        properties.persistentIdentifier = document.uri
        properties.eligibleForSearch = true
        properties.eligibleForPrediction = true
        return properties
    }

    static func title(of entry: RecentFileEntry) -> String {
        if !entry.title.isEmpty { return entry.title }
        let path = SystemActivityType.localPath(ofFileURI: entry.uri) ?? entry.uri
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name.isEmpty ? entry.uri : name
    }

    static func folder(of uri: String, home: String) -> String {
        guard let path = SystemActivityType.localPath(ofFileURI: uri) else {
            // A remote document: its URI without the last element.
            guard let slash = uri.lastIndex(of: "/") else { return "" }
            return String(uri[..<slash])
        }
        var elements = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !elements.isEmpty else { return "/" }
        elements.removeLast()
        let folder = "/" + elements.joined(separator: "/")
        let trimmedHome = home.count > 1 && home.hasSuffix("/") ? String(home.dropLast()) : home
        if !trimmedHome.isEmpty, trimmedHome != "/" {
            if folder == trimmedHome { return "~" }
            if folder.hasPrefix(trimmedHome + "/") { return "~" + folder.dropFirst(trimmedHome.count) }
        }
        return folder
    }

    /// At most `limit` bytes of UTF-8, cut at a character boundary.
    static func truncated(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            if bytes + size > limit { break }
            result.append(character)
            bytes += size
        }
        return result
    }
}

/// Matches what a recently-used list says recorded an entry to an installed app.
public struct RecentAppMatcher: Sendable {
    private var byID: [String: String] = [:]
    private var byProgram: [String: String] = [:]
    private var byShortName: [String: String] = [:]

    /// Indexes the catalog once, for many lookups (first by app ID wins).
    public init(catalog: AppCatalog) {
        for app in catalog.apps {
            let id = app.id.lowercased()
            if byID[id] == nil { byID[id] = app.id }
            if let program = app.execProgram, byProgram[program] == nil { byProgram[program] = app.id }
            if let last = app.id.split(separator: ".").last.map({ $0.lowercased() }), byShortName[last] == nil {
                byShortName[last] = app.id
            }
            if let name = app.name?.lowercased(), byShortName[name] == nil { byShortName[name] = app.id }
        }
    }

    /// The installed app that is `name` running `exec`, nil when none is.
    public func match(name: String, exec: String) -> String? {
        let lowered = name.lowercased()
        if let id = byID[lowered] ?? byID[lowered.hasSuffix(".desktop") ? String(lowered.dropLast(8)) : lowered] { return id }
        // GTK quotes the whole command line ('gedit %u'): unquote it once more.
        let words = InstalledApp.commandWords(exec)
        let command = words.count == 1 && words[0].contains(" ") ? words[0] : exec
        if let program = InstalledApp.execProgram(command) {
            if let id = byProgram[program] { return id }
            if let id = byID[program.lowercased()] { return id }
        }
        return byShortName[lowered]
    }
}
