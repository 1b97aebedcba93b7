// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// How the service reaches the app chosen to continue an activity.
public enum DeliveryRoute: Sendable, Equatable {
    /// The app has a registered `org.example.UserActivity.Handler`: call its
    /// `ContinueActivity`.
    case handler
    /// `DBusActivatable=true`: `org.freedesktop.Application.ActivateAction`
    /// with the action `continue-activity` on the app's bus name (D-Bus
    /// activation starts it).
    case dbusActivation
    /// Neither: launch the app from its desktop entry and deliver to the
    /// handler it registers, within the timeout.
    case launch(desktopFilePath: String)
}

/// Where a continuation goes.
public enum ContinuationTarget: Sendable, Equatable {
    /// An app that declares the type, and how to reach it.
    case app(id: String, route: DeliveryRoute)
    /// No app declares the type (for the publisher's team): the activity's
    /// `webpage-url` is opened with the user's default handler.
    case webpage(url: String)
    /// A system type (``SystemActivityType``): the app is launched from its
    /// desktop entry with the URI on its command line and no handler is
    /// waited for.
    case launchWithURI(id: String, desktopFilePath: String, uri: String)
    /// An open-document activity no app of the publisher's takes: the user's
    /// default handler for `mimeType` (for the URI itself when it is empty).
    case document(uri: String, mimeType: String)
}

/// Chooses the app that continues an activity: the spec's "Continuation"
/// rules as a pure function of the catalog and the registered handlers.
///
/// ## Candidates
/// The apps that declare the activity type. When the publisher (the app that
/// published the activity) is known, only apps of the publisher's team: its
/// `X-UserActivityTeam`, or, for a publisher that is not installed here (an
/// activity from another device), the team its app ID implies. So
/// `com.example.Editor.Lite` (team `com.example.Editor`) may declare
/// `com.example.Editor.view` and still does not receive `com.example.Editor`'s
/// activities (team `com.example`). With no publisher, every declaring app is
/// a candidate (each one's team prefixes the type, so no vendor can declare
/// another vendor's types).
///
/// ## Order
/// `target-app-id` picks one candidate (an app that is not one is an error,
/// never silently replaced). Otherwise the first of this order is chosen:
/// 1. the publisher itself, when it is a candidate (a Handoff back to the
///    same app, as on a Mac);
/// 2. candidates with a registered handler, by app ID;
/// 3. `DBusActivatable=true` candidates, by app ID;
/// 4. the other candidates, by app ID.
///
/// App IDs compare by their UTF-8 bytes, so the order does not depend on the
/// locale or on the order desktop entries were found in.
///
/// ## System types
/// ``SystemActivityType``s are declared by nobody and go by their URI: to
/// `target-app-id` when given (it must be able to take the URI), else to the
/// publisher when it is installed and can take it, else to the user's default
/// handler (the web browser for `browsing-web`, the MIME type's handler for
/// `open-document`). Registered handlers play no part: the app is launched
/// with the URI as if the user had opened it from a file manager or a link.
public enum ContinuationPlanner {
    /// The team continuations of `publisher`'s activities are restricted to.
    public static func team(ofPublisher publisher: String, catalog: AppCatalog) -> String {
        catalog.app(publisher)?.team ?? AppCatalog.implicitTeam(of: publisher)
    }

    /// Every candidate for `type`, in the documented order.
    ///
    /// - Parameters:
    ///   - type: The activity type.
    ///   - publisher: The app that published the activity, when known.
    ///   - catalog: The installed apps.
    ///   - hasHandler: Whether an app has a registered handler now.
    public static func candidates(type: String, publisher: String?, catalog: AppCatalog,
                                  hasHandler: (String) -> Bool) -> [InstalledApp] {
        var apps = catalog.apps(declaring: type)
        if let publisher {
            let team = team(ofPublisher: publisher, catalog: catalog)
            apps.removeAll { $0.team != team }
        }
        guard apps.count > 1 else { return apps }
        func rank(_ app: InstalledApp) -> Int {
            if app.id == publisher { return 0 }
            if hasHandler(app.id) { return 1 }
            if app.dbusActivatable { return 2 }
            return 3
        }
        return apps
            .map { (rank: rank($0), app: $0) }
            .sorted { $0.rank != $1.rank ? $0.rank < $1.rank : $0.app.id.utf8.lexicographicallyPrecedes($1.app.id.utf8) }
            .map(\.app)
    }

    /// How `app` is reached: its handler when it has one, else D-Bus activation
    /// when its entry says `DBusActivatable=true`, else a launch.
    public static func route(for app: InstalledApp, hasHandler: (String) -> Bool) -> DeliveryRoute {
        if hasHandler(app.id) { return .handler }
        if app.dbusActivatable { return .dbusActivation }
        return .launch(desktopFilePath: app.desktopFilePath)
    }

    /// Chooses where a continuation goes.
    ///
    /// - Parameters:
    ///   - type: The activity type (validated here: `InvalidArgument`).
    ///   - publisher: The app that published the activity, when known.
    ///   - webpageURL: The activity's `webpage-url` (empty when unset).
    ///   - targetAppID: The `target-app-id` option.
    ///   - catalog: The installed apps.
    ///   - hasHandler: Whether an app has a registered handler now.
    /// - Throws: `InvalidArgument` for a malformed type; `UnknownApplication`
    ///   for a target that is not installed; `NoHandler` for a target that is
    ///   not a candidate, or when there is no candidate and no webpage URL.
    public static func plan(type: String, publisher: String?, webpageURL: String, targetAppID: String?,
                            catalog: AppCatalog, hasHandler: (String) -> Bool) throws(UserActivityError) -> ContinuationTarget {
        try ReverseDNSName.validate(type, as: "activity type")
        let candidates = candidates(type: type, publisher: publisher, catalog: catalog, hasHandler: hasHandler)
        if let targetAppID {
            guard let target = catalog.app(targetAppID) else {
                throw .unknownApplication("target-app-id '\(targetAppID)' is not an installed app: install \(targetAppID).desktop or leave target-app-id out")
            }
            guard candidates.contains(where: { $0.id == targetAppID }) else {
                if !target.declares(type) {
                    throw UserActivityError(.noHandler, "the target app \(targetAppID) cannot continue \(type): it does not declare that type in X-UserActivityTypes")
                }
                let team = publisher.map { self.team(ofPublisher: $0, catalog: catalog) } ?? "?"
                throw UserActivityError(.noHandler, "the target app \(targetAppID) (team \(target.team)) may not receive activities published by \(publisher ?? "?") (team \(team)): a continuation goes only to apps of the publisher's team")
            }
            return .app(id: target.id, route: route(for: target, hasHandler: hasHandler))
        }
        if let first = candidates.first {
            return .app(id: first.id, route: route(for: first, hasHandler: hasHandler))
        }
        if !webpageURL.isEmpty { return .webpage(url: webpageURL) }
        let whose = publisher.map { " of the publisher \($0)'s team (\(team(ofPublisher: $0, catalog: catalog)))" } ?? ""
        throw UserActivityError(.noHandler, "no installed app\(whose) declares the activity type \(type) in X-UserActivityTypes, and the activity has no webpage-url to open instead")
    }

    /// Chooses where a continuation goes, for app-defined and system types alike.
    ///
    /// - Parameters:
    ///   - properties: The activity's data (a system type's URI is in them).
    ///   - fileExists: Whether a local path exists (for `file://` documents).
    /// - Throws: as ``plan(type:publisher:webpageURL:targetAppID:catalog:hasHandler:)``;
    ///   for a system type also `InvalidArgument` (what it needs is missing)
    ///   and `NotFound` (a `file://` document that does not exist here).
    public static func plan(type: String, publisher: String?, properties: ActivityProperties, targetAppID: String?,
                            catalog: AppCatalog, hasHandler: (String) -> Bool,
                            fileExists: (String) -> Bool) throws(UserActivityError) -> ContinuationTarget {
        guard SystemActivityType.isSystem(type) else {
            return try plan(type: type, publisher: publisher, webpageURL: properties.webpageURL, targetAppID: targetAppID,
                            catalog: catalog, hasHandler: hasHandler)
        }
        try SystemActivityType.validate(type: type, properties: properties)
        let uri: String
        let canTake: (InstalledApp) -> Bool
        let what: String
        var fallback: ContinuationTarget
        if type == SystemActivityType.browsingWeb {
            uri = properties.webpageURL
            let scheme = uri.prefix { $0 != ":" }.lowercased()
            canTake = { $0.handlesScheme(scheme) && $0.execTakesURIs }
            what = "its desktop entry does not handle x-scheme-handler/\(scheme) with a %u or %U in Exec"
            fallback = .webpage(url: uri)
        } else {
            let document = try SystemActivityType.document(in: properties)
            uri = document.uri
            if uri.prefix(5).lowercased() == "file:" {
                guard let path = document.localPath else {
                    throw .notFound("the document \(uri.prefix(300)) is not a file on this computer (a file: URI must be file:///absolute/path)")
                }
                guard fileExists(path) else {
                    throw .notFound("the document \(path) does not exist on this computer (moved, deleted, or on another device)")
                }
            }
            canTake = { $0.execTakesURIs }
            what = "its desktop entry's Exec takes no %u, %U, %f or %F"
            fallback = .document(uri: uri, mimeType: document.mimeType)
        }
        if let targetAppID {
            guard let target = catalog.app(targetAppID) else {
                throw .unknownApplication("target-app-id '\(targetAppID)' is not an installed app: install \(targetAppID).desktop or leave target-app-id out")
            }
            guard canTake(target) else {
                throw UserActivityError(.noHandler, "the target app \(targetAppID) cannot continue \(type): \(what)")
            }
            fallback = .launchWithURI(id: target.id, desktopFilePath: target.desktopFilePath, uri: uri)
        } else if let publisher, let app = catalog.app(publisher), canTake(app) {
            fallback = .launchWithURI(id: app.id, desktopFilePath: app.desktopFilePath, uri: uri)
        }
        return fallback
    }

    /// Whether a caller may see and continue a saved activity of `app`:
    /// unconfined callers (`visibleApp == nil`) all, confined ones only their own app's.
    public static func mayContinueSaved(of app: String, visibleApp: String?) -> Bool {
        visibleApp == nil || visibleApp == app
    }
}
