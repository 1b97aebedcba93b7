// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import GLibSupport
import Logging
import TypedValues
import UserActivityCore

/// The service's side of the saved-activity store: turns activities into
/// records and store hits into the spec's result dictionaries.
final class SavedActivities {
    /// Read and written only through this class, so that every access first
    /// writes the donations still waiting (see ``donate(type:app:properties:now:completion:)``).
    private let store: ActivityStore
    let privacy: PrivacyControls
    private let log: Logger

    /// Runs after saved activities were added, changed or removed, whichever
    /// path wrote them (donations, saves, forgets, deletes, expiry, the
    /// privacy settings, the bridges). The owner coalesces it into one hint.
    var onChange: () -> Void = {}

    /// Asks the main loop to run the given write once it has read every call
    /// waiting on the bus (an idle source); nil: donations are written at once.
    var scheduleWrite: ((@escaping () -> Void) -> Void)?
    /// Drops the write `scheduleWrite` asked for: the donations were written sooner.
    var cancelScheduledWrite: (() -> Void)?
    /// Whether calls already read wait behind the one being handled. When
    /// none does, a donation is written in the same dispatch: waiting for
    /// the loop to be idle would group it with nothing and cost one more
    /// pass of the loop.
    var callsAreQueued: () -> Bool = { true }
    /// Donations accepted but not yet written, with the answer each waits for.
    private var pendingDonations: [(save: ActivityStore.GroupedSave, done: (Result<String, UserActivityError>) -> Void)] = []
    private var isWriteScheduled = false
    /// Donations kept waiting at most: a flood of Donates is written in groups of this many.
    static let maximumPendingDonations = 64
    /// How long the first of them may wait while other calls keep the loop busy.
    static let longestDonationWaitMilliseconds: UInt32 = 5

    /// How long donations wait for another process's write lock on the store
    /// (a second daemon during a restart, a person's `sqlite3` shell inside a
    /// transaction) before their callers get `StorageFailed`. They wait
    /// without holding the loop: each try gives up after
    /// ``ActivityStore/lockWaitMilliseconds`` and the next comes from a timer.
    static let longestLockWaitMilliseconds: Int64 = 5000
    /// The time between two tries while the store is locked.
    static let lockRetryMilliseconds: UInt32 = 50
    /// At most this many donations wait for the lock; more are refused at once.
    static let maximumDonationsWaitingForLock = 256
    /// When the donations now waiting first found the store locked (scheduler time, µs).
    private var lockedSince: Int64?
    private var lockRetry: ScheduledWork?
    private let scheduler: Scheduler

    init(stateDirectory: String?, configDirectory: String?, scheduler: Scheduler, log: Logger) throws {
        self.log = log
        self.scheduler = scheduler
        if let stateDirectory {
            do {
                store = try ActivityStore(directory: stateDirectory)
            } catch {
                throw UserActivityError(.storageFailed, "cannot open the saved-activity store in \(stateDirectory): \(error)")
            }
        } else {
            store = try ActivityStore.inMemory()
        }
        privacy = PrivacyControls(directory: configDirectory, store: store, clock: { scheduler.now }, log: log)
        // Settings change what may be saved: donations accepted before the change are written under the old ones.
        privacy.beforeChange = { [unowned self] in writePendingDonations(mayWaitForLock: false) }
        privacy.storeChanged = { [unowned self] in onChange() }
    }

    private static let savedFields = ActivityField.allCases.filter { $0.key != nil && $0 != .activityType && $0 != .appID }

    /// The `a{sv}` a saved copy keeps: every property that differs from its
    /// default (saved copies are rebuilt onto the defaults, so this is
    /// lossless and keeps a 100k-entry store small), user-info trimmed to the
    /// required keys.
    static func savedProperties(_ properties: ActivityProperties) -> TypedValue {
        var trimmed = properties
        trimmed.userInfo = properties.savedUserInfo
        return .stringVariantDictionary(savedFields.compactMap { field in
            trimmed.hasDefaultValue(field) ? nil : (field.key!, trimmed.value(of: field))
        })
    }

    static func record(type: String, app: String, properties given: ActivityProperties) -> SavedActivityRecord {
        var properties = given
        // An open-document copy is continued by its URI: required keys never trim it away.
        if type == SystemActivityType.openDocument, !properties.requiredUserInfoKeys.isEmpty {
            for key in [SystemActivityType.uriKey, SystemActivityType.mimeTypeKey]
            where properties.userInfoValue(key) != nil && !properties.requiredUserInfoKeys.contains(key) {
                properties.requiredUserInfoKeys.append(key)
            }
        }
        return SavedActivityRecord(
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
        } catch {
            throw storageFailure(what, error)
        }
    }

    /// After a forget or delete of `deleted` entries: no copy of them may stay
    /// in the files (see ``ActivityStore/scrubDeletedContent()``). The
    /// deletion is committed either way; a failed scrub is logged, and the
    /// next one (or SQLite's own checkpoint) finishes the job.
    @discardableResult
    func scrubbing(_ deleted: Int) -> Int {
        guard deleted > 0 else { return deleted }
        onChange()
        do {
            if try !store.scrubDeletedContent() {
                log.warning("saved-activity store: a reader kept part of the WAL from being checkpointed after a forget")
            }
        } catch {
            log.warning("saved-activity store: could not checkpoint the WAL after a forget: \(error)")
        }
        return deleted
    }

    private func storageFailure(_ what: String, _ error: Error) -> UserActivityError {
        if let error = error as? UserActivityError { return error }
        log.error("saved-activity store: \(what) failed: \(error)")
        if let error = error as? StoreError, error.isLockedByAnotherConnection {
            return lockedOut(what, "(\(error))")
        }
        return UserActivityError(.storageFailed, "the saved-activity store could not \(what): \(error). Nothing was changed; free disk space or check $XDG_STATE_HOME/useractivity and try again")
    }

    private func lockedOut(_ what: String, _ detail: String) -> UserActivityError {
        UserActivityError(.storageFailed, "the saved-activity store could not \(what): another process holds its write lock \(detail). Nothing was changed; try again once that process has finished with $XDG_STATE_HOME/useractivity/\(ActivityStore.fileName)")
    }

    /// Writes a live activity's saved copy, unless paused or blocked.
    func save(_ activity: LiveActivity, countsAsUse: Bool, now: Int64) throws {
        writePendingDonations(mayWaitForLock: false)
        guard privacy.settings.allowsSaving(app: activity.appID, type: activity.activityType) else { return }
        let record = Self.record(type: activity.activityType, app: activity.appID, properties: activity.properties)
        try storage("save the activity") {
            _ = try store.save(record, at: now, countsAsUse: countsAsUse)
            if record.expirationDate != 0 { expirationMayHaveChanged() }
            try privacy.enforceLimit(app: activity.appID)
        }
        onChange()
    }

    /// Saves a donation and calls `completion` once it is durable, with its
    /// saved id (empty when paused or blocked: nothing is saved) or the
    /// store's error.
    ///
    /// Donations that arrive together are written in one transaction
    /// (``ActivityStore/saveGroup(_:)``), once the daemon has read every call
    /// waiting; a commit costs more than the save it makes durable. A
    /// donation with no call queued behind it is written at once. The
    /// caller answers in `completion`, so an acknowledged donation is
    /// always committed.
    func donate(type: String, app: String, properties: ActivityProperties, now: Int64,
                completion: @escaping (Result<String, UserActivityError>) -> Void) {
        guard privacy.settings.allowsSaving(app: app, type: type) else { return completion(.success("")) }
        let save = ActivityStore.GroupedSave(record: Self.record(type: type, app: app, properties: properties), now: now,
                                             keepingPerApp: Int(privacy.settings.maxSavedPerApplication))
        if lockRetry?.isPending == true, pendingDonations.count >= Self.maximumDonationsWaitingForLock {
            return completion(.failure(lockedOut("save the donation", "and \(pendingDonations.count) donations already wait for it")))
        }
        pendingDonations.append((save, completion))
        guard let scheduleWrite, pendingDonations.count < Self.maximumPendingDonations, callsAreQueued() else {
            return writePendingDonations()
        }
        if !isWriteScheduled {
            isWriteScheduled = true
            scheduleWrite { [weak self] in self?.writePendingDonations() }
        }
    }

    /// Writes the waiting donations in one transaction and answers each.
    ///
    /// When another process holds the store's write lock they stay waiting
    /// and are tried again from a timer, up to ``longestLockWaitMilliseconds``;
    /// a read meanwhile answers without them (none of them is acknowledged).
    /// With `mayWaitForLock` false they fail at once instead: before another
    /// write, which must not overtake them (a delete of what they save, a
    /// privacy change they were accepted under), and when the daemon stops.
    func writePendingDonations(mayWaitForLock: Bool = true) {
        if isWriteScheduled {
            isWriteScheduled = false
            cancelScheduledWrite?()
        }
        // While they wait for the lock, only their timer tries again (or a
        // write, which must not overtake them): a try may hold the loop for
        // ActivityStore.lockWaitMilliseconds, and a new Donate or a Search
        // must not each add one.
        if mayWaitForLock, lockRetry?.isPending == true { return }
        lockRetry?.cancel()
        lockRetry = nil
        guard !pendingDonations.isEmpty else { return }
        let waiting = pendingDonations
        pendingDonations = []
        let results: [Result<String, UserActivityError>]
        do {
            results = try store.saveGroup(waiting.map(\.save)).map { result in
                result.mapError { storageFailure("save the donation", $0) }
            }
        } catch let error as StoreError where error.isLockedByAnotherConnection && mayWaitForLock && mayGoOnWaitingForLock() {
            pendingDonations = waiting
            lockRetry = scheduler.after(milliseconds: Self.lockRetryMilliseconds) { [weak self] in
                self?.lockRetry = nil
                self?.writePendingDonations()
            }
            return
        } catch {
            results = Array(repeating: .failure(storageFailure("save the donation", error)), count: waiting.count)
        }
        lockedSince = nil
        if waiting.contains(where: { $0.save.record.expirationDate != 0 }) { expirationMayHaveChanged() }
        if results.contains(where: { if case .success(let id) = $0 { !id.isEmpty } else { false } }) { onChange() }
        for (donation, result) in zip(waiting, results) { donation.done(result) }
    }

    /// Whether the waiting donations may go on waiting for another process's
    /// lock (their number is bounded where they are accepted, in `donate`).
    private func mayGoOnWaitingForLock() -> Bool {
        let now = scheduler.now
        guard let since = lockedSince else {
            lockedSince = now
            log.notice("saved-activity store: another process holds its write lock; donations wait for it (at most \(Self.longestLockWaitMilliseconds) ms)")
            return true
        }
        return now - since < Self.longestLockWaitMilliseconds * 1000
    }

    /// The saved entry `savedID`, whoever saved it (callers check visibility).
    func load(savedID: String, now: Int64) throws -> SavedActivity? {
        writePendingDonations()
        return try storage("be read") { try store.load(savedID: savedID, now: now) }
    }

    /// Search hits as the store ranks them (the desktop-search providers build their own results).
    func searchHits(query: String, limit: Int, appID: String?, now: Int64) throws -> [SearchHit] {
        writePendingDonations()
        return try storage("be searched") {
            try store.search(query: query, limit: limit, appID: appID, activityTypes: [], now: now)
        }
    }

    func forget(app: String) throws -> Int {
        writePendingDonations(mayWaitForLock: false)
        return scrubbing(try storage("forget the app") { try store.deleteAll(appID: app) })
    }
    func forget(lastUsedFrom from: Int64, to: Int64) throws -> Int {
        writePendingDonations(mayWaitForLock: false)
        return scrubbing(try storage("forget the range") { try store.delete(lastUsedFrom: from, to: to) })
    }
    func forget(savedIDs: [String]) throws -> Int {
        writePendingDonations(mayWaitForLock: false)
        return scrubbing(try storage("forget the entries") { try store.delete(savedIDs: savedIDs) })
    }
    func forgetAll(now: Int64) throws -> Int {
        writePendingDonations(mayWaitForLock: false)
        return scrubbing(try storage("forget everything") {
            let deleted = try store.deleteAll()
            // Nothing the bridges saw before is imported again, and no trace of it is kept.
            try store.resetBridges(watermark: now, sources: PrivacySettings.knownBridges)
            return deleted
        })
    }

    // MARK: Bridges

    /// What a bridge has seen (see ``ActivityStore/bridgedStamps(source:)``).
    func bridgedStamps(source: String) throws -> (stamps: [Int64: Int64], watermark: Int64) {
        try storage("be read") { try store.bridgedStamps(source: source) }
    }

    /// Saves one batch of a bridge's entries (see ``ActivityStore/importBridged(source:changes:removing:keepingPerApp:)``).
    func importBridged(source: String, changes: [ActivityStore.BridgedChange], removing: [Int64]) throws {
        writePendingDonations(mayWaitForLock: false)
        try storage("save imported entries") {
            _ = try store.importBridged(source: source, changes: changes, removing: removing,
                                        keepingPerApp: Int(privacy.settings.maxSavedPerApplication))
        }
        if !changes.isEmpty || !removing.isEmpty { onChange() }
    }

    /// The apps a query may see: the caller's own when confined, narrowed by the app-id option.
    private func scope(requested: String?, visibleApp: String?) -> (app: String?, empty: Bool) {
        guard let visibleApp else { return (requested, false) }
        if let requested, requested != visibleApp { return (nil, true) }
        return (visibleApp, false)
    }

    func search(query: String, options: SearchOptions, visibleApp: String?, now: Int64) throws -> [TypedValue] {
        writePendingDonations()
        let scope = scope(requested: options.appID, visibleApp: visibleApp)
        if scope.empty { return [] }
        let hits = try storage("search") {
            try store.search(query: query, limit: options.limit, appID: scope.app,
                             activityTypes: options.activityTypes, now: now)
        }
        return hits.map { Self.result($0.activity, score: $0.score) }
    }

    func suggestions(options: SuggestionOptions, visibleApp: String?, now: Int64) throws -> [TypedValue] {
        writePendingDonations()
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
        writePendingDonations(mayWaitForLock: false)
        scrubbing(try storage("delete") { try store.delete(appID: app, persistentIdentifiers: persistentIdentifiers) })
    }

    func deleteAll(app: String) throws {
        writePendingDonations(mayWaitForLock: false)
        scrubbing(try storage("delete") { try store.deleteAll(appID: app) })
    }

    func purgeExpired(now: Int64) {
        writePendingDonations(mayWaitForLock: false)
        do {
            expirationMayHaveChanged()
            // Past its date an entry is as gone as a forgotten one, in the files too.
            let purged = scrubbing(try store.purgeExpired(now: now))
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
