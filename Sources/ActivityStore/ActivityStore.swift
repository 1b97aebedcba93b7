// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Synchronization
import TypedValues
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Saved activities in one SQLite database: saving (upsert by app and
/// persistent identifier), full-text search, suggestions, deletion and expiry.
///
/// Times are Unix microseconds passed in by the caller (`now`), so that the
/// daemon has one clock and tests can choose theirs.
///
/// Every write is one transaction and returns after it is committed; with
/// WAL and `synchronous=NORMAL` a committed transaction survives the process
/// being killed right after (not a power loss: that needs `FULL`).
///
/// Thread-safe: one connection behind a mutex. Calls are short (a few
/// milliseconds at most at 100 000 entries), so callers need no queue of
/// their own.
///
/// ```swift
/// let store = try ActivityStore(directory: stateHome + "/useractivity")
/// let id = try store.save(record, at: now)
/// let hits = try store.search(query: "quarterly rep", limit: 0, appID: nil, activityTypes: [], now: now)
/// ```
public final class ActivityStore: Sendable {
    /// The database file's name inside the store directory.
    public static let fileName = "activities.sqlite3"
    /// The most results one search or suggestion call returns.
    public static let maximumLimit = 200
    /// Recency half-life used by search and suggestions: 7 days in µs.
    public static let recencyHalfLife: Double = 7 * 24 * 3600 * 1_000_000

    /// The database file, or `nil` for an in-memory store.
    public let path: String?
    private let connection: Mutex<SQLiteConnection>
    private let hourOfDay: @Sendable (Int64) -> Int

    /// Opens (creating when needed) the store in `directory`.
    ///
    /// Creates the directory and missing parents with mode 0700 and
    /// `activities.sqlite3` with mode 0600, whatever the umask; existing
    /// directories are left as they are. Migrates the schema to the current
    /// version.
    ///
    /// - Parameter hourOfDay: the hour (0–23) of a Unix µs time, used to file
    ///   uses for time-of-day affinity; defaults to the local time zone
    ///   (``localHour(_:)``). Tests pass ``utcHour(_:)``.
    public init(directory: String, hourOfDay: @escaping @Sendable (Int64) -> Int = ActivityStore.localHour) throws {
        try FileSystem.makeDirectories(directory, mode: 0o700)
        let path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
        try FileSystem.createPrivateFile(path, mode: 0o600)
        let db = try SQLiteConnection(path: path)
        try Self.configure(db, wal: true)
        let isNewFile = (Int(try db.pragma("user_version")) ?? 0) == 0
        try Schema.migrate(db)
        // A failure (a full disk) leaves the file as it was: the store still opens, and the next open tries again.
        try? Self.zeroFreePagesOnce(db, isNewFile: isNewFile)
        try db.check(sqlite3_busy_timeout(db.handle, Self.lockWaitMilliseconds), "sqlite3_busy_timeout")
        self.path = path
        self.hourOfDay = hourOfDay
        self.connection = Mutex(db)
    }

    private init(inMemory db: sending SQLiteConnection, hourOfDay: @escaping @Sendable (Int64) -> Int) {
        self.path = nil
        self.hourOfDay = hourOfDay
        self.connection = Mutex(db)
    }

    /// A private in-memory store (for tests): same schema, nothing on disk.
    public static func inMemory(hourOfDay: @escaping @Sendable (Int64) -> Int = ActivityStore.utcHour) throws -> ActivityStore {
        let db = try SQLiteConnection(path: ":memory:")
        try configure(db, wal: false)
        try Schema.migrate(db)
        return ActivityStore(inMemory: db, hourOfDay: hourOfDay)
    }

    /// The file header's application ID once every free page of the file is
    /// known to hold zeros ("UAS1"). Only files this build created or
    /// rewrote carry it; older daemons ignore it.
    static let zeroedFreePagesMark: Int32 = 0x5541_5331

    /// Rewrites, once, a file that older builds wrote with `secure_delete =
    /// FAST`: what they deleted (entries forgotten before this build, the
    /// full-text index's segments) stays readable in free and overflow pages
    /// that `secure_delete = ON` never visits again, until SQLite happens to
    /// reuse them. `VACUUM` copies only live content; the checkpoint puts the
    /// rewrite in the file and empties the WAL. A new file has nothing to
    /// scrub and is only marked.
    private static func zeroFreePagesOnce(_ db: SQLiteConnection, isNewFile: Bool) throws(StoreError) {
        guard Int32(try db.pragma("application_id")) != zeroedFreePagesMark else { return }
        if !isNewFile { try db.execute("VACUUM") }
        try db.execute("PRAGMA application_id = \(zeroedFreePagesMark)")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// How long opening the store waits for another process's lock.
    static let openingLockWaitMilliseconds: Int32 = 5000

    /// How long a statement waits for another connection's lock once the store
    /// is open, before it fails with ``StoreError/isLockedByAnotherConnection``.
    ///
    /// Why so short: the daemon runs the store on its main loop, and a wait
    /// here is a wait for every caller on the bus. Another connection's
    /// commit takes well under this; a lock held longer (a `sqlite3` shell
    /// inside a transaction) is the caller's to wait for without holding the
    /// loop (``SavedActivities`` retries donations from a timer).
    public static let lockWaitMilliseconds: Int32 = 5

    private static func configure(_ db: SQLiteConnection, wal: Bool) throws(StoreError) {
        // While opening (nobody is served yet) another process may hold the
        // write lock: a daemon being replaced, still finishing its last commit.
        try db.check(sqlite3_busy_timeout(db.handle, Self.openingLockWaitMilliseconds), "sqlite3_busy_timeout")
        if wal {
            // WAL: readers never block the writer, and commits are one append.
            let mode = try db.pragma("journal_mode = WAL")
            guard mode.lowercased() == "wal" else {
                throw StoreError(function: "PRAGMA journal_mode", code: SQLITE_CANTOPEN,
                                 message: "the file system does not support WAL (journal mode is \(mode))")
            }
        }
        // NORMAL in WAL mode: a commit is durable against a process kill;
        // only a power loss can drop the last transactions.
        try db.execute("PRAGMA synchronous = NORMAL")
        // After a burst of writes the WAL would otherwise keep its peak size on disk.
        try db.execute("PRAGMA journal_size_limit = 4194304")
        try db.execute("PRAGMA foreign_keys = ON")
        // Overwrite deleted content, in free pages and overflow pages too:
        // "forget" must not leave titles readable in the file. (FAST skipped
        // the overwrite where it cost extra I/O, and left them in free pages.)
        try db.execute("PRAGMA secure_delete = ON")
    }

    // MARK: - Time

    /// The hour (0–23) of `micros` in the local time zone.
    @Sendable public static func localHour(_ micros: Int64) -> Int {
        var seconds = time_t(micros.floorDivided(by: 1_000_000))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return utcHour(micros) }
        return Int(parts.tm_hour)
    }

    /// The hour (0–23) of `micros` in UTC.
    @Sendable public static func utcHour(_ micros: Int64) -> Int {
        Int(micros.floorDivided(by: 3_600_000_000).floorModulo(24))
    }

    /// `requested`, or `defaultLimit` when it is 0 (or negative), clamped to ``maximumLimit``.
    public static func clampedLimit(_ requested: Int, default defaultLimit: Int) -> Int {
        requested <= 0 ? min(defaultLimit, maximumLimit) : min(requested, maximumLimit)
    }

    // MARK: - Saving

    /// Saves `record`: updates the entry with the same app and persistent
    /// identifier, or creates one (always when the persistent identifier is
    /// empty). Returns the entry's saved ID, the same one for every save of
    /// the same (app, persistent identifier).
    ///
    /// When `countsAsUse`, the use count goes up by one, `lastUsed` becomes
    /// `now` and the use is filed under `now`'s hour for time-of-day
    /// affinity; otherwise only the content changes.
    ///
    /// One transaction; returns after the commit.
    @discardableResult
    public func save(_ record: SavedActivityRecord, at now: Int64, countsAsUse: Bool = true) throws -> String {
        let encoded = try EncodedRecord(record)
        let hour = hourOfDay(now)
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                try Self.upsert(db, encoded, now: now, hour: hour, countsAsUse: countsAsUse)
            }
        }
    }

    /// Saves many records in one transaction, each counted as one use at `now`
    /// (bulk import, benchmarks). Returns the saved IDs in order.
    @discardableResult
    public func saveBatch(_ records: [SavedActivityRecord], at now: Int64) throws -> [String] {
        let encoded = try records.map(EncodedRecord.init)
        let hour = hourOfDay(now)
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                try encoded.map { record throws(StoreError) in
                    try Self.upsert(db, record, now: now, hour: hour, countsAsUse: true)
                }
            }
        }
    }

    // MARK: Bridges

    /// One entry of another desktop history (the recent-files bridge), as
    /// ``importBridged(source:changes:removing:keepingPerApp:)`` takes it.
    public struct BridgedChange: Sendable {
        /// The hash of the source's key (see ``bridgedKey(_:)``); never 0.
        public var key: Int64
        /// When the source last recorded a use (Unix µs): the entry is
        /// looked at again only when this changes.
        public var stamp: Int64
        /// What to save, with the source's use count and last use; nil:
        /// only remember the stamp (paused, blocked, too old).
        public var save: (record: SavedActivityRecord, useCount: UInt32, lastUsed: Int64)?

        public init(key: Int64, stamp: Int64, save: (record: SavedActivityRecord, useCount: UInt32, lastUsed: Int64)?) {
            self.key = key
            self.stamp = stamp
            self.save = save
        }
    }

    /// The 64-bit FNV-1a hash of a source's key (0 is mapped to 1: 0 is the watermark row).
    public static func bridgedKey(_ text: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash == 0 ? 1 : Int64(bitPattern: hash)
    }

    /// What a bridge has seen of `source`: key hash → stamp, and the watermark
    /// (uses up to it are not to be imported; 0 when none).
    public func bridgedStamps(source: String) throws -> (stamps: [Int64: Int64], watermark: Int64) {
        try connection.withLock { db throws(StoreError) in
            try db.withStatement("SELECT key, stamp FROM bridged WHERE source = ?1") { statement throws(StoreError) in
                try statement.bind(1, source)
                var stamps: [Int64: Int64] = [:]
                var watermark: Int64 = 0
                while try statement.step() {
                    let key = statement.int64(0)
                    if key == 0 { watermark = statement.int64(1) } else { stamps[key] = statement.int64(1) }
                }
                return (stamps, watermark)
            }
        }
    }

    /// Saves a batch of a bridge's entries (each counted with the source's
    /// use count and last use, keyed by app and persistent identifier, so a
    /// re-import updates instead of duplicating), remembers their stamps and
    /// forgets the keys in `removing`, in one transaction.
    ///
    /// - Returns: The saved IDs of the entries saved.
    @discardableResult
    public func importBridged(source: String, changes: [BridgedChange], removing: [Int64] = [],
                              keepingPerApp: Int = 0) throws -> [String] {
        let encoded = try changes.map { change throws -> EncodedRecord? in
            try change.save.map { try EncodedRecord($0.record) }
        }
        let hours = changes.map { $0.save.map { hourOfDay($0.lastUsed) } ?? 0 }
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                var savedIDs: [String] = []
                var apps = Set<String>()
                for (index, change) in changes.enumerated() {
                    if let save = change.save, let record = encoded[index] {
                        savedIDs.append(try Self.upsert(db, record, now: save.lastUsed, hour: hours[index], countsAsUse: true,
                                                        useCount: Int64(save.useCount)))
                        apps.insert(save.record.appID)
                    }
                    try db.withStatement("INSERT OR REPLACE INTO bridged (source, key, stamp) VALUES (?1, ?2, ?3)") { statement throws(StoreError) in
                        try statement.bind(1, source)
                        try statement.bind(2, change.key)
                        try statement.bind(3, change.stamp)
                        try statement.run()
                    }
                }
                for key in removing where key != 0 {
                    try db.withStatement("DELETE FROM bridged WHERE source = ?1 AND key = ?2") { statement throws(StoreError) in
                        try statement.bind(1, source)
                        try statement.bind(2, key)
                        try statement.run()
                    }
                }
                if keepingPerApp > 0 {
                    for app in apps.sorted() { _ = try Self.trim(db, appID: app, keeping: keepingPerApp) }
                }
                return savedIDs
            }
        }
    }

    /// Forgets what every bridge has seen and sets their watermark to `now`:
    /// after ForgetAll nothing a source recorded before is imported again,
    /// and no hash of it is kept.
    public func resetBridges(watermark now: Int64, sources: [String]) throws {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                try db.execute("DELETE FROM bridged")
                for source in sources {
                    try db.withStatement("INSERT INTO bridged (source, key, stamp) VALUES (?1, 0, ?2)") { statement throws(StoreError) in
                        try statement.bind(1, source)
                        try statement.bind(2, now)
                        try statement.run()
                    }
                }
            }
        }
    }

    /// One save of a group (see ``saveGroup(_:)``).
    public struct GroupedSave: Sendable {
        public var record: SavedActivityRecord
        public var now: Int64
        public var countsAsUse: Bool
        /// After saving, keep only this many of the app's most recently used
        /// entries (`MaxSavedPerApplication`); 0: no limit.
        public var keepingPerApp: Int

        public init(record: SavedActivityRecord, now: Int64, countsAsUse: Bool = true, keepingPerApp: Int = 0) {
            self.record = record
            self.now = now
            self.countsAsUse = countsAsUse
            self.keepingPerApp = keepingPerApp
        }
    }

    /// Saves each of `saves` as ``save(_:at:countsAsUse:)`` would, then trims
    /// its app to `keepingPerApp`, all in **one** transaction, and returns
    /// after the commit.
    ///
    /// Why: a commit costs more than the upsert it makes durable (the WAL
    /// frames of every page touched, locks, the index's bookkeeping), and
    /// saves that arrive together (a busy bus) share the pages they touch.
    ///
    /// Each save is all-or-nothing on its own (a savepoint): one that fails
    /// gets its error in the result and the others are kept. Throws, keeping
    /// none of them, when the transaction as a whole cannot commit.
    ///
    /// ```swift
    /// let results = try store.saveGroup(records.map { .init(record: $0, now: now) })
    /// ```
    public func saveGroup(_ saves: [GroupedSave]) throws -> [Result<String, StoreError>] {
        let encoded = saves.map { save in Result { () throws(StoreError) in try EncodedRecord(save.record) } }
        let hours = saves.map { hourOfDay($0.now) }
        return try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                var results: [Result<String, StoreError>] = []
                results.reserveCapacity(saves.count)
                for (index, save) in saves.enumerated() {
                    let record: EncodedRecord
                    switch encoded[index] {
                    case .success(let value): record = value
                    case .failure(let error): results.append(.failure(error)); continue
                    }
                    // Alone in the transaction, the transaction is its savepoint.
                    if saves.count == 1 {
                        results.append(.success(try Self.apply(save, record, hour: hours[index], db)))
                        continue
                    }
                    results.append(try Self.withSavepoint(db) { () throws(StoreError) in
                        try Self.apply(save, record, hour: hours[index], db)
                    })
                }
                return results
            }
        }
    }

    private static func apply(_ save: GroupedSave, _ record: EncodedRecord, hour: Int,
                              _ db: SQLiteConnection) throws(StoreError) -> String {
        let savedID = try upsert(db, record, now: save.now, hour: hour, countsAsUse: save.countsAsUse)
        if save.keepingPerApp > 0 { _ = try trim(db, appID: save.record.appID, keeping: save.keepingPerApp) }
        return savedID
    }

    /// Runs `body` under a savepoint: its changes are undone when it throws,
    /// and its error is returned, unless SQLite has already abandoned the
    /// whole transaction (disk full, I/O error), which is thrown.
    private static func withSavepoint(_ db: SQLiteConnection, _ body: () throws(StoreError) -> String) throws(StoreError) -> Result<String, StoreError> {
        let indexChanges = db.pendingIndexChanges.count
        try db.withStatement("SAVEPOINT grouped_save") { statement throws(StoreError) in try statement.run() }
        do {
            let result = try body()
            try db.withStatement("RELEASE grouped_save") { statement throws(StoreError) in try statement.run() }
            return .success(result)
        } catch {
            guard !db.isAutocommit else { throw error }
            try db.execute("ROLLBACK TO grouped_save; RELEASE grouped_save")
            db.pendingIndexChanges.removeSubrange(indexChanges...)
            // The failed upsert may have counted its row already.
            db.entryCountByApp.removeAll()
            return .failure(error)
        }
    }

    /// A record with its blobs encoded outside the lock.
    private struct EncodedRecord {
        let record: SavedActivityRecord
        let keywordList: [UInt8]
        let properties: [UInt8]

        init(_ record: SavedActivityRecord) throws(StoreError) {
            self.record = record
            do throws(CodecError) {
                keywordList = try TypedValueCodec.encode(.stringArray(record.keywords))
                properties = try TypedValueCodec.encode(record.properties)
            } catch {
                throw StoreError(function: "TypedValueCodec.encode", code: SQLITE_TOOBIG, message: error.description)
            }
        }
    }

    /// Query words beyond this are ignored (a pasted page must not make one
    /// query cost seconds for everyone else on the bus).
    public static let maximumQueryWords = 64

    /// The schema version this build writes (`PRAGMA user_version`).
    public static var schemaVersion: Int { Schema.currentVersion }

    private static func upsert(_ db: SQLiteConnection, _ encoded: EncodedRecord, now: Int64, hour: Int,
                               countsAsUse: Bool, useCount importedCount: Int64? = nil) throws(StoreError) -> String {
        let record = encoded.record
        struct Existing {
            var id: Int64; var savedID: String; var useCount: Int64; var hours: UseHours; var lastUsed: Int64
            /// As the search index holds it, to take it out there.
            var indexed: SearchIndex.Entry?
        }
        var existing: Existing?
        if !record.persistentIdentifier.isEmpty {
            existing = try db.withStatement("""
                SELECT \(SQLiteConnection.indexedColumns), saved_id, use_count, use_hours FROM entries
                WHERE app_id = ?1 AND persistent_id = ?2 AND persistent_id != ''
                """) { statement throws(StoreError) -> Existing? in
                try statement.bind(1, record.appID)
                try statement.bind(2, record.persistentIdentifier)
                guard try statement.step() else { return nil }
                return Existing(id: statement.int64(0), savedID: statement.text(9), useCount: statement.int64(10),
                                hours: statement.withBlob(11) { UseHours($0) }, lastUsed: statement.int64(6),
                                indexed: SQLiteConnection.indexedEntry(statement))
            }
        }
        let keywordsText = record.keywords.joined(separator: "\n")

        if var entry = existing {
            if let importedCount {
                // An imported use: the source's count; last use never goes back.
                entry.useCount = min(max(importedCount, 0), Int64(UInt32.max))
                if now > entry.lastUsed {
                    entry.lastUsed = now
                    entry.hours.add(hour: hour)
                    let highest = try Self.highestRowID(db)
                    if entry.id != highest { entry.id = try Self.nextRowID(db, after: highest) }
                }
            } else if countsAsUse {
                entry.useCount = min(entry.useCount + 1, Int64(UInt32.max))
                entry.lastUsed = now
                entry.hours.add(hour: hour)
                // Move the entry to the end of rowid order (see Schema.version1):
                // rowid order stays last-use order, which search relies on.
                let highest = try Self.highestRowID(db)
                if entry.id != highest { entry.id = try Self.nextRowID(db, after: highest) }
            }
            try db.withStatement("""
                UPDATE entries SET id = ?1, activity_type = ?2, title = ?3, content_description = ?4,
                    keywords = ?5, keyword_list = ?6, webpage_url = ?7, eligible_search = ?8,
                    eligible_prediction = ?9, expiration = ?10, phrase = ?11, properties = ?12,
                    use_count = ?13, last_used = ?14, use_hours = ?15
                WHERE saved_id = ?16
                """) { statement throws(StoreError) in
                try statement.bind(1, entry.id)
                try statement.bind(2, record.activityType)
                try statement.bind(3, record.title)
                try statement.bind(4, record.contentDescription)
                try statement.bind(5, keywordsText)
                try statement.bind(6, encoded.keywordList)
                try statement.bind(7, record.webpageURL)
                try statement.bind(8, record.eligibleForSearch)
                try statement.bind(9, record.eligibleForPrediction)
                try statement.bind(10, record.expirationDate)
                try statement.bind(11, record.suggestedInvocationPhrase)
                try statement.bind(12, encoded.properties)
                try statement.bind(13, entry.useCount)
                try statement.bind(14, entry.lastUsed)
                try statement.bind(15, entry.hours.bytes)
                try statement.bind(16, entry.savedID)
                try statement.run()
            }
            if record.eligibleForPrediction { try raiseUseCountCeiling(db, to: entry.useCount) }
            if let old = entry.indexed { db.pendingIndexChanges.append(.remove(old)) }
            if record.eligibleForSearch {
                db.pendingIndexChanges.append(.add(indexed(record, rowID: entry.id, keywords: keywordsText, lastUsed: entry.lastUsed)))
            }
            return entry.savedID
        }

        let savedID = newSavedID(now: now)
        let rowID = try nextRowID(db, after: highestRowID(db))
        var hours = UseHours()
        if countsAsUse { hours.add(hour: hour) }
        let useCount = importedCount.map { min(max($0, 0), Int64(UInt32.max)) } ?? Int64(countsAsUse ? 1 : 0)
        try db.withStatement("""
            INSERT INTO entries (id, saved_id, app_id, activity_type, persistent_id, title, content_description,
                keywords, keyword_list, webpage_url, eligible_search, eligible_prediction, expiration, phrase,
                properties, use_count, last_used, created, use_hours)
            VALUES (?18, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?16, ?17)
            """) { statement throws(StoreError) in
            try statement.bind(18, rowID)
            try statement.bind(1, savedID)
            try statement.bind(2, record.appID)
            try statement.bind(3, record.activityType)
            try statement.bind(4, record.persistentIdentifier)
            try statement.bind(5, record.title)
            try statement.bind(6, record.contentDescription)
            try statement.bind(7, keywordsText)
            try statement.bind(8, encoded.keywordList)
            try statement.bind(9, record.webpageURL)
            try statement.bind(10, record.eligibleForSearch)
            try statement.bind(11, record.eligibleForPrediction)
            try statement.bind(12, record.expirationDate)
            try statement.bind(13, record.suggestedInvocationPhrase)
            try statement.bind(14, encoded.properties)
            try statement.bind(15, useCount)
            try statement.bind(16, now)
            try statement.bind(17, hours.bytes)
            db.entryCountByApp[record.appID]? += 1
            try statement.run()
        }
        if record.eligibleForPrediction { try raiseUseCountCeiling(db, to: useCount) }
        if record.eligibleForSearch {
            db.pendingIndexChanges.append(.add(indexed(record, rowID: rowID, keywords: keywordsText, lastUsed: now)))
        }
        return savedID
    }

    /// Keeps `use_count_ceiling` at or above every prediction-eligible use
    /// count (see `Schema.version6`). Counts of 0 and 1 score alike, so the
    /// common Donate of a new entry skips the statement; the row is written
    /// only when the count goes above it.
    private static func raiseUseCountCeiling(_ db: SQLiteConnection, to useCount: Int64) throws(StoreError) {
        guard useCount > 1 else { return }
        try db.withStatement("UPDATE use_count_ceiling SET value = ?1 WHERE value < ?1") { statement throws(StoreError) in
            try statement.bind(1, useCount)
            try statement.run()
        }
    }

    private static func indexed(_ record: SavedActivityRecord, rowID: Int64, keywords: String, lastUsed: Int64) -> SearchIndex.Entry {
        SearchIndex.Entry(rowID: rowID, title: record.title, keywords: keywords, description: record.contentDescription,
                          appID: record.appID, activityType: record.activityType, lastUsed: lastUsed,
                          expiration: record.expirationDate)
    }

    /// The rowid for a new or just-used entry: one above the largest. When
    /// that would not fit the search index's 29 bits (half a billion uses
    /// after the store was made), the rowids are first renumbered 1…n in
    /// the same order, which keeps last-use order and frees the space.
    private static func nextRowID(_ db: SQLiteConnection, after highest: Int64) throws(StoreError) -> Int64 {
        let next = highest + 1
        guard next > db.rowIDCeiling else { return next }
        try db.execute("""
            UPDATE entries SET id = -id;
            UPDATE entries SET id = renumbered.position
                FROM (SELECT id AS negated, row_number() OVER (ORDER BY id DESC) AS position FROM entries) AS renumbered
                WHERE entries.id = renumbered.negated;
            """)
        db.pendingIndexChanges.append(.rebuild)
        return try highestRowID(db) + 1
    }

    /// The largest rowid in use (0 when empty): new and just-used entries get
    /// the next one, so descending rowid order is newest-use first.
    private static func highestRowID(_ db: SQLiteConnection) throws(StoreError) -> Int64 {
        try db.withStatement("SELECT coalesce(max(id), 0) FROM entries") { statement throws(StoreError) in
            try statement.step() ? statement.int64(0) : 0
        }
    }

    /// 32 lowercase hex digits: the creation time (13 digits, the low 52 bits
    /// of Unix µs), then 76 random bits. The random part makes an ID
    /// unguessable and unique; the time part does say when the entry was
    /// made (which its `created` date tells any reader of it anyway).
    ///
    /// Why the time first: the unique index on `saved_id` then grows at its
    /// end, like the table, instead of taking every new entry to a random
    /// page of it, a page more to write (and at 100 000 entries often to
    /// read first) on every commit. The random part keeps ids unique.
    static func newSavedID(now: Int64) -> String {
        let (random, moreRandom) = randomBits()
        let time = UInt64(bitPattern: now) & (1 << 52 - 1)
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for shift in stride(from: 48, through: 0, by: -4) { bytes.append(digits[Int((time >> UInt64(shift)) & 0xF)]) }
        for shift in stride(from: 60, through: 0, by: -4) { bytes.append(digits[Int((random >> UInt64(shift)) & 0xF)]) }
        for shift in stride(from: 8, through: 0, by: -4) { bytes.append(digits[Int((moreRandom >> UInt64(shift)) & 0xF)]) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// 128 random bits from one `getrandom` call: the standard library's
    /// generator makes one system call per 64 bits, and a Donate's CPU is
    /// counted in system calls. Should the call fail or come back short
    /// (it does neither for 16 bytes once the kernel's pool is ready), the
    /// standard library's generator gives the bits instead.
    private static func randomBits() -> (UInt64, UInt64) {
        var words: (UInt64, UInt64) = (0, 0)
        let filled = withUnsafeMutableBytes(of: &words) { buffer in
            activitystore_random_bytes(buffer.baseAddress, buffer.count) == 1
        }
        if filled { return words }
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }

    // MARK: - Reading

    /// The columns ``readActivity(_:)`` expects, in order.
    private static let activityColumns = """
        saved_id, app_id, activity_type, persistent_id, title, content_description, keyword_list,
        webpage_url, eligible_search, eligible_prediction, expiration, phrase, properties,
        use_count, last_used, created
        """

    private static func readActivity(_ s: Statement) throws(StoreError) -> SavedActivity {
        func decode(_ column: Int32) throws(StoreError) -> TypedValue {
            try s.withBlob(column) { buffer throws(StoreError) in
                do throws(CodecError) { return try TypedValueCodec.decode(buffer) } catch {
                    throw StoreError(function: "TypedValueCodec.decode", code: SQLITE_CORRUPT,
                                     message: "saved activity \(s.text(0)): \(error.description)")
                }
            }
        }
        let record = SavedActivityRecord(
            appID: s.text(1), activityType: s.text(2), persistentIdentifier: s.text(3),
            title: s.text(4), contentDescription: s.text(5),
            keywords: try decode(6).stringArrayValue ?? [],
            webpageURL: s.text(7), eligibleForSearch: s.int64(8) != 0, eligibleForPrediction: s.int64(9) != 0,
            expirationDate: s.int64(10), suggestedInvocationPhrase: s.text(11), properties: try decode(12))
        return SavedActivity(savedID: s.text(0), record: record,
                             useCount: UInt32(clamping: s.int64(13)), lastUsed: s.int64(14), created: s.int64(15))
    }

    private static func load(_ db: SQLiteConnection, rowID: Int64) throws(StoreError) -> SavedActivity? {
        try db.withStatement("SELECT \(activityColumns) FROM entries WHERE id = ?1") { statement throws(StoreError) in
            try statement.bind(1, rowID)
            return try statement.step() ? readActivity(statement) : nil
        }
    }

    private static func loadSummary(_ db: SQLiteConnection, rowID: Int64) throws(StoreError) -> SavedActivitySummary? {
        try db.withStatement("""
            SELECT saved_id, app_id, activity_type, persistent_id, title, content_description, keyword_list,
                webpage_url, use_count, last_used, created
            FROM entries WHERE id = ?1
            """) { s throws(StoreError) in
            try s.bind(1, rowID)
            guard try s.step() else { return nil }
            let keywords = try s.withBlob(6) { buffer throws(StoreError) in
                do throws(CodecError) { return try TypedValueCodec.decode(buffer).stringArrayValue ?? [] } catch {
                    throw StoreError(function: "TypedValueCodec.decode", code: SQLITE_CORRUPT,
                                     message: "saved activity \(s.text(0)): \(error.description)")
                }
            }
            return SavedActivitySummary(savedID: s.text(0), appID: s.text(1), activityType: s.text(2),
                                        persistentIdentifier: s.text(3), title: s.text(4), contentDescription: s.text(5),
                                        keywords: keywords, webpageURL: s.text(7), useCount: UInt32(clamping: s.int64(8)),
                                        lastUsed: s.int64(9), created: s.int64(10))
        }
    }

    /// The entry with this saved ID, or `nil` when there is none or it has
    /// expired at `now` (an expired entry is as good as deleted, even before
    /// ``purgeExpired(now:)`` runs).
    public func load(savedID: String, now: Int64) throws -> SavedActivity? {
        try connection.withLock { db throws(StoreError) in
            try db.withStatement("""
                SELECT \(Self.activityColumns) FROM entries
                WHERE saved_id = ?1 AND (expiration = 0 OR expiration > ?2)
                """) { statement throws(StoreError) in
                try statement.bind(1, savedID)
                try statement.bind(2, now)
                return try statement.step() ? Self.readActivity(statement) : nil
            }
        }
    }

    /// The number of entries (expired ones not yet purged included).
    public func count() throws -> Int {
        try connection.withLock { db throws(StoreError) in
            try db.withStatement("SELECT count(*) FROM entries") { statement throws(StoreError) in
                try statement.step() ? statement.int(0) : 0
            }
        }
    }

    /// The database's settings, for diagnostics and tests.
    public func info() throws -> StoreInfo {
        try connection.withLock { db throws(StoreError) in
            let pages = Int(try db.pragma("page_count")) ?? 0
            let pageSize = Int(try db.pragma("page_size")) ?? 0
            return StoreInfo(journalMode: try db.pragma("journal_mode"),
                             synchronous: Int(try db.pragma("synchronous")) ?? -1,
                             foreignKeys: try db.pragma("foreign_keys") == "1",
                             userVersion: Int(try db.pragma("user_version")) ?? 0,
                             databaseBytes: pages * pageSize)
        }
    }

    // MARK: - Search

    /// Full-text search over search-eligible, unexpired entries, best first.
    ///
    /// Query semantics (the D-Bus contract): words are what FTS5's
    /// `unicode61` tokenizer (diacritics removed) calls tokens: letters and
    /// digits, any script, split where it splits; matching ignores case and
    /// diacritics (`cafe` finds `Café`); every word must occur in the title,
    /// keywords or content description; only the last word also matches as a
    /// prefix (search as you type). Any text is valid: `OR`, `NOT`, `NEAR`,
    /// quotes, `*`, parentheses and colons are plain text. A query without
    /// words returns `[]`. Only the first 64 words count. The words are
    /// looked up in ``SearchIndex``, in memory.
    ///
    /// Ranking: `score = relevance × (1 + 2^(−age / 7 days))`, where `age` is
    /// `now − lastUsed` (≥ 0), so a just-used entry counts up to twice as much
    /// as an old one with the same relevance. `relevance` is BM25's
    /// term-frequency part, summed over the three columns with weights title 3,
    /// keywords 2, description 1:
    /// `Σ w · h·(k1+1) / (h + k1·(1 − b + b·len/avgLen))`, k1 = 1.2, b = 0.75,
    /// `h` how many of the query's distinct terms the column holds (for the
    /// last word, every term it begins; repeats of a term count once), `len`
    /// the column's length in words, `avgLen` 8, 8 and 24 words. BM25's IDF is left out: every
    /// result contains every query word, so IDF would only reweight words
    /// against each other.
    ///
    /// Bounded work: candidates are the matching entries in last-use order
    /// (rowid order, see `Schema.version1`), at most
    /// `min(max(2 × limit, 100), 400)` of them; when more entries match, the
    /// least recently used ones are not ranked.
    ///
    /// - Parameters:
    ///   - limit: 0 = 20; at most 200.
    ///   - appID: only this app's entries, when given.
    ///   - activityTypes: only these types, when not empty.
    public func search(query: String, limit: Int, appID: String?, activityTypes: [String], now: Int64) throws -> [SearchHit] {
        let limit = Self.clampedLimit(limit, default: 20)
        let candidateLimit = min(max(2 * limit, 100), 400)
        return try connection.withLock { db throws(StoreError) in
            let words = Array(try db.ftsTokenizer().tokens(query, forQuery: true).prefix(Self.maximumQueryWords))
            guard !words.isEmpty else { return [] }
            func best(_ index: inout SearchIndex) -> [(rowID: Int64, score: Double)] {
                let candidates = index.candidates(words: words, appID: appID, activityTypes: activityTypes, now: now,
                                                  limit: candidateLimit)
                let ranked = candidates.map { candidate in
                    (rowID: Int64(candidate.rowID),
                     score: Ranking.relevance(candidate.hits, candidate.document)
                        * (1 + Ranking.recency(lastUsed: candidate.document.lastUsed, now: now)))
                }
                return Array(ranked.sorted { $0.score != $1.score ? $0.score > $1.score : $0.rowID > $1.rowID }.prefix(limit))
            }
            func load(_ best: [(rowID: Int64, score: Double)]) throws(StoreError) -> [SearchHit] {
                func loadEach() throws(StoreError) -> [SearchHit] {
                    var hits: [SearchHit] = []
                    hits.reserveCapacity(best.count)
                    for candidate in best {
                        if let activity = try Self.loadSummary(db, rowID: candidate.rowID) {
                            hits.append(SearchHit(activity: activity, score: candidate.score))
                        }
                    }
                    return hits
                }
                // Many loads share one read transaction (see readTransaction); a
                // few cost less alone than BEGIN and COMMIT do. A row another
                // process deleted since the index check is left out either way.
                return best.count > Self.loadsWithoutTransaction ? try db.readTransaction(loadEach) : try loadEach()
            }
            // The index as it stands, confirmed by the file's data version once
            // the loads have read the database (see withSearchIndexIfUnchanged).
            // Without a load there is no read to confirm it by: ask, and keep
            // the empty answer when the index already matched the file.
            if let unconfirmed = db.withSearchIndexIfUnchanged(best) {
                if !unconfirmed.isEmpty {
                    let hits = try load(unconfirmed)
                    if db.fileUnchangedSinceIndexMatched { return hits }
                } else if try db.refreshSearchIndex() {
                    return []
                }
            }
            return try load(try db.withSearchIndex(best))
        }
    }

    /// Up to this many result rows are read without an explicit transaction.
    static let loadsWithoutTransaction = 2

    // MARK: - Suggestions

    /// At most this many entries are scored per suggestion call.
    static let suggestionScanLimit = 2000

    /// Prediction-eligible, unexpired entries ranked for suggestion, best first.
    ///
    /// `score = frequency × recency × affinity`:
    /// - frequency `= 1 + log2(max(1, useCount))`: 1 use → 1, 2 → 2, 4 → 3,
    ///   1024 → 11 (habits count, without one very frequent entry drowning the rest);
    /// - recency `= 2^(−age / 7 days)`, `age = now − lastUsed` (≥ 0): halves every week;
    /// - affinity `= 0.2 + 0.8 × share`, `share` = the fraction of the entry's
    ///   past uses whose local hour (the hour in the time zone in effect at the
    ///   time of use) is within ±1 h of now's local hour (a 3-hour window,
    ///   wrapping at midnight); an entry with no recorded use gets the uniform
    ///   share 3/24. Local time because habits follow the wall clock ("mail
    ///   at 9"); the floor 0.2 keeps a strong habit from vanishing outside its hours.
    ///
    /// Bounded work: entries are read newest-use first through an index, and
    /// the scan stops as soon as no further entry can beat the current
    /// `limit`-th score (its bound is `(1 + log2(ceiling)) × recency`, the
    /// ceiling being at least every eligible entry's use count, see
    /// `Schema.version6`),
    /// or after 2000 entries (then the answer is the best of the 2000
    /// most recently used).
    ///
    /// - Parameters:
    ///   - limit: 0 = 10; at most 200.
    ///   - appID: only this app's entries, when given.
    public func suggestions(limit: Int, appID: String?, now: Int64) throws -> [SuggestionHit] {
        let limit = Self.clampedLimit(limit, default: 10)
        let hourNow = hourOfDay(now)
        return try connection.withLock { db throws(StoreError) in
            // An upper bound, not the exact maximum: enough to stop the scan early.
            let maxUseCount = try db.withStatement("SELECT value FROM use_count_ceiling") { statement throws(StoreError) in
                try statement.step() ? statement.int64(0) : Int64(UInt32.max)
            }
            let maxFrequency = Ranking.frequency(useCount: maxUseCount)
            let sql = appID == nil
                ? """
                  SELECT id, use_count, last_used, use_hours FROM entries INDEXED BY entries_for_prediction
                  WHERE eligible_prediction = 1 AND (expiration = 0 OR expiration > ?1)
                  ORDER BY last_used DESC
                  """
                : """
                  SELECT id, use_count, last_used, use_hours FROM entries INDEXED BY entries_by_app
                  WHERE eligible_prediction = 1 AND app_id = ?2 AND (expiration = 0 OR expiration > ?1)
                  ORDER BY last_used DESC
                  """
            var best = TopK(capacity: limit)
            try db.withStatement(sql) { statement throws(StoreError) in
                try statement.bind(1, now)
                if let appID { try statement.bind(2, appID) }
                var scanned = 0
                while scanned < Self.suggestionScanLimit, try statement.step() {
                    scanned += 1
                    let lastUsed = statement.int64(2)
                    let recency = Ranking.recency(lastUsed: lastUsed, now: now)
                    // Rows come newest first, so this bound only falls from here on.
                    if best.isFull, maxFrequency * recency <= best.threshold { break }
                    let hours = statement.withBlob(3) { UseHours($0) }
                    let score = Ranking.frequency(useCount: statement.int64(1)) * recency
                        * Ranking.affinity(hours: hours, hour: hourNow)
                    best.insert(rowID: statement.int64(0), score: score)
                }
            }
            var hits: [SuggestionHit] = []
            for candidate in best.sorted() {
                if let activity = try Self.load(db, rowID: candidate.rowID) {
                    hits.append(SuggestionHit(activity: activity, score: candidate.score))
                }
            }
            return hits
        }
    }

    // MARK: - Deleting

    /// Deletes `appID`'s entries with these persistent identifiers
    /// (`""` matches nothing). Returns how many were deleted.
    @discardableResult
    public func delete(appID: String, persistentIdentifiers: [String]) throws -> Int {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                var deleted = 0
                for identifier in Set(persistentIdentifiers) where !identifier.isEmpty {
                    deleted += try db.withStatement("""
                        DELETE FROM entries WHERE app_id = ?1 AND persistent_id = ?2 AND persistent_id != ''
                        RETURNING \(SQLiteConnection.indexedColumns)
                        """) { statement throws(StoreError) in
                        try statement.bind(1, appID)
                        try statement.bind(2, identifier)
                        return try Self.unindexDeletedRows(db, statement)
                    }
                }
                db.entryCountByApp[appID] = nil
                return deleted
            }
        }
    }

    /// Deletes all of `appID`'s entries. Returns how many were deleted.
    @discardableResult
    public func deleteAll(appID: String) throws -> Int {
        try run("DELETE FROM entries WHERE app_id = ?1", [.text(appID)])
    }

    /// Deletes every entry of every app (`ForgetAll`). Returns how many were deleted.
    @discardableResult
    public func deleteAll() throws -> Int {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let deleted = try Self.delete(db, "DELETE FROM entries", [], returnsIndexedColumns: false)
                // With nothing left, the bound can start again from nothing.
                try db.execute("UPDATE use_count_ceiling SET value = 0")
                return deleted
            }
        }
    }

    /// Deletes the entry with this saved ID; `true` when there was one.
    @discardableResult
    public func delete(savedID: String) throws -> Bool {
        try run("DELETE FROM entries WHERE saved_id = ?1", [.text(savedID)]) > 0
    }

    /// Deletes the entries with these saved IDs, in one transaction. Returns how many were deleted.
    @discardableResult
    public func delete(savedIDs: [String]) throws -> Int {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                var deleted = 0
                for savedID in Set(savedIDs) {
                    deleted += try Self.delete(db, "DELETE FROM entries WHERE saved_id = ?1", [.text(savedID)])
                }
                return deleted
            }
        }
    }

    /// Deletes entries last used in `from..<to` (Unix µs; `ForgetRange`, and
    /// retention with `from: .min`). Returns how many were deleted.
    @discardableResult
    public func delete(lastUsedFrom from: Int64, to: Int64) throws -> Int {
        try run("DELETE FROM entries WHERE last_used >= ?1 AND last_used < ?2", [.integer(from), .integer(to)])
    }

    /// Keeps only `appID`'s `keeping` most recently used entries
    /// (`MaxSavedPerApplication`). Returns how many were deleted.
    @discardableResult
    public func trim(appID: String, keeping: Int) throws -> Int {
        try connection.withLock { db throws(StoreError) in
            guard try Self.entryCount(db, appID: appID) > keeping else { return 0 }
            return try db.transaction { () throws(StoreError) in try Self.trim(db, appID: appID, keeping: keeping) }
        }
    }

    /// Saved entries of `appID`. Counted once per app and kept up to date by
    /// inserts, so the common case (under the limit) costs no query on every save.
    private static func entryCount(_ db: SQLiteConnection, appID: String) throws(StoreError) -> Int {
        if let cached = db.entryCountByApp[appID] { return cached }
        let counted = try db.withStatement("SELECT count(*) FROM entries WHERE app_id = ?1") { statement throws(StoreError) in
            try statement.bind(1, appID)
            return try statement.step() ? statement.int(0) : 0
        }
        db.entryCountByApp[appID] = counted
        return counted
    }

    /// The deletion behind ``trim(appID:keeping:)``, inside the caller's transaction.
    ///
    /// Deletes the app's least recently used entries beyond `keeping`, oldest
    /// first along `entries_by_app`, and keeps the counts it knows.
    ///
    /// Why not "all but the newest `keeping`": once an app is at its limit
    /// every save trims one entry, and that form walked all of the app's
    /// entries twice per save (the subquery, then a recount, since a delete
    /// forgets the counts), about two thirds of a Donate's CPU at 1000.
    private static func trim(_ db: SQLiteConnection, appID: String, keeping: Int) throws(StoreError) -> Int {
        let count = try entryCount(db, appID: appID)
        let keeping = max(0, keeping)
        guard count > keeping else { return 0 }
        let counts = db.entryCountByApp
        let deleted = try delete(db, """
            DELETE FROM entries WHERE id IN
                (SELECT id FROM entries WHERE app_id = ?1 ORDER BY last_used, id LIMIT ?2)
            """, [.text(appID), .integer(Int64(count - keeping))])
        // Only this app's rows went.
        db.entryCountByApp = counts
        db.entryCountByApp[appID] = count - deleted
        return deleted
    }

    /// Keeps only the `keeping` most recently used entries of every app
    /// (`MaxSavedPerApplication` lowered). Returns how many were deleted.
    @discardableResult
    public func trimAll(keeping: Int) throws -> Int {
        try run("""
            DELETE FROM entries WHERE id IN (
                SELECT id FROM (SELECT id, row_number() OVER
                    (PARTITION BY app_id ORDER BY last_used DESC, id DESC) AS position FROM entries)
                WHERE position > ?1)
            """, [.integer(Int64(max(0, keeping)))])
    }

    /// Deletes every entry of one activity type (the type was blocked).
    @discardableResult
    public func deleteAll(activityType: String) throws -> Int {
        try run("DELETE FROM entries WHERE activity_type = ?1", [.text(activityType)])
    }

    /// Deletes entries whose expiration date is at or before `now`. Returns how many.
    @discardableResult
    public func purgeExpired(now: Int64) throws -> Int {
        try run("DELETE FROM entries WHERE expiration != 0 AND expiration <= ?1", [.integer(now)])
    }

    /// The earliest non-zero expiration date of any entry, for the daemon's
    /// timer; `nil` when nothing expires. It can be in the past when
    /// ``purgeExpired(now:)`` has not run since: purge right away then.
    public func nextExpiration() throws -> Int64? {
        try connection.withLock { db throws(StoreError) in
            try db.withStatement("SELECT min(expiration) FROM entries WHERE expiration != 0") { statement throws(StoreError) in
                guard try statement.step(), !statement.isNull(0) else { return nil }
                return statement.int64(0)
            }
        }
    }

    #if DEBUG
    // Test seams (see SQLiteConnection).

    /// Lowers the rowid ceiling (see `nextRowID`) so that tests reach it.
    func lowerRowIDCeiling(to ceiling: Int64) {
        connection.withLock { $0.rowIDCeiling = ceiling }
    }

    /// How many times a search asked SQLite for `PRAGMA data_version`.
    var dataVersionQueries: Int {
        connection.withLock { $0.dataVersionQueries }
    }

    /// Lowers the search index's merge threshold so that tests merge often.
    func lowerSearchIndexMergeThreshold(to postings: Int) {
        connection.withLock { db in
            db.searchIndexMinimumMerge = postings
            db.searchIndex?.minimumMergeThreshold = postings
        }
    }
    #endif

    /// After deleting entries the user asked to forget: moves the WAL's
    /// content into the database (whose deleted content `secure_delete`
    /// zeroed) and truncates the WAL to nothing, so that no copy of a
    /// forgotten entry stays in either file. The search index lives in
    /// memory and drops deleted entries at once; the file has no full-text
    /// index (see `Schema.version3`). Returns false when a reader kept part
    /// of the WAL from being checkpointed.
    @discardableResult
    public func scrubDeletedContent() throws -> Bool {
        try connection.withLock { db throws(StoreError) in
            try db.withStatement("PRAGMA wal_checkpoint(TRUNCATE)") { statement throws(StoreError) in
                guard try statement.step() else { return true }
                return statement.int(0) == 0
            }
        }
    }

    /// Sets `PRAGMA secure_delete` (ON by default; tests compare with FAST).
    func setSecureDelete(_ mode: String) throws {
        try connection.withLock { db throws(StoreError) in try db.execute("PRAGMA secure_delete = \(mode)") }
    }


    private enum Parameter: Sendable {
        case text(String)
        case integer(Int64)
    }

    /// Runs one DELETE in its own transaction and returns the rows it removed.
    private func run(_ sql: String, _ parameters: [Parameter], returnsIndexedColumns: Bool = true) throws(StoreError) -> Int {
        try connection.withLock { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                try Self.delete(db, sql, parameters, returnsIndexedColumns: returnsIndexedColumns)
            }
        }
    }

    /// Runs one DELETE inside the caller's transaction and returns the rows it removed.
    ///
    /// The deleted rows come back (`RETURNING`) so that the search index can
    /// drop exactly them; deleting everything just empties it.
    private static func delete(_ db: SQLiteConnection, _ sql: String, _ parameters: [Parameter],
                               returnsIndexedColumns: Bool = true) throws(StoreError) -> Int {
        let sql = returnsIndexedColumns ? sql + " RETURNING " + SQLiteConnection.indexedColumns : sql
        let deleted = try db.withStatement(sql) { statement throws(StoreError) in
            for (index, parameter) in parameters.enumerated() {
                switch parameter {
                case .text(let text): try statement.bind(Int32(index + 1), text)
                case .integer(let value): try statement.bind(Int32(index + 1), value)
                }
            }
            if returnsIndexedColumns { return try unindexDeletedRows(db, statement) }
            try statement.run()
            db.pendingIndexChanges.append(.rebuild)
            return db.changes
        }
        // Any delete may change any app's count.
        db.entryCountByApp.removeAll()
        return deleted
    }

    /// Steps a `DELETE … RETURNING indexedColumns` to the end, queueing the
    /// removal of each searchable row from the index. Returns the rows deleted.
    private static func unindexDeletedRows(_ db: SQLiteConnection, _ statement: Statement) throws(StoreError) -> Int {
        var deleted = 0
        while try statement.step() {
            deleted += 1
            if let entry = SQLiteConnection.indexedEntry(statement) { db.pendingIndexChanges.append(.remove(entry)) }
        }
        return deleted
    }
}

// MARK: - Scoring helpers

/// The formulas documented on `search` and `suggestions`.
enum Ranking {
    static let k1 = 1.2
    static let b = 0.75

    /// `2^(−age / half-life)`; 1 for a use at or after `now`.
    static func recency(lastUsed: Int64, now: Int64) -> Double {
        let age = max(0, Double(now) - Double(lastUsed))
        return exp2(-age / ActivityStore.recencyHalfLife)
    }

    static func frequency(useCount: Int64) -> Double {
        1 + log2(Double(max(1, useCount)))
    }

    static func affinity(hours: UseHours, hour: Int) -> Double {
        let total = hours.total
        guard total > 0 else { return 0.2 + 0.8 * 3 / 24 }
        let window = hours[(hour + 23) % 24] + hours[hour % 24] + hours[(hour + 1) % 24]
        return 0.2 + 0.8 * Double(window) / Double(total)
    }

    /// BM25's term-frequency part over the three searched columns.
    static func relevance(_ hits: SearchIndex.Hits, _ document: SearchIndex.Document) -> Double {
        column(hits: hits.title, length: document.titleLength, weight: 3, averageLength: 8)
            + column(hits: hits.keywords, length: document.keywordsLength, weight: 2, averageLength: 8)
            + column(hits: hits.description, length: document.descriptionLength, weight: 1, averageLength: 24)
    }

    private static func column(hits: Int, length: UInt16, weight: Double, averageLength: Double) -> Double {
        guard hits > 0 else { return 0 }
        let h = Double(hits)
        return weight * h * (k1 + 1) / (h + k1 * (1 - b + b * Double(length) / averageLength))
    }
}

/// The 24-bucket histogram of use hours, stored as 24 little-endian UInt32.
struct UseHours {
    private(set) var counts = [UInt32](repeating: 0, count: 24)

    init() {}

    /// Reads a stored histogram; anything malformed reads as no uses.
    init(_ buffer: UnsafeRawBufferPointer) {
        guard buffer.count == 96 else { return }
        for i in 0..<24 {
            counts[i] = UInt32(buffer[4 * i]) | UInt32(buffer[4 * i + 1]) << 8
                | UInt32(buffer[4 * i + 2]) << 16 | UInt32(buffer[4 * i + 3]) << 24
        }
    }

    subscript(hour: Int) -> UInt32 { counts[hour] }

    var total: UInt64 { counts.reduce(0) { $0 + UInt64($1) } }

    mutating func add(hour: Int) {
        let h = ((hour % 24) + 24) % 24
        if counts[h] < UInt32.max { counts[h] += 1 }
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96)
        for count in counts { withUnsafeBytes(of: count.littleEndian) { bytes.append(contentsOf: $0) } }
        return bytes
    }
}

/// The best `capacity` (rowID, score) pairs seen so far.
struct TopK {
    let capacity: Int
    private var items: [(rowID: Int64, score: Double)] = []

    init(capacity: Int) { self.capacity = capacity }

    var isFull: Bool { items.count >= capacity }
    /// The lowest kept score (meaningful when full).
    var threshold: Double { items.last?.score ?? -.infinity }

    /// Keeps `items` sorted best first; capacity is at most 200, so insertion
    /// into a sorted array beats a heap here.
    mutating func insert(rowID: Int64, score: Double) {
        if isFull, score <= threshold { return }
        let index = items.firstIndex { score > $0.score } ?? items.count
        items.insert((rowID, score), at: index)
        if items.count > capacity { items.removeLast() }
    }

    func sorted() -> [(rowID: Int64, score: Double)] { items }
}

extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let q = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? q - 1 : q
    }

    func floorModulo(_ divisor: Int64) -> Int64 {
        let r = self % divisor
        return r < 0 ? r + divisor : r
    }
}
