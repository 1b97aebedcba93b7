// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import UserActivityCore

/// The desktop shells' search interfaces as data, like ``Interfaces``: the
/// objects' dispatch, signature checks and `Introspect` XML come from here.
///
/// They are not part of `Interfaces.all` on purpose: these are the shells'
/// contracts (GNOME Shell's and KRunner's), not ours, and
/// `dbus/org.example.UserActivity.xml` documents only ours.
enum DesktopSearchInterfaces {
    /// Where GNOME Shell finds the provider (`ObjectPath=` of the `.ini`).
    static let searchProviderPath = Interfaces.managerPath + "/SearchProvider"
    /// Where KRunner finds the runner (`X-Plasma-DBusRunner-Path=` of the plugin file).
    static let krunnerPath = Interfaces.managerPath + "/KRunner"

    /// The object of one app's own provider (its `search-provider.ini`'s
    /// `ObjectPath=`): the app ID escaped as GLib's
    /// `g_dbus_escape_object_path` does (every byte but `[A-Za-z0-9]` as `_`
    /// and two lowercase hex digits: `com.example.Docs` → `com_2eexample_2eDocs`).
    static func perAppProviderPath(app: String) -> String {
        var element = ""
        for byte in app.utf8 {
            let isAlphanumeric = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
            if isAlphanumeric {
                element.append(Character(Unicode.Scalar(byte)))
            } else {
                let hex = Array("0123456789abcdef")
                element += "_" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0xf)])
            }
        }
        return searchProviderPath + "/" + element
    }

    /// The app ID of a per-app provider path; nil for any other path, and
    /// for an element that does not unescape to a reverse-DNS app ID.
    static func perAppProviderApp(path: String) -> String? {
        let prefix = searchProviderPath + "/"
        guard path.hasPrefix(prefix) else { return nil }
        var bytes: [UInt8] = []
        var iterator = Array(path.utf8.dropFirst(prefix.utf8.count)).makeIterator()
        func hex(_ byte: UInt8?) -> UInt8? {
            guard let byte else { return nil }
            switch byte {
            case 0x30...0x39: return byte - 0x30
            case 0x61...0x66: return byte - 0x61 + 10
            default: return nil
            }
        }
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "_") {
                guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard let app = String(validating: bytes, as: UTF8.self), AppIDName.isWellFormed(app),
              perAppProviderPath(app: app) == path else { return nil }
        return app
    }

    static let searchProviderName = "org.gnome.Shell.SearchProvider2"
    static let krunnerName = "org.kde.krunner1"

    /// KRunner action that opens a result's webpage-url instead of continuing it.
    static let openInBrowserAction = "open-in-browser"

    /// The icon of a result whose app has no `Icon=` (or is not installed any more).
    static let fallbackIcon = "edit-find"

    private typealias A = InterfaceDescription.Argument
    private typealias M = InterfaceDescription.Method

    private static let termsArg = A("terms", "as", "the words typed in the shell's search entry; they are joined with spaces into one Search query (every word must match, the last also as a prefix)")
    private static let timestampArg = A("timestamp", "u", "the X11 user-interaction time of the click; passed on as desktop-startup-id _TIME<timestamp> when not 0")

    static let gnomeSearchProvider = InterfaceDescription(
        name: searchProviderName,
        doc: """
        org.gnome.Shell.SearchProvider2 at /org/example/UserActivity/SearchProvider: GNOME Shell's search
        over saved search-eligible activities (the manager's Search). Result IDs are saved IDs.
        Installed by desktop/org.example.UserActivity.search-provider.ini in $XDG_DATA_DIRS/gnome-shell/search-providers/.
        Visibility is the manager's: a sandboxed caller sees and activates only its own app's entries.
        Per-app providers: the same interface at /org/example/UserActivity/SearchProvider/<escaped app ID>
        (every byte of the app ID but [A-Za-z0-9] as _ and two lowercase hex digits, as g_dbus_escape_object_path
        does: com.example.Docs → com_2eexample_2eDocs) returns only that app's entries, so an app that ships its
        own search-provider.ini (DesktopId=<app ID>.desktop, BusName=org.example.UserActivity, ObjectPath= that
        path, Version=2) gets its activities listed under its own icon. A path that does not unescape to an app
        ID is UnknownObject.
        """,
        methods: GnomeSearchProvider.allCases.map(\.method),
        signals: [],
        properties: [])

    static let krunner = InterfaceDescription(
        name: krunnerName,
        doc: """
        org.kde.krunner1 at /org/example/UserActivity/KRunner: KRunner's D-Bus runner API (X-Plasma-API=DBus2)
        over saved search-eligible activities (the manager's Search). Match IDs are saved IDs: stable across
        queries and restarts, so the plugin sets X-Plasma-Runner-Unique-Results=true.
        Installed by desktop/krunner/org.example.UserActivity.desktop in $XDG_DATA_DIRS/krunner/dbusplugins/.
        Visibility is the manager's: a sandboxed caller sees and runs only its own app's entries.
        """,
        methods: KRunner.allCases.map(\.method),
        signals: [],
        properties: [])
}

extension DesktopSearchInterfaces {
    /// GNOME Shell's search provider methods.
    enum GnomeSearchProvider: InterfaceMember {
        case getInitialResultSet, getSubsearchResultSet, getResultMetas, activateResult, launchSearch

        static var interface: InterfaceDescription { gnomeSearchProvider }

        var method: InterfaceDescription.Method {
            switch self {
            case .getInitialResultSet:
                M(name: "GetInitialResultSet", inputs: [termsArg],
                  outputs: [A("results", "as", "saved IDs, best first, at most 20")],
                  doc: "A new search: the saved IDs of the best matches for the joined terms.")
            case .getSubsearchResultSet:
                M(name: "GetSubsearchResultSet",
                  inputs: [A("previous_results", "as", "the saved IDs returned for the previous, shorter terms"), termsArg],
                  outputs: [A("results", "as", "those of previous_results that still match, in the new ranking's order")],
                  doc: "The user refined the terms: narrows the previous results (never adds new ones, as the shell expects).")
            case .getResultMetas:
                M(name: "GetResultMetas", inputs: [A("identifiers", "as", "saved IDs from a result set")],
                  outputs: [A("metas", "aa{sv}", "per known ID: id (s), name (s, the title; the app's name or the activity type when the title is empty), description (s, the content description, else the app's name), gicon (s, the app's Icon= from its desktop entry, else edit-find), clipboardText (s, the webpage-url, only when set)")],
                  doc: "What the shell shows for each result. IDs that no longer exist (deleted, expired) are left out.")
            case .activateResult:
                M(name: "ActivateResult",
                  inputs: [A("identifier", "s", "the saved ID the user chose"), termsArg, timestampArg], outputs: [],
                  doc: "Continues the saved activity by calling the manager's ContinueSavedActivity on this service (one code path for every continuation). The reply comes when the continuation is done; its error, if any, is the reply's (and is logged).")
            case .launchSearch:
                M(name: "LaunchSearch", inputs: [termsArg, timestampArg], outputs: [],
                  doc: "The user clicked the provider's icon: launches org.example.UserActivity.desktop (a terminal running `useractivityctl browse`) with the terms as one useractivity-search: URI, so the search continues interactively in the CLI. org.freedesktop.DBus.Error.Failed when that desktop entry is not installed or cannot be started; AccessDenied for a sandboxed caller.")
            }
        }
    }

    /// KRunner's runner methods.
    enum KRunner: InterfaceMember {
        case match, actions, run, setActivationToken, config, teardown

        static var interface: InterfaceDescription { krunner }

        var method: InterfaceDescription.Method {
            switch self {
            case .match:
                M(name: "Match", inputs: [A("query", "s", "what the user typed, as one Search query")],
                  outputs: [A("matches", "a(sssida{sv})", "per result: id (saved ID), text (title), icon name (the app's Icon=, else edit-find), type (100 = exact match: the title equals the query ignoring case and accents; 70 otherwise: KF6 CategoryRelevance High, KF5 HelperMatch), relevance (0..1: the Search score divided by the best result's, 1 for an exact match), properties: subtext (content description, else the app's name), category (Activities), urls (the webpage-url, when set), actions ([open-in-browser] when there is a webpage-url, else [] so that no action is shown)")],
                  doc: "The best matches (at most 20) for the query.")
            case .actions:
                M(name: "Actions", inputs: [],
                  outputs: [A("actions", "a(sss)", "id, text, icon: open-in-browser, Open in Browser, internet-web-browser")],
                  doc: "The one action a match may offer: opening its webpage-url with the default browser instead of continuing it in an app. Constant (the plugin sets X-Plasma-Request-Actions-Once).")
            case .run:
                M(name: "Run", inputs: [A("match_id", "s", "a saved ID from Match"), A("action_id", "s", "empty for the default action (continue), or open-in-browser")], outputs: [],
                  doc: "The default action continues the saved activity by calling the manager's ContinueSavedActivity on this service; open-in-browser opens its webpage-url. The reply comes when that is done; its error, if any, is the reply's (and is logged). NotFound for an unknown ID; InvalidArgument for an unknown action or open-in-browser without a webpage-url.")
            case .setActivationToken:
                M(name: "SetActivationToken", inputs: [A("token", "s", "an xdg-activation token for the window the next Run opens")], outputs: [],
                  doc: "KRunner (Plasma 6) sends this just before Run: the token is kept for the calling connection and passed on, as the activation-token option, to the continuation of that connection's next Run (then it is used up). A connection's token goes when it closes.")
            case .config:
                M(name: "Config", inputs: [],
                  outputs: [A("config", "a{sv}", "MinLetterCount (i): 2, so that one typed letter does not list every activity")],
                  doc: "Runner configuration, asked for by KRunner for DBus2 runners.")
            case .teardown:
                M(name: "Teardown", inputs: [], outputs: [],
                  doc: "The match session is over. Nothing is kept per session, so there is nothing to clear.")
            }
        }
    }
}
