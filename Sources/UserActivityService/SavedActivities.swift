// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import Logging
import TypedValues
import UserActivityCore

/// The service's side of the saved-activity store: turns activities into
/// records and store hits into the spec's result dictionaries.
final class SavedActivities {
    let store: ActivityStore
    let privacy: PrivacyControls
    private let log: Logger

    init(stateDirectory: String?, configDirectory: String?, clock: @escaping @Sendable () -> Int64, log: Logger) throws {
        self.log = log
        if let stateDirectory {
            do {
                store = try ActivityStore(directory: stateDirectory)
            } catch {
                throw UserActivityError(.storageFailed, "cannot open the saved-activity store in \(stateDirectory): \(error)")
            }
        } else {
            store = try ActivityStore.inMemory()
        }
        privacy = PrivacyControls(directory: configDirectory, store: store, clock: clock, log: log)
    }

    /// The `a{sv}` a saved copy keeps: every property that differs from its
    /// default (saved copies are rebuilt onto the defaults, so this is
    /// lossless and keeps a 100k-entry store small), user-info trimmed to the
    /// required keys.
    static func savedProperties(_ properties: ActivityProperties) -> TypedValue {
        var trimmed = properties
        trimmed.userInfo = properties.savedUserInfo
        let fields = ActivityField.allCases.filter { $0.key != nil && $0 != .activityType && $0 != .appID }
        return .stringVariantDictionary(fields.compactMap { field in
            trimmed.hasDefaultValue(field) ? nil : (field.key!, trimmed.value(of: field))
        })
    }

    static func record(type: String, app: String, properties: ActivityProperties) -> SavedActivityRecord {
        SavedActivityRecord(
            appID: app, activityType: type, persistentIdentifier: properties.persistentIdentifier,
            title: properties.title, contentDescription: properties.contentDescription,
            keywords: properties.keywords, webpageURL: properties.webpageURL,
            eligibleForSearch: properties.eligibleForSearch, eligibleForPrediction: properties.eligibleForPrediction,
            expirationDate: properties.expirationDate,
            suggestedInvocationPhrase: properties.suggestedInvocationPhrase,
            properties: savedProperties(properties))
    }

    private func storage<T>(_ what: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as UserActivityError {
            throw error
        } catch {
            log.error("saved-activity store: \(what) failed: \(error)")
            throw UserActivityError(.storageFailed, "the saved-activity store could not \(what): \(error). Nothing was changed; free disk space or check $XDG_STATE_HOME/useractivity and try again")
        }
    }

    /// Writes a live activity's saved copy, unless paused or blocked.
    func save(_ activity: LiveActivity, countsAsUse: Bool, now: Int64) throws {
        guard privacy.settings.allowsSaving(app: activity.appID, type: activity.activityType) else { return }
        let record = Self.record(type: activity.activityType, app: activity.appID, properties: activity.properties)
        try storage("save the activity") {
            _ = try store.save(record, at: now, countsAsUse: countsAsUse)
            if record.expirationDate != 0 { expirationMayHaveChanged() }
            try privacy.enforceLimit(app: activity.appID)
        }
    }

    /// Saves a donation; the empty saved id when paused or blocked (nothing is saved).
    func donate(type: String, app: String, properties: ActivityProperties, now: Int64) throws -> String {
        guard privacy.settings.allowsSaving(app: app, type: type) else { return "" }
        return try storage("save the donation") {
            let savedID = try store.save(Self.record(type: type, app: app, properties: properties), at: now, countsAsUse: true)
            if properties.expirationDate != 0 { expirationMayHaveChanged() }
            try privacy.enforceLimit(app: app)
            return savedID
        }
    }

    func forget(app: String) throws -> Int { try storage("forget the app") { try store.deleteAll(appID: app) } }
    func forget(lastUsedFrom from: Int64, to: Int64) throws -> Int {
        try storage("forget the range") { try store.delete(lastUsedFrom: from, to: to) }
    }
    func forgetAll() throws -> Int { try storage("forget everything") { try store.deleteAll() } }

    /// The apps a query may see: the caller's own when confined, narrowed by the app-id option.
    private func scope(requested: String?, visibleApp: String?) -> (app: String?, empty: Bool) {
        guard let visibleApp else { return (requested, false) }
        if let requested, requested != visibleApp { return (nil, true) }
        return (visibleApp, false)
    }

    func search(query: String, options: SearchOptions, visibleApp: String?, now: Int64) throws -> [TypedValue] {
        let scope = scope(requested: options.appID, visibleApp: visibleApp)
        if scope.empty { return [] }
        let hits = try storage("search") {
            try store.search(query: query, limit: options.limit, appID: scope.app,
                             activityTypes: options.activityTypes, now: now)
        }
        return hits.map { Self.result($0.activity, score: $0.score) }
    }

    func suggestions(options: SuggestionOptions, visibleApp: String?, now: Int64) throws -> [TypedValue] {
        let scope = scope(requested: options.appID, visibleApp: visibleApp)
        if scope.empty { return [] }
        let hits = try storage("rank suggestions") {
            try store.suggestions(limit: options.limit, appID: scope.app, now: now)
        }
        return hits.map { hit in
            Self.result(hit.activity.summary, score: hit.score,
                        suggestion: (phrase: hit.activity.suggestedInvocationPhrase, useCount: hit.activity.useCount))
        }
    }

    static func result(_ entry: SavedActivitySummary, score: Double,
                       suggestion: (phrase: String, useCount: UInt32)? = nil) -> TypedValue {
        var pairs: [(String, TypedValue)] = [
            ("saved-id", .string(entry.savedID)),
            ("app-id", .string(entry.appID)),
            ("activity-type", .string(entry.activityType)),
            ("title", .string(entry.title)),
            ("content-description", .string(entry.contentDescription)),
            ("keywords", .stringArray(entry.keywords)),
            ("webpage-url", .string(entry.webpageURL)),
            ("score", .double(score)),
            ("last-used", .int64(entry.lastUsed)),
        ]
        if let suggestion {
            pairs.append(("suggested-invocation-phrase", .string(suggestion.phrase)))
            pairs.append(("use-count", .uint32(suggestion.useCount)))
        }
        return .stringVariantDictionary(pairs)
    }

    func delete(app: String, persistentIdentifiers: [String]) throws {
        try storage("delete") { _ = try store.delete(appID: app, persistentIdentifiers: persistentIdentifiers) }
    }

    func deleteAll(app: String) throws {
        try storage("delete") { _ = try store.deleteAll(appID: app) }
    }

    func purgeExpired(now: Int64) {
        do {
            expirationMayHaveChanged()
            let purged = try store.purgeExpired(now: now)
            if purged > 0 { log.info("purged expired saved activities", metadata: ["count": "\(purged)"]) }
        } catch {
            log.error("could not purge expired saved activities: \(error)")
        }
    }

    /// The store's earliest expiration date, cached: it is asked after every
    /// change on the bus, and only a write can make it earlier.
    func nextExpiration() -> Int64? {
        if let cached = cachedNextExpiration { return cached }
        let next = try? store.nextExpiration()
        cachedNextExpiration = .some(next)
        return next
    }

    private var cachedNextExpiration: Int64??

    /// A write may have added an earlier date; deletions can only leave a
    /// stale, earlier one, which just fires the purge timer early.
    private func expirationMayHaveChanged() { cachedNextExpiration = nil }
}
