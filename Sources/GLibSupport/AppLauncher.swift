// SPDX-License-Identifier: Apache-2.0
import CGLib

/// Why GIO could not start an app or open a URI.
public struct AppLaunchFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// GIO's own message (`Failed to execute child process “…” (No such file or directory)`).
    public var message: String

    /// A failure with GIO's (or our own) words.
    public init(message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// What an app is started with besides its command line: the startup
/// notification / activation token and any further variables.
public struct LaunchEnvironment: Sendable, Equatable {
    /// An xdg-activation token (Wayland); exported as `XDG_ACTIVATION_TOKEN`.
    public var activationToken: String?
    /// An X11 startup-notification ID; exported as `DESKTOP_STARTUP_ID`.
    public var desktopStartupID: String?
    /// More variables for the launched process (they win over the two above).
    public var extraVariables: [String: String]

    /// The environment for one launch; empty values are left out.
    public init(activationToken: String? = nil, desktopStartupID: String? = nil, extraVariables: [String: String] = [:]) {
        self.activationToken = activationToken
        self.desktopStartupID = desktopStartupID
        self.extraVariables = extraVariables
    }

    /// The variables set on the launch context, sorted by name.
    var variables: [(String, String)] {
        var result: [String: String] = [:]
        if let activationToken, !activationToken.isEmpty { result["XDG_ACTIVATION_TOKEN"] = activationToken }
        if let desktopStartupID, !desktopStartupID.isEmpty { result["DESKTOP_STARTUP_ID"] = desktopStartupID }
        result.merge(extraVariables) { _, new in new }
        return result.sorted { $0.key < $1.key }
    }
}

/// Starts desktop applications the way the desktop itself does, through
/// GIO's `GDesktopAppInfo`: `Exec` field codes, `Path`, `Terminal`, quoting
/// and the launch environment are GIO's business, so an app behaves as if
/// the user had clicked it.
///
/// Launching forks and execs without waiting for the app: the caller's main
/// loop is never held up by the app itself. (GIO reads desktop entries and
/// `mimeapps.list` from local disk and announces the launch on the session
/// bus; neither waits for an app.)
///
/// ```swift
/// try AppLauncher.launch(desktopFile: "/usr/share/applications/org.gnome.TextEditor.desktop",
///                        environment: LaunchEnvironment(activationToken: token))
/// let browser = try AppLauncher.open(uri: "https://example.com/doc/42")  // "firefox-esr"
/// ```
///
/// Call these on the thread that runs the service's loop; GIO's desktop-entry
/// caches are process-wide and internally locked.
public enum AppLauncher {
    /// Launches the app of a desktop entry, optionally with URIs for its
    /// `%u`/`%U`/`%f`/`%F` field codes.
    ///
    /// - Parameters:
    ///   - path: The desktop entry's file.
    ///   - uris: Passed to the app's `Exec` line.
    ///   - environment: Startup notification and further variables.
    /// - Throws: ``AppLaunchFailure`` when the entry cannot be loaded or the
    ///   process cannot be started.
    public static func launch(desktopFile path: String, uris: [String] = [],
                              environment: LaunchEnvironment = LaunchEnvironment()) throws(AppLaunchFailure) {
        guard let info = g_desktop_app_info_new_from_filename(path) else {
            throw AppLaunchFailure(message: "\(path) is not a launchable desktop entry (missing, hidden, or its TryExec/Exec program is not installed)")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(info)) }
        try launch(appInfo: info, uris: uris, environment: environment, what: path)
    }

    /// Opens `uri` with the user's default handler for its scheme.
    ///
    /// - Returns: The handler's app ID (desktop-file ID without `.desktop`),
    ///   or the empty string when GIO opened the URI some other way and the
    ///   app is unknown.
    /// - Throws: ``AppLaunchFailure`` when no app handles the scheme or the
    ///   handler cannot be started.
    @discardableResult
    public static func open(uri: String, environment: LaunchEnvironment = LaunchEnvironment()) throws(AppLaunchFailure) -> String {
        let scheme = uri.prefix { $0 != ":" }.lowercased()
        if let info = g_app_info_get_default_for_uri_scheme(scheme) {
            defer { g_object_unref(UnsafeMutableRawPointer(info)) }
            try launch(appInfo: info, uris: [uri], environment: environment, what: "the default \(scheme): handler")
            return appID(of: info) ?? ""
        }
        // No desktop entry claims the scheme; GIO may still know a way (a
        // portal inside a sandbox). Then the app is not known to us.
        holdSessionBus()
        let context = makeContext(environment)
        defer { g_object_unref(UnsafeMutableRawPointer(context)) }
        var error: UnsafeMutablePointer<GError>?
        guard DescriptorLimit.withOriginalLimit({ g_app_info_launch_default_for_uri(uri, context, &error) }) != 0 else {
            throw failure(error, fallback: "no application is set to open \(scheme): URIs (x-scheme-handler/\(scheme) in mimeapps.list)")
        }
        return ""
    }

    /// Opens a document with the user's default handler for its MIME type
    /// (`g_app_info_get_default_for_type`, as `mimeapps.list` decides).
    ///
    /// With an empty `mimeType` (or one nobody handles) the URI is opened as
    /// ``open(uri:environment:)`` opens it, which for a local file asks GIO
    /// for the file's content type.
    ///
    /// - Returns: The handler's app ID, or the empty string when unknown.
    /// - Throws: ``AppLaunchFailure`` when no app handles the document or
    ///   the handler cannot be started.
    @discardableResult
    public static func open(document uri: String, mimeType: String,
                            environment: LaunchEnvironment = LaunchEnvironment()) throws(AppLaunchFailure) -> String {
        if !mimeType.isEmpty, let info = g_app_info_get_default_for_type(mimeType, CGLIB_FALSE) {
            defer { g_object_unref(UnsafeMutableRawPointer(info)) }
            try launch(appInfo: info, uris: [uri], environment: environment, what: "the default handler of \(mimeType)")
            return appID(of: info) ?? ""
        }
        if uri.prefix(5).lowercased() == "file:" {
            // No scheme handler claims file:; GIO guesses the type from the file.
            let file = g_file_new_for_uri(uri)!
            defer { g_object_unref(UnsafeMutableRawPointer(file)) }
            var error: UnsafeMutablePointer<GError>?
            guard let info = g_file_query_default_handler(file, nil, &error) else {
                throw failure(error, fallback: "no application is set to open \(uri)\(mimeType.isEmpty ? "" : " (\(mimeType))")")
            }
            defer { g_object_unref(UnsafeMutableRawPointer(info)) }
            try launch(appInfo: info, uris: [uri], environment: environment, what: "the default handler of \(uri)")
            return appID(of: info) ?? ""
        }
        return try open(uri: uri, environment: environment)
    }

    // MARK: Internals

    /// GIO announces every launch on the session bus through its shared
    /// GDBus connection, opening it (a blocking `Hello`) when nobody holds
    /// it and, by default, raising SIGTERM in this process when that bus
    /// closes. Holding the connection once keeps launches from reconnecting
    /// each time, and the exit decision stays with the service.
    /// Only touched from the thread that launches (the service's loop).
    nonisolated(unsafe) private static var sessionBus: OpaquePointer?
    nonisolated(unsafe) private static var triedSessionBus = false

    private static func holdSessionBus() {
        guard !triedSessionBus else { return }
        triedSessionBus = true
        var error: UnsafeMutablePointer<GError>?
        guard let bus = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error) else {
            // No session bus: GIO launches without announcing.
            g_clear_error(&error)
            return
        }
        g_dbus_connection_set_exit_on_close(bus, CGLIB_FALSE)
        sessionBus = bus
    }

    private static func launch(appInfo info: OpaquePointer, uris: [String], environment: LaunchEnvironment,
                               what: String) throws(AppLaunchFailure) {
        holdSessionBus()
        let context = makeContext(environment)
        defer { g_object_unref(UnsafeMutableRawPointer(context)) }
        var list: UnsafeMutablePointer<GList>?
        for uri in uris { list = g_list_append(list, UnsafeMutableRawPointer(g_strdup(uri))) }
        defer {
            var node = list
            while let current = node {
                g_free(current.pointee.data)
                node = current.pointee.next
            }
            g_list_free(list)
        }
        var error: UnsafeMutablePointer<GError>?
        guard DescriptorLimit.withOriginalLimit({ g_app_info_launch_uris(info, list, context, &error) }) != 0 else {
            throw failure(error, fallback: "GIO could not launch \(what)")
        }
    }

    private static func makeContext(_ environment: LaunchEnvironment) -> UnsafeMutablePointer<GAppLaunchContext> {
        let context = g_app_launch_context_new()!
        for (name, value) in environment.variables {
            g_app_launch_context_setenv(context, name, value)
        }
        return context
    }

    /// `firefox-esr.desktop` → `firefox-esr`.
    private static func appID(of info: OpaquePointer) -> String? {
        guard let raw = g_app_info_get_id(info) else { return nil }
        let id = String(cString: raw)
        return id.hasSuffix(".desktop") ? String(id.dropLast(".desktop".count)) : id
    }

    private static func failure(_ error: UnsafeMutablePointer<GError>?, fallback: String) -> AppLaunchFailure {
        defer { if let error { g_error_free(error) } }
        guard let error, let message = error.pointee.message else { return AppLaunchFailure(message: fallback) }
        return AppLaunchFailure(message: String(cString: message))
    }
}
