// SPDX-License-Identifier: Apache-2.0

/// One installed desktop application, as far as the service cares about it.
///
/// Only what survived validation is kept: ``declaredTypes`` holds the accepted
/// declarations, so code that checks "may this app create that type" never
/// has to repeat the team rule.
public struct InstalledApp: Sendable, Equatable {
    /// The desktop-file ID without `.desktop` (`com.example.Editor`,
    /// `vendor-foo` for `vendor/foo.desktop`): the spec's app ID.
    public var id: String
    /// The file that won for this ID, for launching and for log messages.
    public var desktopFilePath: String
    /// `Name=` (unlocalized), for messages and search results.
    public var name: String?
    /// `Icon=`, passed through to whoever renders results.
    public var icon: String?
    /// The accepted `X-UserActivityTypes`, in file order, without duplicates.
    public var declaredTypes: [String]
    /// The team that continuations are restricted to (see ``AppCatalog``).
    public var team: String
    /// `DBusActivatable=true`: continue through `org.freedesktop.Application`
    /// rather than by launching the `Exec` line.
    public var dbusActivatable: Bool
    /// `X-SnapInstanceName`, which snapd writes into the desktop files it
    /// exports; it is how a Snap's cgroup is mapped back to an app ID.
    public var snapInstanceName: String?
    /// `MimeType=`: the content types and `x-scheme-handler/<scheme>` it opens.
    public var mimeTypes: [String]
    /// Whether `Exec=` takes URIs or files (`%u`, `%U`, `%f` or `%F`), so
    /// that a document can be handed to it on its command line.
    public var execTakesURIs: Bool
    /// The program `Exec=` runs, without its directory (`gedit` for
    /// `/usr/bin/gedit %U`), for matching what other histories recorded.
    public var execProgram: String?

    /// An app as already validated (the catalog's loader, or a test's fixture).
    public init(id: String, desktopFilePath: String, name: String? = nil, icon: String? = nil,
                declaredTypes: [String] = [], team: String, dbusActivatable: Bool = false,
                snapInstanceName: String? = nil, mimeTypes: [String] = [], execTakesURIs: Bool = false,
                execProgram: String? = nil) {
        self.id = id
        self.desktopFilePath = desktopFilePath
        self.name = name
        self.icon = icon
        self.declaredTypes = declaredTypes
        self.team = team
        self.dbusActivatable = dbusActivatable
        self.snapInstanceName = snapInstanceName
        self.mimeTypes = mimeTypes
        self.execTakesURIs = execTakesURIs
        self.execProgram = execProgram
    }

    /// The program of a command line, without its directory: the first word
    /// (quotes removed; an `env VAR=value` prefix skipped); for
    /// `flatpak run [options] <app-id>` the app ID.
    public static func execProgram(_ exec: String) -> String? {
        var words = commandWords(exec)
        if words.first.map(basename) == "env" {
            words.removeFirst()
            while let first = words.first, first.contains("="), !first.hasPrefix("/") { words.removeFirst() }
        }
        if words.first.map(basename) == "flatpak", words.count > 2, words[1] == "run",
           let id = words.dropFirst(2).first(where: { !$0.hasPrefix("-") }) {
            return id
        }
        return words.first.map(basename).flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func basename(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
    }

    /// Words of a command line, with `'…'` and `"…"` quoting (backslash
    /// escapes inside double quotes) removed.
    static func commandWords(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped { current.append(character); escaped = false; continue }
            if let open = quote {
                if character == open { quote = nil } else if character == "\\" && open == "\"" { escaped = true } else { current.append(character) }
                continue
            }
            switch character {
            case "'", "\"": quote = character; inWord = true
            case "\\": escaped = true; inWord = true
            case " ", "\t", "\n":
                if inWord { words.append(current); current = ""; inWord = false }
            default: current.append(character); inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    /// Whether its entry lists `x-scheme-handler/<scheme>` in `MimeType=`.
    public func handlesScheme(_ scheme: String) -> Bool {
        mimeTypes.contains("x-scheme-handler/" + scheme.lowercased())
    }

    /// Whether an `Exec=` line has a `%u`, `%U`, `%f` or `%F` field code
    /// (`%%` is a literal percent sign, not a code).
    public static func execTakesURIs(_ exec: String) -> Bool {
        var iterator = exec.makeIterator()
        while let character = iterator.next() {
            guard character == "%" else { continue }
            switch iterator.next() {
            case "u", "U", "f", "F": return true
            default: continue
            }
        }
        return false
    }

    /// Whether this app may create, donate and receive `type`.
    public func declares(_ type: String) -> Bool { declaredTypes.contains(type) }
}

/// The installed applications and the activity types they declare.
///
/// A catalog is an immutable snapshot: the service builds a new one whenever
/// a desktop-entry directory changes and swaps it in, so readers never see a
/// half-read directory tree.
///
/// ## Team rule
/// An app's team is its `X-UserActivityTeam` key, or else its app ID without
/// the last component. An explicit team must equal the app ID or be an
/// ancestor of it with at least two components; an app whose explicit team
/// breaks that rule has all its declarations ignored (fail closed), because
/// a team is what keeps one vendor's continuations away from another's apps.
/// Each declared type must be a reverse-DNS name beginning with `<team>.`.
public struct AppCatalog: Sendable {
    /// The desktop entries' group, per the Desktop Entry Specification.
    public static let desktopEntryGroup = "Desktop Entry"
    /// The `NSUserActivityTypes` of a desktop entry (a string list).
    public static let typesKey = "X-UserActivityTypes"
    /// An explicit team, for a suite whose apps share activity types.
    public static let teamKey = "X-UserActivityTeam"
    /// Written by snapd into the entries it exports.
    public static let snapInstanceNameKey = "X-SnapInstanceName"

    private var byID: [String: InstalledApp]
    private var sortedIDs: [String]
    private var byType: [String: [String]]
    /// Human-readable reasons why declarations or entries were ignored, one per
    /// problem, so that a packager can find their mistake in the journal.
    public private(set) var warnings: [String]

    /// An empty catalog, for tests and for the moment before the first scan.
    public init() {
        self.init(apps: [], warnings: [])
    }

    /// A catalog of already-validated apps (later duplicates of an ID are dropped).
    public init(apps: [InstalledApp], warnings: [String] = []) {
        var byID: [String: InstalledApp] = [:]
        for app in apps where byID[app.id] == nil { byID[app.id] = app }
        self.byID = byID
        self.sortedIDs = byID.keys.sorted()
        var byType: [String: [String]] = [:]
        for id in sortedIDs {
            for type in byID[id]!.declaredTypes { byType[type, default: []].append(id) }
        }
        self.byType = byType
        self.warnings = warnings
    }

    /// All installed apps, sorted by app ID so that callers get a stable order.
    public var apps: [InstalledApp] { sortedIDs.map { byID[$0]! } }

    /// The installed app with this ID, nil when none is (or it is hidden).
    public func app(_ id: String) -> InstalledApp? { byID[id] }

    /// The apps that declare `type`, sorted by app ID.
    public func apps(declaring type: String) -> [InstalledApp] {
        (byType[type] ?? []).map { byID[$0]! }
    }

    /// The app whose desktop entry carries this `X-SnapInstanceName`.
    ///
    /// A snap can export several desktop entries; the first by app ID wins so
    /// that the answer does not depend on directory order. All of them belong
    /// to the same snap, so none gains anything over another.
    public func app(withSnapInstanceName name: String) -> InstalledApp? {
        for id in sortedIDs where byID[id]!.snapInstanceName == name { return byID[id] }
        return nil
    }

    /// `$XDG_DATA_HOME/applications` followed by each `$XDG_DATA_DIRS` entry's
    /// `applications`, highest precedence first, with the XDG Base Directory
    /// defaults for unset or empty variables.
    public static func applicationDirectories(environment: [String: String]) -> [String] {
        var dataDirs: [String] = []
        if let home = environment["XDG_DATA_HOME"], home.hasPrefix("/") {
            dataDirs.append(home)
        } else if let home = environment["HOME"], !home.isEmpty {
            dataDirs.append(home + "/.local/share")
        }
        let system = environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        // The base-directory spec says relative paths are invalid and must be ignored.
        dataDirs += system.split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        var seen = Set<String>()
        var result: [String] = []
        for dir in dataDirs {
            let trimmed = dir.count > 1 && dir.hasSuffix("/") ? String(dir.dropLast()) : dir
            let applications = (trimmed == "/" ? "" : trimmed) + "/applications"
            if seen.insert(applications).inserted { result.append(applications) }
        }
        return result
    }

    /// Scans the directories (highest precedence first) and validates every
    /// app's declarations.
    ///
    /// The first directory that has a desktop-file ID decides it: a copy with
    /// `Hidden=true`, a non-application or an unreadable file there hides the
    /// ID from every later directory, as the Desktop Entry Specification
    /// requires (that is how a user uninstalls a system app for themselves).
    public static func load(applicationDirectories: [String], loadKeyFile: KeyFileLoader) -> AppCatalog {
        var decided = Set<String>()
        var apps: [InstalledApp] = []
        var warnings: [String] = []
        for directory in applicationDirectories {
            for (id, path) in desktopFiles(in: directory) {
                guard decided.insert(id).inserted else { continue }
                guard let file = loadKeyFile(path) else {
                    warnings.append("\(path): not a readable desktop entry; desktop-file ID '\(id)' is treated as not installed")
                    continue
                }
                if let app = parse(id: id, path: path, file: file, warnings: &warnings) {
                    apps.append(app)
                }
            }
        }
        return AppCatalog(apps: apps, warnings: warnings)
    }

    /// Desktop-file IDs and paths under one directory, sorted by relative path.
    ///
    /// Sorting makes the winner deterministic when `vendor/foo.desktop` and
    /// `vendor-foo.desktop` collide in one directory (the spec leaves it open).
    static func desktopFiles(in directory: String) -> [(id: String, path: String)] {
        var result: [(String, String)] = []
        var visited = Set<String>()
        func walk(_ dir: String, prefix: String, depth: Int) {
            // Symlinked directories may loop; the real path breaks the cycle.
            let real = resolvingSymlinks(dir)
            guard depth < 16, visited.insert(real).inserted,
                  let names = directoryEntries(atPath: dir) else { return }
            for name in names.sorted() where !name.hasPrefix(".") {
                let path = dir + "/" + name
                guard let kind = fileKind(atPath: path) else { continue }
                if kind == .directory {
                    walk(path, prefix: prefix + name + "-", depth: depth + 1)
                } else if name.hasSuffix(".desktop"), name.count > ".desktop".count {
                    result.append((prefix + String(name.dropLast(".desktop".count)), path))
                }
            }
        }
        walk(directory, prefix: "", depth: 0)
        return result
    }

    /// The team an app gets when it names none.
    ///
    /// For a two-component app ID (`org.foo`) the parent would be a single
    /// component (`org`) that lets the app declare any `org.*` type, which the
    /// explicit-team rule forbids for exactly that reason; such an app's team
    /// is its own ID instead.
    public static func implicitTeam(of appID: String) -> String {
        guard let parent = ReverseDNSName.parent(of: appID), parent.contains(".") else { return appID }
        return parent
    }

    private static func parse(id: String, path: String, file: any KeyFileReading, warnings: inout [String]) -> InstalledApp? {
        let group = desktopEntryGroup
        guard file.hasGroup(group) else {
            warnings.append("\(path): no [Desktop Entry] group; desktop-file ID '\(id)' is treated as not installed")
            return nil
        }
        if file.boolean(group: group, key: "Hidden") == true { return nil }
        guard file.string(group: group, key: "Type") == "Application" else { return nil }

        var app = InstalledApp(
            id: id, desktopFilePath: path,
            name: file.string(group: group, key: "Name"),
            icon: file.string(group: group, key: "Icon"),
            team: implicitTeam(of: id),
            dbusActivatable: file.boolean(group: group, key: "DBusActivatable") ?? false,
            snapInstanceName: file.string(group: group, key: snapInstanceNameKey).flatMap { $0.isEmpty ? nil : $0 },
            mimeTypes: (file.stringList(group: group, key: "MimeType") ?? []).filter { !$0.isEmpty },
            execTakesURIs: file.string(group: group, key: "Exec").map { InstalledApp.execTakesURIs($0) } ?? false,
            execProgram: file.string(group: group, key: "Exec").flatMap { InstalledApp.execProgram($0) })

        let declared = file.stringList(group: group, key: typesKey) ?? []
        guard ReverseDNSName.isValid(id) else {
            if !declared.isEmpty {
                warnings.append("app '\(id)' (\(path)): its desktop-file ID is not a reverse-DNS name, so it cannot declare activity types; all \(declared.count) declaration(s) ignored (rename the desktop file to e.g. com.example.App.desktop)")
            }
            return app
        }
        if let explicitTeam = file.string(group: group, key: teamKey) {
            guard ReverseDNSName.isValid(explicitTeam) && ReverseDNSName.isAncestorOrSelf(explicitTeam, of: id) else {
                warnings.append("app '\(id)' (\(path)): \(teamKey)='\(explicitTeam.prefix(300))' is not allowed (a team must be the app ID or an ancestor of it with at least two components, e.g. '\(implicitTeam(of: id))'); all \(declared.count) declaration(s) ignored")
                return app
            }
            app.team = explicitTeam
        }
        var accepted: [String] = []
        for type in declared where !type.isEmpty {
            if !ReverseDNSName.isValid(type) {
                warnings.append("app '\(id)' (\(path)): declared type '\(type.prefix(300))' ignored: not a reverse-DNS name (letters, digits, '_' or '-' in at least two dot-separated elements)")
            } else if !type.hasPrefix(app.team + ".") {
                warnings.append("app '\(id)' (\(path)): declared type '\(type)' ignored: it must begin with the app's team '\(app.team).'")
            } else if !accepted.contains(type) {
                accepted.append(type)
            }
        }
        app.declaredTypes = accepted
        return app
    }
}
