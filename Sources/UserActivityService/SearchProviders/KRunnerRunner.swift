// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import GLibSupport
import TypedValues
import UserActivityCore

/// `org.kde.krunner1` handlers (see ``DesktopSearchInterfaces/krunner``).
extension UserActivityService {
    /// KRunner's match type for a result whose title is what was typed
    /// (KF5 `QueryMatch::ExactMatch`, KF6 `CategoryRelevance::Highest`).
    static let krunnerExactType: Int32 = 100
    /// For every other result (KF5 `HelperMatch`, KF6 `CategoryRelevance::High`):
    /// every word matched, so it ranks above the "possible" (30) results of
    /// file and web searches.
    static let krunnerMatchType: Int32 = 70

    func krunnerMatch(_ invocation: Invocation) {
        let query = invocation.string(0)
        withCaller(invocation) { [unowned self] identity in
            let hits = try desktopSearch(query, visibleApp: identity.visibleApp())
            // Relevance relative to the best result: Search scores have no
            // fixed scale, KRunner's relevance is 0..1.
            let best = hits.map(\.score).max() ?? 0
            let matches: [TypedValue] = hits.map { hit in
                let entry = hit.activity
                let exact = DesktopSearchText.isExactMatch(title: entry.title, query: query)
                var relevance = exact ? 1 : (best > 0 && hit.score.isFinite ? hit.score / best : 0)
                relevance = min(1, max(0, relevance))
                var properties: [(String, TypedValue)] = [
                    ("subtext", .string(desktopSearchDescription(for: entry))),
                    ("category", .string("Activities")),
                    // An explicit list: without it KRunner shows every action on every match.
                    ("actions", .stringArray(entry.webpageURL.isEmpty ? [] : [DesktopSearchInterfaces.openInBrowserAction])),
                ]
                if !entry.webpageURL.isEmpty { properties.append(("urls", .stringArray([entry.webpageURL]))) }
                return .structure([
                    .string(entry.savedID), .string(desktopSearchName(for: entry)), .string(desktopSearchIcon(for: entry)),
                    .int32(exact ? Self.krunnerExactType : Self.krunnerMatchType), .double(relevance),
                    .stringVariantDictionary(properties),
                ])
            }
            try finish(invocation, Changes(), reply: [.array(elementType: "(sssida{sv})", matches)])
        }
    }

    func krunnerActions(_ invocation: Invocation) {
        invocation.reply([.array(elementType: "(sss)", [
            .structure([.string(DesktopSearchInterfaces.openInBrowserAction), .string("Open in Browser"),
                        .string("internet-web-browser")]),
        ])])
    }

    func krunnerRun(_ invocation: Invocation) {
        let id = invocation.string(0)
        let action = invocation.string(1)
        withCaller(invocation) { [unowned self] identity in
            guard let entry = try desktopSearchEntry(id, visibleApp: identity.visibleApp()) else {
                throw UserActivityError.notFound("no saved activity '\(id.prefix(64))': it was deleted or expired, or it is not visible to this caller")
            }
            switch action {
            case "":
                let token = krunnerActivationTokens.removeValue(forKey: invocation.sender)
                // Answered when the continuation ends, from its completion.
                continueSavedForDesktop(id, timestamp: 0, for: AccountedCaller(connection: invocation.sender, confinedApp: identity.isConfined ? identity.process.appID ?? "" : nil), activationToken: token) { result in
                    switch result {
                    case .success: invocation.reply()
                    case .failure(let failure): invocation.fail(name: failure.name, message: failure.message)
                    }
                }
            case DesktopSearchInterfaces.openInBrowserAction:
                guard !entry.webpageURL.isEmpty else {
                    throw UserActivityError.invalidArgument("the saved activity '\(id.prefix(64))' has no webpage-url to open")
                }
                let key = identity.isConfined ? "app " + (identity.process.appID ?? "") : "connection " + invocation.sender
                if let refusal = takeLaunch(key, what: "open the webpage-url in a browser") { throw refusal }
                do {
                    let browser = try AppLauncher.open(uri: entry.webpageURL)
                    log.debug("KRunner: opened a saved activity's webpage-url", metadata: ["saved-id": "\(id)", "app": "\(browser)"])
                } catch {
                    throw UserActivityError(.noHandler, "the webpage-url could not be opened: \(error)")
                }
                try finish(invocation, Changes())
            default:
                throw UserActivityError.invalidArgument("unknown action '\(action.prefix(64))'; Actions() lists \(DesktopSearchInterfaces.openInBrowserAction), and the empty action continues the activity")
            }
        }
    }

    /// Kept per connection until its next Run (KRunner sends it right before).
    func krunnerSetActivationToken(_ invocation: Invocation) {
        let token = invocation.string(0)
        // Bounded: one token per connection, at most 4 KiB.
        guard token.utf8.count <= 4096 else {
            invocation.fail(UserActivityError.invalidArgument("an activation token of \(token.utf8.count) bytes is too long (at most 4096)"))
            return
        }
        krunnerActivationTokens[invocation.sender] = token.isEmpty ? nil : token
        invocation.reply()
    }

    func krunnerConfig(_ invocation: Invocation) {
        invocation.reply([.stringVariantDictionary([("MinLetterCount", .int32(2))])])
    }

    func krunnerTeardown(_ invocation: Invocation) {
        invocation.reply()
    }
}
