// SPDX-License-Identifier: Apache-2.0
import GLibSupport
import TypedValues
import UserActivityCore

/// `org.gnome.Shell.SearchProvider2` handlers (see ``DesktopSearchInterfaces/gnomeSearchProvider``).
extension UserActivityService {
    /// The app ID of the desktop entry that `LaunchSearch` starts and that the `.ini` names.
    static let searchProviderAppID = "org.example.UserActivity"
    /// The URI scheme that carries the search terms to `useractivityctl browse`.
    static let searchURIScheme = "useractivity-search"

    /// The app whose entries a provider object returns: the caller's own when
    /// sandboxed, narrowed by a per-app object's path to that app (`""`,
    /// which no entry has, when the two disagree); nil: every app's.
    func providerScope(_ invocation: Invocation, _ identity: ConnectionIdentity) -> String? {
        let visible = identity.visibleApp()
        guard let path = invocation.message.path, let app = DesktopSearchInterfaces.perAppProviderApp(path: path) else { return visible }
        if let visible, visible != app { return "" }
        return app
    }

    func searchProviderInitialResultSet(_ invocation: Invocation) {
        let terms = invocation.arguments[0].stringArrayValue ?? []
        withCaller(invocation) { [unowned self] identity in
            let hits = try desktopSearch(terms.joined(separator: " "), visibleApp: providerScope(invocation, identity))
            try finish(invocation, Changes(), reply: [.stringArray(hits.map(\.activity.savedID))])
        }
    }

    func searchProviderSubsearchResultSet(_ invocation: Invocation) {
        let previous = Set(invocation.arguments[0].stringArrayValue ?? [])
        let terms = invocation.arguments[1].stringArrayValue ?? []
        withCaller(invocation) { [unowned self] identity in
            // Ranked afresh with the longer terms, then narrowed to what the
            // shell already has: a refinement never brings in new results.
            // The full limit keeps previous results that now rank lower.
            let hits = try desktopSearch(terms.joined(separator: " "), visibleApp: providerScope(invocation, identity),
                                         limit: SearchOptions.maximumLimit)
            try finish(invocation, Changes(), reply: [.stringArray(hits.map(\.activity.savedID).filter(previous.contains))])
        }
    }

    func searchProviderResultMetas(_ invocation: Invocation) {
        let ids = invocation.arguments[0].stringArrayValue ?? []
        withCaller(invocation) { [unowned self] identity in
            var metas: [TypedValue] = []
            for id in ids {
                guard let entry = try desktopSearchEntry(id, visibleApp: providerScope(invocation, identity)) else { continue }
                var pairs: [(String, TypedValue)] = [
                    ("id", .string(id)),
                    ("name", .string(desktopSearchName(for: entry))),
                    ("description", .string(desktopSearchDescription(for: entry))),
                    ("gicon", .string(desktopSearchIcon(for: entry))),
                ]
                // Ctrl-C on a result copies this; only a URL is worth copying.
                if !entry.webpageURL.isEmpty { pairs.append(("clipboardText", .string(entry.webpageURL))) }
                metas.append(.stringVariantDictionary(pairs))
            }
            try finish(invocation, Changes(), reply: [.array(elementType: "a{sv}", metas)])
        }
    }

    func searchProviderActivateResult(_ invocation: Invocation) {
        let id = invocation.string(0)
        let timestamp = invocation.arguments[2].uint32Value ?? 0
        withCaller(invocation) { [unowned self] identity in
            // The forwarded call is the service's own, which sees everything:
            // check the caller's visibility first.
            guard try desktopSearchEntry(id, visibleApp: providerScope(invocation, identity)) != nil else {
                throw UserActivityError.notFound("no saved activity '\(id.prefix(64))': it was deleted or expired, or it is not visible to this caller")
            }
            // Answered when the continuation ends, after this handler returned:
            // the reply (or the continuation's error) comes from its completion.
            continueSavedForDesktop(id, timestamp: timestamp, for: AccountedCaller(connection: invocation.sender, confinedApp: identity.isConfined ? identity.process.appID ?? "" : nil)) { result in
                switch result {
                case .success: invocation.reply()
                case .failure(let failure): invocation.fail(name: failure.name, message: failure.message)
                }
            }
        }
    }

    func searchProviderLaunchSearch(_ invocation: Invocation) {
        let terms = invocation.arguments[0].stringArrayValue ?? []
        let timestamp = invocation.arguments[1].uint32Value ?? 0
        withCaller(invocation) { [unowned self] identity in
            // Opening a terminal window is the shell's business, not a sandboxed app's.
            guard !identity.isConfined else {
                throw UserActivityError.accessDenied("LaunchSearch is for the desktop shell; a sandboxed app cannot open the activity search")
            }
            guard let app = catalog.app(Self.searchProviderAppID) else {
                log.warning("LaunchSearch: \(Self.searchProviderAppID).desktop is not installed; nothing to open")
                invocation.fail(name: "org.freedesktop.DBus.Error.Failed",
                                message: "\(Self.searchProviderAppID).desktop is not installed, so there is nothing to open the search in; install desktop/\(Self.searchProviderAppID).desktop into an applications directory")
                return
            }
            let uri = Self.searchURIScheme + ":" + Self.percentEncoded(terms.joined(separator: " "))
            var environment = LaunchEnvironment()
            if timestamp != 0 { environment.desktopStartupID = "_TIME\(timestamp)" }
            do {
                try AppLauncher.launch(desktopFile: app.desktopFilePath, uris: [uri], environment: environment)
            } catch {
                log.warning("LaunchSearch: could not launch \(app.desktopFilePath): \(error)")
                invocation.fail(name: "org.freedesktop.DBus.Error.Failed", message: "could not open the search: \(error)")
                return
            }
            log.debug("LaunchSearch: opened the search in \(app.id)", metadata: ["terms": "\(terms.count)"])
            try finish(invocation, Changes())
        }
    }

    /// RFC 3986 percent-encoding of everything but unreserved characters, so
    /// the terms survive GIO's `%u` expansion and the shell quoting it does.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80, c.isLetter || c.isNumber || "-._~".contains(c) {
                out.append(c)
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
