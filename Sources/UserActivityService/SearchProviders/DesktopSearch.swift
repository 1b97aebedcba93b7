// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import ActivityStore
import DBusKit
import GLibSupport
import TypedValues
import UserActivityCore

/// What both desktop search objects share: exporting them, searching with the
/// caller's visibility, describing an entry, and continuing one.
extension UserActivityService {
    /// Exports the GNOME Shell search provider and the KRunner runner (see
    /// ``DesktopSearchInterfaces``). Called once from ``export()``.
    func exportDesktopSearch() {
        exportObject(path: DesktopSearchInterfaces.searchProviderPath, handler: Self.searchProviderHandler)
        exportObject(path: DesktopSearchInterfaces.krunnerPath, handler: Self.krunnerHandler)
    }

    /// GNOME Shell's search provider methods, each with its handler.
    private static func searchProviderHandler(_ method: DesktopSearchInterfaces.GnomeSearchProvider) -> Handler {
        switch method {
        case .getInitialResultSet: { $0.searchProviderInitialResultSet($1) }
        case .getSubsearchResultSet: { $0.searchProviderSubsearchResultSet($1) }
        case .getResultMetas: { $0.searchProviderResultMetas($1) }
        case .activateResult: { $0.searchProviderActivateResult($1) }
        case .launchSearch: { $0.searchProviderLaunchSearch($1) }
        }
    }

    /// KRunner's runner methods, each with its handler.
    private static func krunnerHandler(_ method: DesktopSearchInterfaces.KRunner) -> Handler {
        switch method {
        case .match: { $0.krunnerMatch($1) }
        case .actions: { $0.krunnerActions($1) }
        case .run: { $0.krunnerRun($1) }
        case .setActivationToken: { $0.krunnerSetActivationToken($1) }
        case .config: { $0.krunnerConfig($1) }
        case .teardown: { $0.krunnerTeardown($1) }
        }
    }

    /// How many results a shell gets: both show only a handful, and a short
    /// list keeps every keystroke's round trip cheap.
    static let desktopSearchLimit = 20

    /// Search for a shell, with the manager's visibility rule: a sandboxed
    /// caller sees only its own app's entries (`visibleApp`), the shell all.
    func desktopSearch(_ query: String, visibleApp: String?, limit: Int = desktopSearchLimit) throws -> [SearchHit] {
        try saved.searchHits(query: query, limit: limit, appID: visibleApp, now: scheduler.now)
    }

    /// The saved entry `savedID` when it exists and the caller may see it.
    ///
    /// An entry of another app is reported as missing to a sandboxed caller,
    /// as the manager's ContinueSavedActivity does, so it learns nothing.
    func desktopSearchEntry(_ savedID: String, visibleApp: String?) throws -> SavedActivitySummary? {
        let entry = try saved.load(savedID: savedID, now: scheduler.now)
        guard let entry, visibleApp == nil || entry.appID == visibleApp else { return nil }
        return entry.summary
    }

    /// The icon name a shell shows for an entry: its app's `Icon=`, else a generic one.
    func desktopSearchIcon(for entry: SavedActivitySummary) -> String {
        if let icon = catalog.app(entry.appID)?.icon, !icon.isEmpty { return icon }
        return DesktopSearchInterfaces.fallbackIcon
    }

    /// The one-line title a shell shows; an untitled entry still needs a label.
    func desktopSearchName(for entry: SavedActivitySummary) -> String {
        if !entry.title.isEmpty { return entry.title }
        return catalog.app(entry.appID)?.name ?? entry.activityType
    }

    /// The second line: the content description, else the app's name (so the
    /// user knows where the result would open).
    func desktopSearchDescription(for entry: SavedActivitySummary) -> String {
        if !entry.contentDescription.isEmpty { return entry.contentDescription }
        return catalog.app(entry.appID)?.name ?? entry.appID
    }

    /// Continues a saved activity for a shell by calling our own
    /// `ContinueSavedActivity` through the bus, asynchronously.
    ///
    /// Going through the bus (to our own unique name, so that no auto-start
    /// or name owner is involved) keeps a single code path for every
    /// continuation: the manager's handler does the lookup, target choice,
    /// delivery, errors and logging exactly as for any other client. The
    /// loop is never blocked; `completion` runs on it with the app that took
    /// the activity or the D-Bus error.
    ///
    /// The forwarded call counts against `caller` (the shell or app that
    /// asked) in the continuation limits, not against our own connection,
    /// which every desktop search continuation shares.
    func continueSavedForDesktop(_ savedID: String, timestamp: UInt32, for caller: AccountedCaller,
                                 activationToken: String? = nil,
                                 completion: @escaping (Result<String, DBusFailure>) -> Void) {
        let call = Message.methodCall(destination: bus.uniqueName, path: Interfaces.managerPath,
                                      interface: Interfaces.managerName, member: "ContinueSavedActivity")
        var options: [(String, TypedValue)] = []
        // X11 startup-notification IDs carry the user's interaction time as
        // a _TIME suffix; it lets the window manager give the continuing
        // app's window focus despite focus-stealing prevention.
        if timestamp != 0 { options.append(("desktop-startup-id", .string("_TIME\(timestamp)"))) }
        if let activationToken, !activationToken.isEmpty { options.append(("activation-token", .string(activationToken))) }
        do {
            try call.append([.string(savedID), .stringVariantDictionary(options)])
        } catch {
            completion(.failure(error))
            return
        }
        // Longer than the continuation's own default timeout (10 s) plus its
        // slack, so the manager's own error (RemoteApplicationTimedOut) wins.
        var serial: UInt32 = 0
        bus.callAsync(call, timeoutMilliseconds: 25_000) { [weak self] result in
            if serial != 0 { self?.context.desktopContinuationCallers[serial] = nil }
            switch result {
            case .success(let reply):
                let app = (try? reply.arguments())?.first?.stringValue ?? ""
                self?.log.debug("desktop search: continued a saved activity", metadata: ["saved-id": "\(savedID)", "app": "\(app)"])
                completion(.success(app))
            case .failure(let failure):
                self?.log.warning("desktop search: could not continue a saved activity: \(failure.name): \(failure.message)",
                                  metadata: ["saved-id": "\(savedID)"])
                completion(.failure(failure))
            }
        }
        // libdbus numbered the call when it queued it; we read it back before the loop does.
        serial = call.serial
        if serial != 0 { context.desktopContinuationCallers[serial] = caller }
    }
}

/// Text comparison for "the title is exactly what was typed", with the same
/// leniency as Search itself (case and accents do not count).
enum DesktopSearchText {
    static func folded(_ text: String) -> String {
        foldedForComparison(text)
    }

    static func isExactMatch(title: String, query: String) -> Bool {
        let query = folded(query)
        return !query.isEmpty && folded(title) == query
    }
}
