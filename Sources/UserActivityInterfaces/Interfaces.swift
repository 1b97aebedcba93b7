// SPDX-License-Identifier: Apache-2.0
import UserActivityCore

/// The D-Bus contract as data. Dispatch, signature
/// checks and the introspection XML (served and kept in `dbus/`) come from here.
public enum Interfaces {
    public static let busName = "org.example.UserActivity"
    public static let managerPath = "/org/example/UserActivity"
    public static let activityPathPrefix = "/org/example/UserActivity/activity/"
    public static let managerName = "org.example.UserActivity"
    public static let activityName = "org.example.UserActivity.Activity"
    public static let handlerName = "org.example.UserActivity.Handler"

    private typealias A = InterfaceDescription.Argument
    private typealias M = InterfaceDescription.Method
    private typealias S = InterfaceDescription.Signal
    private typealias P = InterfaceDescription.Property

    private static let typeArg = A("activity_type", "s", "reverse-DNS activity type declared by the caller's app in X-UserActivityTypes, e.g. com.example.Editor.edit-document, or a system type (org.example.UserActivity.browsing-web, org.example.UserActivity.open-document) that needs no declaration")
    private static let propertiesArg = A("properties", "a{sv}", "activity properties by kebab-case key (title, user-info, keywords, webpage-url, …); an unconfined caller may add app-id to name its app. Unknown keys, wrong types and activity-type are InvalidArgument")
    private static let continueOptionsArg = A("options", "a{sv}", "target-app-id (s) chooses among candidate apps (UnknownApplication when not installed, NoHandler when it cannot take this activity; never swapped for another app); timeout-ms (u, default 10000, 0 = default, at most 600000) bounds launching, registering and answering together; activation-token (s) and desktop-startup-id (s) are passed on in platform data; stream-relay (o), ContinueActivity from unconfined callers only (AccessDenied otherwise, InvalidArgument on other methods): the origin is on another device, and the continuation stream the receiving app opens with its continuation-token goes to Handler.ContinuationStreamOpened at this path on the caller's connection")

    public static let manager = InterfaceDescription(
        name: managerName,
        doc: """
        org.example.UserActivity: the session's activity manager (NSUserActivity for the Linux desktop).
        Who is calling: the app is found from the caller's process (Flatpak, Snap, systemd app unit, an owned
        well-known name that is an installed app ID); an unconfined caller may name its app with app-id or
        RegisterApplication. A confined caller acts, reads and searches only for its own app.
        Signals are not broadcast: each signal about an activity (InterfacesAdded, InterfacesRemoved, its
        PropertiesChanged, Continued, and this object's CurrentActivity change) is sent as unicast copies
        (destination set) to the connections that asked for it and may read it (the owning app's connections
        and every unconfined one; the privacy properties' PropertiesChanged to unconfined connections only).
        Asking: GetManagedObjects (as GDBusObjectManagerClient does) or Subscribe: every signal the caller may
        read; Properties.Get/GetAll on this object (as GDBusProxy does): its PropertiesChanged; Properties.Get/GetAll
        on an activity: that activity's PropertiesChanged, Continued and InterfacesRemoved. Calls that only act
        (CreateActivity, Update, BecomeCurrent, Donate, Search…) ask for nothing; an activity's own connection
        is sent its Continued all the same. Unsubscribe or closing the connection ends every subscription; a
        restarted service knows nobody until asked again. Match rules do not choose unicast signals.
        Signals a call causes (InterfacesAdded, PropertiesChanged, Continued…) follow its reply within about
        a millisecond, and always come before anything the service sends or answers after them. One
        connection's calls are answered in the order sent (Peer.Ping, answered by libdbus, excepted).
        Resource limits (LimitExceeded unless named otherwise): an activity's data (text fields, keywords, the
        marshalled user-info and content-attributes) at most 256 KiB in all; live activities 256 per connection,
        1024 per sandboxed app over all its connections, 8192 in the session; their data 16 MiB per app and
        256 MiB in the session; continuations in flight 64 per connection, 128 per sandboxed app, 1024 in the
        session (desktop-search continuations count against the shell or app that asked); app and browser
        launches 10 at once per app (per connection for an unconfined caller), then one per second; donations 200
        at once per sandboxed app over all its connections, then 50 a second (unconfined callers are not counted). A call
        whose activity data are larger than any valid one is refused before it is decoded (UserInfoTooLarge for
        user-info). Unix file descriptors are never taken from callers or apps: every one received is closed.
        System activity types: any app may create, make current and donate these without declaring them
        (NSUserActivityTypeBrowsingWeb is the model); what they carry is checked on every write (InvalidArgument).
        org.example.UserActivity.browsing-web needs webpage-url; it is continued by the publisher when its desktop
        entry handles x-scheme-handler/https (or http) and its Exec takes %u/%U, else by the default web browser.
        org.example.UserActivity.open-document needs user-info uri (s, an absolute URI) and may give mime-type (s);
        it is continued by launching the publisher with the URI when its Exec takes %u/%U/%f/%F, else by the
        default handler of the MIME type (of the file, or of the URI's scheme, without one); a file:// URI whose
        file does not exist here is NotFound naming the path. target-app-id picks another app that can take the
        URI. activation-token and desktop-startup-id reach the launched app as XDG_ACTIVATION_TOKEN and
        DESKTOP_STARTUP_ID. Registered handlers take no part in them.
        """,
        methods: Manager.allCases.map(\.method),
        signals: [
            S(name: "SavedActivitiesChanged", arguments: [],
              doc: "Addition: saved activities were added, changed or removed (a donation, a save on BecomeCurrent, a forget or delete, expiry, retention, blocking, the per-app limit, an imported desktop history); a hint to search again. Coalesced: at most one each 250 ms, and one always follows the last change. Sent only to unconfined connections that called GetManagedObjects or Subscribe; a confined caller never gets it (when other apps' history changes is not its to learn)."),
        ],
        properties: [
            P(name: "CurrentActivity", signature: "o", isWritable: false,
              doc: "The session's current activity, / when none; PropertiesChanged is emitted when it changes. A confined caller sees only its own app's activity here (/ while another app's is current), and only such changes reach it."),
            P(name: "Version", signature: "s", isWritable: false, doc: "The service's version."),
            P(name: "Paused", signature: "b", isWritable: true,
              doc: "Privacy control, off the record: while true nothing is saved (Donate returns an empty saved id); becoming current and continuation still work. Kept in $XDG_CONFIG_HOME/useractivity/useractivity.conf, so it survives restarts. Unconfined callers only (AccessDenied otherwise), for reading too."),
            P(name: "BlockedApplications", signature: "as", isWritable: true,
              doc: "Privacy control: apps whose activities are never saved or suggested; blocking an app deletes its saved entries. Unconfined callers only."),
            P(name: "BlockedActivityTypes", signature: "as", isWritable: true,
              doc: "Privacy control: activity types that are never saved or suggested; blocking a type deletes its saved entries. Unconfined callers only."),
            P(name: "RetentionDays", signature: "u", isWritable: true,
              doc: "Privacy control: saved entries not used for this many days are purged (checked hourly and on change); default 90, 0 keeps them. Unconfined callers only."),
            P(name: "MaxSavedPerApplication", signature: "u", isWritable: true,
              doc: "Privacy control: at most this many saved entries per app, the least recently used go first; default 1000, 0 = no limit. Unconfined callers only."),
            P(name: "Bridges", signature: "as", isWritable: true,
              doc: "Privacy control: the bridges that import other desktop histories as saved activities; default [recent-files], empty turns them off (unknown names: InvalidArgument). recent-files: the documents GTK and KDE apps record in $XDG_DATA_HOME/recently-used.xbel become saved org.example.UserActivity.open-document activities of the app that recorded them (org.example.UserActivity.RecentFiles when no installed app matches), eligible for search and prediction, persistent-identifier the URI; private, hidden and /tmp entries are skipped; GSettings org.gnome.desktop.privacy remember-recent-files=false also turns it off and recent-files-max-age caps it, where that schema is installed. Paused, blocks, retention and Forget apply to them; a forgotten entry comes back only when the file records a new use of it. Kept in useractivity.conf as Bridges=. Unconfined callers only."),
            P(name: "RecentDocumentsBecomeCurrent", signature: "b", isWritable: true,
              doc: "Privacy control: while true (the default) and the recent-files bridge is on, a use an app has just recorded in recently-used.xbel (its application's modified within the last 2 minutes when the file is read) makes that document the session's current activity on the app's behalf: type org.example.UserActivity.open-document, user-info uri and mime-type, the title, eligible for handoff only (nothing more is saved than the bridge already saves). The next BecomeCurrent replaces it; it ends 30 minutes after the use unless a newer use comes; a document the app itself made current within a minute of the use is left to the app. Never while Paused, for a blocked app or type, with the bridge off or GNOME's remember-recent-files=false. Kept in useractivity.conf as RecentDocumentsBecomeCurrent=. Unconfined callers only."),
        ])

    /// Documentation of each activity property.
    public static func propertyDoc(_ field: ActivityField) -> String {
        switch field {
        case .activityType: return "activity-type: read-only after creation (activityType)."
        case .appID: return "app-id: read-only, the app that owns the activity."
        case .title: return "title: human-readable, shown in search and suggestions; at most 1 KiB."
        case .userInfo: return "user-info: state needed to restore (userInfo); any D-Bus type but h, o and g; values round-trip exactly; at most 64 KiB marshalled and 48 levels of nesting (UserInfoTooLarge), so that every message carrying it stays within D-Bus's 64-level limit."
        case .requiredUserInfoKeys: return "required-user-info-keys: keys that must be in UserInfo after every write; only these are kept in saved copies; at most 256 keys, each at most 1 KiB."
        case .keywords: return "keywords: search keywords; at most 64, each at most 1 KiB."
        case .contentDescription: return "content-description: subtitle for search results; at most 64 KiB."
        case .contentAttributes: return "content-attributes: further search attributes (thumbnail-path, kind, …); at most 64 KiB marshalled."
        case .webpageURL: return "webpage-url: http: or https: URL with a host name or IP literal, as GLib's strict RFC 3986 parser (g_uri_parse) reads it, without white space or control characters (InvalidArgument otherwise, e.g. https://\\\\host/ or https:///path); the browser fallback when no app can continue; at most 64 KiB."
        case .referrerURL: return "referrer-url: an absolute URL as GLib's strict RFC 3986 parser (g_uri_parse) reads it, without white space or control characters (referrerURL); at most 64 KiB."
        case .targetContentIdentifier: return "target-content-identifier: which window or scene should show it; at most 64 KiB."
        case .persistentIdentifier: return "persistent-identifier: stable id of the content; key of saved copies and of deletion; at most 1 KiB."
        case .expirationDate: return "expiration-date: Unix time in µs, 0 = never. At that time the activity stops being current and can no longer become current or be continued (Expired)."
        case .eligibleForHandoff: return "eligible-for-handoff: default true; Continue needs it (NotEligible)."
        case .eligibleForSearch: return "eligible-for-search: default false; when current, a saved copy is kept for Search."
        case .eligibleForPublicIndexing: return "eligible-for-public-indexing: default false; stored and reported, no public index exists."
        case .eligibleForPrediction: return "eligible-for-prediction: default false; when current, a saved copy is kept for GetSuggestions."
        case .suggestedInvocationPhrase: return "suggested-invocation-phrase: shown with suggestions; at most 1 KiB."
        case .needsSave: return "needs-save: the owner's Handler.SaveActivity is asked for fresh data before the activity is read for continuation or saving."
        case .supportsContinuationStreams: return "supports-continuation-streams: continuations carry a continuation-token for OpenContinuationStream."
        case .current: return "Current: read-only, whether this is the session's current activity."
        }
    }

    public static let activity = InterfaceDescription(
        name: activityName,
        doc: """
        org.example.UserActivity.Activity: one live activity at /org/example/UserActivity/activity/<id>.
        Only the owning app may change, make current, resign or invalidate it (AccessDenied otherwise).
        Writable properties can also be set with org.freedesktop.DBus.Properties.Set; every change emits one PropertiesChanged.
        Its signals go only to connections that asked for them (GetManagedObjects, Subscribe, or a property read of this object) and may read them: the owning app's and unconfined ones (see the manager).
        """,
        methods: Activity.allCases.map(\.method),
        signals: [
            S(name: "Continued", arguments: [A("by_app_id", "s", "the app that continued it (the browser's for the webpage-url fallback)")],
              doc: "The activity was continued (userActivityWasContinued)."),
        ],
        properties: ActivityField.allCases.map {
            P(name: $0.propertyName, signature: $0.typeSignature, isWritable: $0.isWritable, doc: propertyDoc($0))
        })

    public static let handler = InterfaceDescription(
        name: handlerName,
        doc: """
        org.example.UserActivity.Handler: implemented by apps, on the object path given to RegisterHandler.
        The service calls these; it is not served by useractivityd.
        """,
        methods: Handler.allCases.map(\.method),
        signals: [],
        properties: [])

    /// Our three interfaces, in the order of the documented XML.
    public static let all = [manager, activity, handler]

    /// The documented contract as kept in `dbus/org.example.UserActivity.xml`.
    public static func documentedXML() -> String {
        var out = StandardInterfacesXML.doctype
        // No two hyphens in a row inside a comment: that is not well-formed XML,
        // and gdbus-codegen and qdbusxml2cpp refuse (or silently skip) the file.
        out += "<!--\n  org.example.UserActivity: printed by useractivityd (option print-introspection) from the\n"
        out += "  service's dispatch tables; a test fails when this file and the served XML differ.\n\n"
        out += "  Errors (org.example.UserActivity.Error.<Name>):\n"
        for (kind, doc) in ErrorNames.documentation {
            out += "    \(ErrorNames.name(for: kind)): \(doc)\n"
        }
        out += "  Standard errors: org.freedesktop.DBus.Error.InvalidArgs (wrong call signature),\n"
        out += "    org.freedesktop.DBus.Error.UnknownObject (invalidated activity),\n"
        out += "    org.freedesktop.DBus.Error.PropertyReadOnly, org.freedesktop.DBus.Error.UnknownProperty.\n"
        out += "-->\n<node>\n"
        for interface in all { out += interface.xml() }
        out += "</node>\n"
        return out
    }
}

/// Each interface's methods as an enum: a table giving each its handler is
/// an exhaustive `switch`, so a missing or misspelled handler does not compile.
extension Interfaces {
    /// The manager's methods, in the documented order; `Interfaces.manager` lists them.
    public enum Manager: InterfaceMember {
        case createActivity, becomeCurrent, donate, search, getSuggestions, continueActivity, fetchForHandoff, markContinued, continueSavedActivity, registerApplication, registerHandler, openContinuationStream, openHandoffStream, deleteSavedActivities, deleteAllSavedActivities, forgetApplication, forgetRange, forgetAll, forgetSavedActivities, subscribe, unsubscribe

        public static var interface: InterfaceDescription { manager }

        public var method: InterfaceDescription.Method {
            switch self {
            case .createActivity:
                M(name: "CreateActivity", inputs: [typeArg, propertiesArg],
                  outputs: [A("activity", "o", "object path of the new live activity under /org/example/UserActivity/activity/")],
                  doc: "Creates a live activity owned by the caller's connection and app; it is not yet current. It is invalidated when the connection closes. Errors: InvalidArgument, NotDeclared, UnknownApplication, AccessDenied, Expired, UserInfoTooLarge, MissingRequiredUserInfoKeys, LimitExceeded (the per-connection, per-app or session count of live activities, the activity's 256 KiB of data, or the app's 16 MiB of live activity data).")
            case .becomeCurrent:
                M(name: "BecomeCurrent", inputs: [typeArg, propertiesArg],
                  outputs: [A("activity", "o", "object path of the new, current live activity")],
                  doc: "CreateActivity and Activity.BecomeCurrent in one call. The activity still ends with the caller's connection: scripts that want something to last use Donate. A search- or prediction-eligible activity is saved before the reply.")
            case .donate:
                M(name: "Donate", inputs: [typeArg, propertiesArg],
                  outputs: [A("saved_id", "s", "id of the saved copy (the same for a repeated persistent-identifier); empty when saving is paused or blocked")],
                  doc: "Saves a shortcut for suggestions and search without making anything current (a Siri shortcut donation); counts as one use. eligible-for-prediction defaults to true here. The reply comes after the write is durable. LimitExceeded (addition): a sandboxed app's share of donations is spent (200 at once, then 50 a second over all its connections).")
            case .search:
                M(name: "Search", inputs: [A("query", "s", "free text; every word must match, the last also as a prefix; case- and accent-insensitive; operators are plain words"),
                                            A("options", "a{sv}", "limit (u, default 20, at most 200), app-id (s), activity-types (as)")],
                  outputs: [A("results", "aa{sv}", "best first: saved-id, app-id, activity-type, title, content-description, keywords, webpage-url, score (d), last-used (x, Unix µs)")],
                  doc: "Full-text search over saved search-eligible activities (title, keywords, content description). Needs no identity; a confined caller sees only its own app's entries.")
            case .getSuggestions:
                M(name: "GetSuggestions", inputs: [A("options", "a{sv}", "limit (u, default 10, at most 200), app-id (s)")],
                  outputs: [A("results", "aa{sv}", "as Search, plus suggested-invocation-phrase (s) and use-count (u)")],
                  doc: "Prediction-eligible saved activities ranked by how often, how recently and at what time of day they were used.")
            case .continueActivity:
                M(name: "ContinueActivity", inputs: [typeArg, A("properties", "a{sv}", "the activity's data; app-id names the app that published it, when known"), continueOptionsArg],
                  outputs: [A("app_id", "s", "the app that took it (the browser's for the webpage-url fallback, empty when unknown)")],
                  doc: """
                  Dispatches an activity that came from outside (a link, another device, a script) to an app of the publisher's team that declares its type; falls back to opening webpage-url with the default https handler (mimeapps.list).
                  Candidates, in order: the publisher itself, apps with a registered handler, DBusActivatable apps, the rest; each group by app ID. Delivery: Handler.ContinueActivity on a registered handler; else org.freedesktop.Application.ActivateAction('continue-activity', [<(sa{sv})>], platform_data); else the app is launched from its desktop entry and the activity delivered when it registers a handler.
                  System types go by their URI (see the interface's description). Errors: NoHandler (no candidate and no webpage-url, or the browser or default handler could not be opened), NotFound (an open-document file:// URI that does not exist here), RemoteApplicationTimedOut (no answer in time, or the app could not be launched, activated or reached; the app then gets FailedToContinue), ContinuationFailed (the app answered false, or lacks the continue-activity action or the Handler method), the app's own error passed on, Expired, MissingRequiredUserInfoKeys, LimitExceeded (too many continuations in flight for the connection, the sandboxed app or the session, or too many launches: the message says which). A confined caller may name only its own app as app-id (AccessDenied), and is the publisher when it names none: its activity goes only to apps of its own team (NoHandler when none declares the type and there is no webpage-url); a confined caller whose app cannot be identified gets UnknownApplication. Only an unconfined caller may send an activity of unknown origin (app-id left out), which any app declaring the type may receive.

                  """)
            case .fetchForHandoff:
                M(name: "FetchForHandoff", inputs: [A("activity", "o", "a live activity, normally the session's current one"),
                                                     A("options", "a{sv}", "timeout-ms (u, default 10000, 0 = default, at most 600000): how long the owner's SaveActivity may take")],
                  outputs: [A("activity_type", "s", "the activity's type"),
                            A("properties", "a{sv}", "its data as a handler would receive it: app-id (the owner), title and user-info always, other properties when they differ from their defaults")],
                  doc: "Addition for useractivity-handoffd (Handoff between devices): reads a live activity in full for continuing it on another device, after its owner answered SaveActivity when NeedsSave is set, without continuing it here. Only unconfined callers (AccessDenied otherwise). Errors: NotFound (no such live activity), Expired, NotEligible (not eligible for handoff), ContinuationFailed (NeedsSave is set and the owner's SaveActivity failed or its answer could not be applied), RemoteApplicationTimedOut (the owner did not answer SaveActivity within timeout-ms): unlike a continuation here, data the owner failed to bring up to date are not handed to another device.")
            case .markContinued:
                M(name: "MarkContinued", inputs: [A("activity", "o", "the live activity that was continued elsewhere"),
                                                  A("by_app_id", "s", "the app that took it on the other device")],
                  outputs: [],
                  doc: "Addition for useractivity-handoffd: the live activity was continued on another device by that app; emits its Continued signal. Only unconfined callers (AccessDenied otherwise). NotFound when it is no longer live; InvalidArgument for a malformed app ID.")
            case .continueSavedActivity:
                M(name: "ContinueSavedActivity", inputs: [A("saved_id", "s", "a saved-id from Search, GetSuggestions or Donate"), continueOptionsArg],
                  outputs: [A("app_id", "s", "the app that took it")],
                  doc: "Continues a saved activity (a search result, a suggestion), as ContinueActivity with the saved app as publisher; it does not count a use. NotFound when there is no such saved activity or the caller may not see it (a confined caller sees only its own app's).")
            case .registerApplication:
                M(name: "RegisterApplication", inputs: [A("app_id", "s", "desktop-file ID without .desktop of an installed app: reverse-DNS, or a legacy ID such as firefox-esr while its entry is installed")], outputs: [],
                  doc: "Names the app this connection acts for when a call names none (like the host portal registry); a later call replaces it. A confined caller naming another app gets AccessDenied; an app that is not installed, UnknownApplication.")
            case .registerHandler:
                M(name: "RegisterHandler", inputs: [A("handler", "o", "object path where the caller implements org.example.UserActivity.Handler")], outputs: [],
                  doc: "The caller's app receives continuations at this path while the connection lives; a later registration of the same app replaces an earlier one.")
            case .openContinuationStream:
                M(name: "OpenContinuationStream", inputs: [A("continuation_token", "s", "the continuation-token from ContinueActivity's platform data")],
                  outputs: [A("stream", "h", "one end of a socket pair; the origin app receives the other end through ContinuationStreamOpened")],
                  doc: "Called by the continuing app. A token is single-use, valid for 60 s and while its origin lives, and only for the app that received the continuation (AccessDenied otherwise; a refused call does not consume it).")
            case .openHandoffStream:
                M(name: "OpenHandoffStream", inputs: [A("activity", "o", "the live activity an app on another device continued")],
                  outputs: [A("stream", "h", "one end of a socket pair; the activity's owner receives the other end through ContinuationStreamOpened")],
                  doc: "Addition for useractivity-handoffd: the continuing app on another device opened a continuation stream, which the daemon relays through this socket. Only unconfined callers (AccessDenied otherwise). Errors: NotFound (no such live activity), ContinuationFailed (the activity does not support continuation streams, or its owner has no registered handler).")
            case .deleteSavedActivities:
                M(name: "DeleteSavedActivities", inputs: [A("persistent_identifiers", "as", "persistent-identifier values of the caller app's saved activities")], outputs: [],
                  doc: "Deletes the caller app's saved activities with these persistent identifiers (deleteSavedUserActivities(withPersistentIdentifiers:)); other apps' entries are never touched.")
            case .deleteAllSavedActivities:
                M(name: "DeleteAllSavedActivities", inputs: [], outputs: [],
                  doc: "Deletes all of the caller app's saved activities.")
            case .forgetApplication:
                M(name: "ForgetApplication", inputs: [A("app_id", "s", "the app whose saved activities to delete")],
                  outputs: [A("deleted", "u", "number of saved activities deleted")],
                  doc: "Privacy control: deletes every saved activity of one app. Unconfined callers only (AccessDenied otherwise).")
            case .forgetRange:
                M(name: "ForgetRange", inputs: [A("from_usec", "x", "start of the range by last use, Unix µs, inclusive"), A("to_usec", "x", "end of the range, Unix µs, exclusive")],
                  outputs: [A("deleted", "u", "number of saved activities deleted")],
                  doc: "Privacy control: deletes every saved activity last used in [from_usec, to_usec). Unconfined callers only.")
            case .forgetAll:
                M(name: "ForgetAll", inputs: [], outputs: [A("deleted", "u", "number of saved activities deleted")],
                  doc: "Privacy control: deletes every saved activity. Unconfined callers only.")
            case .forgetSavedActivities:
                M(name: "ForgetSavedActivities", inputs: [A("saved_ids", "as", "saved-id values, as Search and GetSuggestions return them; at most 1000")],
                  outputs: [A("deleted", "u", "number of saved activities deleted (ids that match none are skipped)")],
                  doc: "Addition to the contract. Privacy control: deletes these saved activities, whichever app saved them (one search result, for a settings app). Unconfined callers only; InvalidArgument for an empty id or more than 1000.")
            case .subscribe:
                M(name: "Subscribe", inputs: [], outputs: [],
                  doc: "Addition: sends this connection every activity signal it may read (InterfacesAdded, InterfacesRemoved, PropertiesChanged, Continued; a confined caller only its own app's) until Unsubscribe or the connection closes, as GetManagedObjects does. Calling it again changes nothing.")
            case .unsubscribe:
                M(name: "Unsubscribe", inputs: [], outputs: [],
                  doc: "Addition: ends every subscription of this connection, also those GetManagedObjects and property reads made; no activity signal is sent to it afterwards (those of a call it made before are already sent). A no-op when not subscribed.")
            }
        }
    }

    /// A live activity's methods.
    public enum Activity: InterfaceMember {
        case update, addUserInfoEntries, becomeCurrent, resignCurrent, invalidate, `continue`

        public static var interface: InterfaceDescription { activity }

        public var method: InterfaceDescription.Method {
            switch self {
            case .update:
                M(name: "Update", inputs: [A("properties", "a{sv}", "properties to set, by kebab-case key; all apply or none")], outputs: [],
                  doc: "Sets several properties atomically (one PropertiesChanged).")
            case .addUserInfoEntries:
                M(name: "AddUserInfoEntries", inputs: [A("entries", "a{sv}", "entries merged into UserInfo, replacing equal keys")], outputs: [],
                  doc: "Merges into UserInfo (addUserInfoEntries(from:)).")
            case .becomeCurrent:
                M(name: "BecomeCurrent", inputs: [], outputs: [],
                  doc: "Makes it the session's current activity; the previous current activity, of any app, stops being current. A search- or prediction-eligible activity is saved (one more use) before the reply. NotDeclared when its app no longer declares its type (the desktop entry changed since it was created).")
            case .resignCurrent:
                M(name: "ResignCurrent", inputs: [], outputs: [],
                  doc: "Stops being current without being invalidated; a no-op when it is not current.")
            case .invalidate:
                M(name: "Invalidate", inputs: [], outputs: [],
                  doc: "Permanently ends it: it stops being current and its object leaves the bus (later calls get org.freedesktop.DBus.Error.UnknownObject). Saved copies stay.")
            case .continue:
                M(name: "Continue", inputs: [continueOptionsArg], outputs: [A("app_id", "s", "the app that took it")],
                  doc: "Continues this live activity in another app, as Handoff does; it must be eligible for handoff (NotEligible). Callable by the owning app and by unconfined callers. Checks, in order: access, expiry, eligibility.")
            }
        }
    }

    /// The methods apps implement for the service to call.
    public enum Handler: InterfaceMember {
        case continueActivity, saveActivity, continuationStreamOpened, failedToContinue

        public static var interface: InterfaceDescription { handler }

        public var method: InterfaceDescription.Method {
            switch self {
            case .continueActivity:
                M(name: "ContinueActivity", inputs: [typeArg, A("activity", "a{sv}", "the activity's properties by kebab-case key: app-id (the publisher, when known), title and user-info always; any other property only when it differs from its default (an absent key means the default)"),
                                                     A("platform_data", "a{sv}", "continuation-token when the origin supports streams; activation-token and desktop-startup-id when given")],
                  outputs: [A("handled", "b", "false makes the continuation fail with ContinuationFailed")],
                  doc: "Continue an activity (application(_:continue:restorationHandler:)).")
            case .saveActivity:
                M(name: "SaveActivity", inputs: [A("activity", "o", "the owner's live activity whose NeedsSave is true")],
                  outputs: [A("properties", "a{sv}", "fresh properties, applied before the activity is read; NeedsSave then becomes false")],
                  doc: "Asked of the owner before an activity whose NeedsSave is true is read for saving (5 s) or continuation (the continuation's timeout-ms, counted apart from the delivery's, so a continuation may take twice timeout-ms) (userActivityWillSave). Without an answer in time the data are used as they are.")
            case .continuationStreamOpened:
                M(name: "ContinuationStreamOpened", inputs: [A("activity", "o", "the origin live activity"), A("stream", "h", "the origin's end of the socket pair")], outputs: [],
                  doc: "On the origin's handler when a continuing app opened a stream.")
            case .failedToContinue:
                M(name: "FailedToContinue", inputs: [typeArg, A("error_name", "s", "the full D-Bus error name"), A("message", "s", "what went wrong")], outputs: [],
                  doc: "A continuation meant for this app failed before the app answered (didFailToContinueUserActivityWithType).")
            }
        }
    }
}
