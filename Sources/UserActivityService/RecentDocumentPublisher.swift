// SPDX-License-Identifier: Apache-2.0
import GLibSupport
import TypedValues
import UserActivityCore

/// The recent-files bridge's current activity: the document an app has just
/// recorded in `recently-used.xbel` becomes the session's current activity
/// on that app's behalf, so that apps which know nothing of this service
/// still hand their documents off.
///
/// The activity is a live `open-document` activity of the recording app,
/// held by the service's own connection, eligible for handoff only (the
/// bridge already saves the entry for search and suggestions). Like any
/// app's it is replaced by the next `BecomeCurrent`; it ends
/// ``lifetimeMicroseconds`` after the use unless a newer use comes, and when
/// a privacy control no longer allows it.
final class RecentDocumentPublisher {
    let context: ServiceContext
    /// A use recorded longer ago than this when the file is read is history, not "just opened".
    static let freshnessMicroseconds: Int64 = 120_000_000
    static let lifetimeMicroseconds: Int64 = 30 * 60_000_000
    /// An app's own `BecomeCurrent` this close to the recorded use is the app
    /// speaking for the document itself.
    static let ownPublicationWindowMicroseconds: Int64 = 60_000_000

    /// The activity shown, the document it shows, and its end.
    private var shown: (id: String, document: RecentDocument)?
    private var end: ScheduledWork?

    init(context: ServiceContext) {
        self.context = context
    }

    deinit { end?.cancel() }

    private var ownConnection: String { context.bus.uniqueName }

    /// The live activity the bridge shows, if any (tests, logs).
    var shownActivityID: String? { shown?.id }

    /// Whether the settings let `document` be made current now: the setting,
    /// not paused, its app and the type not blocked (`bridgeIsOn` is the
    /// `Bridges` setting and GNOME's `remember-recent-files`).
    static func allows(_ document: RecentDocument, settings: PrivacySettings, bridgeIsOn: Bool) -> Bool {
        bridgeIsOn && settings.recentDocumentsBecomeCurrent
            && settings.allowsSaving(app: document.appID, type: SystemActivityType.openDocument)
    }

    /// Documents whose use is new in the file just read: the most recently
    /// recorded one, when recorded within ``freshnessMicroseconds`` of `now`, becomes current.
    func offer(_ documents: [RecentDocument], now: Int64, bridgeIsOn: Bool) {
        guard let newest = documents.max(by: { $0.recordedAt < $1.recordedAt }),
              newest.recordedAt >= now - Self.freshnessMicroseconds else { return }
        let settings = context.saved.privacy.settings
        guard Self.allows(newest, settings: settings, bridgeIsOn: bridgeIsOn) else {
            context.log.debug("recent files: a new use not made current (RecentDocumentsBecomeCurrent, Paused or a block)",
                              metadata: ["app": "\(newest.appID)"])
            return
        }
        guard !appSpeaksFor(newest) else {
            context.log.debug("recent files: the app published the document itself", metadata: ["app": "\(newest.appID)"])
            return
        }
        publish(newest, now: now)
    }

    /// Whether the recording app publishes its own activities for this
    /// document: its own activity is current, or one of its activities that
    /// names the document (`user-info` `uri` or the persistent identifier)
    /// became current within ``ownPublicationWindowMicroseconds`` of the use.
    private func appSpeaksFor(_ document: RecentDocument) -> Bool {
        let registry = context.registry
        let own = ownConnection
        if let current = registry.current, current.appID == document.appID, current.connection != own { return true }
        for activity in registry.activities.values where activity.appID == document.appID && activity.connection != own {
            guard activity.becameCurrentAt != 0,
                  abs(activity.becameCurrentAt - document.recordedAt) <= Self.ownPublicationWindowMicroseconds else { continue }
            if activity.properties.persistentIdentifier == document.uri
                || activity.properties.userInfoValue(SystemActivityType.uriKey)?.unwrappedVariant.stringValue == document.uri {
                return true
            }
        }
        return false
    }

    private func publish(_ document: RecentDocument, now: Int64) {
        let registry = context.registry
        if let shown, shown.document.uri == document.uri, shown.document.appID == document.appID,
           registry.currentID == shown.id {
            // A newer use of the document already shown: it lives on.
            self.shown = (shown.id, document)
            armEnd(document, now: now)
            return
        }
        withdraw()
        let properties = RecentFiles.properties(of: document, limits: registry.limits)
        let entries: [(String, TypedValue)] = [
            (.title, .string(properties.title)),
            (.contentDescription, .string(properties.contentDescription)),
            (.userInfo, .stringVariantDictionary(properties.userInfo.map { ($0.key, $0.value) })),
            (.persistentIdentifier, .string(document.uri)),
            (.eligibleForHandoff, .boolean(true)),
        ].map { (field: ActivityField, value: TypedValue) in (field.key ?? "", value) }
        do {
            let patch = try ActivityPatch.parse(entries, allowsAppIDClaim: false)
            let (activity, added) = try registry.create(type: SystemActivityType.openDocument, properties: patch, app: document.appID,
                                                        connection: ownConnection, now: now)
            shown = (activity.id, document)
            context.afterReply(Changes(added + (try registry.becomeCurrent(activity.id, now: now))))
            armEnd(document, now: now)
            context.log.debug("recent files: a document just opened is current", metadata: ["app": "\(document.appID)", "activity": "\(activity.id)"])
        } catch {
            // A URI the registry refuses (its limits), or the session's limit of live activities.
            context.log.warning("recent files: the document just opened by \(document.appID) could not be made current: \(error)")
            withdraw()
        }
    }

    /// Ends ``lifetimeMicroseconds`` after the use (a use stamped in the future counts as now).
    private func armEnd(_ document: RecentDocument, now: Int64) {
        end?.cancel()
        let remaining = min(document.recordedAt, now) + Self.lifetimeMicroseconds - now
        end = context.scheduler.after(milliseconds: UInt32(max(0, remaining / 1000))) { [unowned self] in
            end = nil
            withdraw()
        }
    }

    /// Ends the shown activity (it leaves the bus; current no longer).
    func withdraw() {
        end?.cancel()
        end = nil
        guard let shown else { return }
        self.shown = nil
        guard let activity = context.registry.activity(shown.id), activity.connection == ownConnection,
              let events = try? context.registry.invalidate(shown.id) else { return }
        context.afterReply(Changes(events))
    }

    /// The privacy settings changed: a document they no longer allow stops being current.
    func settingsChanged(bridgeIsOn: Bool) {
        guard let shown, !Self.allows(shown.document, settings: context.saved.privacy.settings, bridgeIsOn: bridgeIsOn) else { return }
        withdraw()
    }

    /// A forget or delete call covering the shown document ends it.
    func forgotten(where covered: (RecentDocument) -> Bool) {
        guard let shown, covered(shown.document) else { return }
        withdraw()
    }
}
