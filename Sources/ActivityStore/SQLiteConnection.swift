// SPDX-License-Identifier: Apache-2.0
import CSQLite

/// The one owner of a `sqlite3*`: opens it, caches prepared statements,
/// turns every failing call into a ``StoreError`` and closes it in `deinit`.
///
/// Not thread-safe by itself: ``ActivityStore`` keeps it behind a mutex, which
/// is also why the handle is opened with `SQLITE_OPEN_NOMUTEX`.
final class SQLiteConnection {
    let handle: OpaquePointer
    /// Prepared once, reused for the life of the connection: preparing costs
    /// more than running most of these statements.
    private var statements: [String: OpaquePointer] = [:]

    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard let db else {
            throw StoreError(function: "sqlite3_open_v2", code: rc, message: "out of memory opening \(path)")
        }
        guard rc == SQLITE_OK else {
            let error = StoreError(function: "sqlite3_open_v2", code: rc,
                                   message: String(cString: sqlite3_errmsg(db)) + " (\(path))")
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    /// Saved entries per app, for the per-app limit: filled on demand, bumped
    /// by inserts, cleared by deletes.
    var entryCountByApp: [String: Int] = [:]
    /// `SQLITE_FCNTL_DATA_VERSION` after this connection's last commit: a
    /// write transaction that finds another one forgets the counts above,
    /// since the trim deletes as many of an app's oldest entries as its
    /// count says are too many.
    private var fileVersionAfterCommit: UInt32?

    /// The index Search reads (see ``SearchIndex``); `nil` until built, and
    /// again when a change could not be applied.
    var searchIndex: SearchIndex?
    /// `PRAGMA data_version` when the index was built: it changes when
    /// another connection commits, which the index has not seen.
    var searchIndexDataVersion: Int64 = 0
    /// `SQLITE_FCNTL_DATA_VERSION` when the index was last known to match
    /// the file (see ``withSearchIndexIfUnchanged(_:)``); nil: ask the database.
    var searchIndexFileVersion: UInt32?
    /// The open transaction's changes to the index, applied after COMMIT.
    var pendingIndexChanges: [SearchIndex.Change] = []
    #if DEBUG
    // Test seams (debug builds only, which is what the tests run): a counter
    // of `PRAGMA data_version` queries, and limits the tests lower to reach
    // the renumbering and the merge without 500 million rows.
    /// How many times ``refreshSearchIndex()`` asked for `PRAGMA data_version`.
    var dataVersionQueries = 0
    /// Rowids stay at or below this so that the search index can hold them.
    var rowIDCeiling = SearchIndex.maximumRowID
    /// `SearchIndex.minimumMergeThreshold` for indexes built here.
    var searchIndexMinimumMerge = SearchIndex.defaultMinimumMerge
    #else
    /// Rowids stay at or below this so that the search index can hold them.
    var rowIDCeiling: Int64 { SearchIndex.maximumRowID }
    /// `SearchIndex.minimumMergeThreshold` for indexes built here.
    var searchIndexMinimumMerge: Int { SearchIndex.defaultMinimumMerge }
    #endif

    /// FTS5's tokenizer, made on first use (it needs the connection).
    private var tokenizer: FTS5Tokenizer?

    func ftsTokenizer() throws(StoreError) -> FTS5Tokenizer {
        if let tokenizer { return tokenizer }
        let created = try FTS5Tokenizer(self)
        tokenizer = created
        return created
    }

    deinit {
        tokenizer = nil
        for statement in statements.values { sqlite3_finalize(statement) }
        // close_v2 never fails with SQLITE_BUSY: all statements are finalized above.
        sqlite3_close_v2(handle)
    }

    /// THE error helper: every SQLite result code passes through here.
    /// Returns `rc` when it is a success code (`OK`, `ROW`, `DONE`).
    @discardableResult
    func check(_ rc: Int32, _ function: StaticString) throws(StoreError) -> Int32 {
        if rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE { return rc }
        // The connection's extended code is more precise than what some calls return.
        let extended = sqlite3_extended_errcode(handle)
        let code = (extended & 0xFF) == (rc & 0xFF) ? extended : rc
        throw StoreError(function: "\(function)", code: code, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs one or more statements without results (schema, pragmas, BEGIN/COMMIT).
    func execute(_ sql: String) throws(StoreError) {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), "sqlite3_exec")
    }

    /// Runs `body` with the cached statement for `sql`, reset and unbound afterwards
    /// so that it holds no read lock and no stale parameters between calls.
    func withStatement<T>(_ sql: String, _ body: (Statement) throws(StoreError) -> T) throws(StoreError) -> T {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        return try body(Statement(connection: self, handle: statement))
    }

    private func prepared(_ sql: String) throws(StoreError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil),
                  "sqlite3_prepare_v3")
        guard let statement else {
            throw StoreError(function: "sqlite3_prepare_v3", code: SQLITE_MISUSE, message: "empty statement: \(sql)")
        }
        statements[sql] = statement
        return statement
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction: committed when it
    /// returns, rolled back when it throws. IMMEDIATE takes the write lock up
    /// front, so a read-then-write (upsert) never fails half-way with BUSY.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try withStatement("BEGIN IMMEDIATE") { statement throws(StoreError) in try statement.run() }
        pendingIndexChanges.removeAll()
        // The write lock came with a read transaction, so the version is current.
        let fileVersion = fileDataVersion()
        if fileVersion == nil || fileVersion != fileVersionAfterCommit { entryCountByApp.removeAll() }
        do {
            let result = try body()
            try withStatement("COMMIT") { statement throws(StoreError) in try statement.run() }
            fileVersionAfterCommit = fileDataVersion()
            applyPendingIndexChanges()
            return result
        } catch {
            pendingIndexChanges.removeAll()
            // Inserts counted rows the rollback takes back.
            entryCountByApp.removeAll()
            // A failed COMMIT can leave the transaction open; after some errors
            // (SQLITE_FULL, IOERR) SQLite has already rolled back, so ignore the result.
            if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }

    /// Runs `body` in one read transaction (`BEGIN` … `COMMIT`).
    ///
    /// Why: in WAL mode every statement outside a transaction takes and
    /// drops its own read lock on the shared-memory index, two `fcntl`
    /// calls; a Search that loads 20 hits paid that 21 times.
    func readTransaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try withStatement("BEGIN") { statement throws(StoreError) in try statement.run() }
        do {
            let result = try body()
            try withStatement("COMMIT") { statement throws(StoreError) in try statement.run() }
            return result
        } catch {
            if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            throw error
        }
    }

    /// No transaction is open (SQLite rolls one back by itself after some errors).
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Rows changed by the last INSERT/UPDATE/DELETE (not counting triggers).
    var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Reads a single-value pragma as text.
    func pragma(_ name: String) throws(StoreError) -> String {
        try withStatement("PRAGMA \(name)") { statement throws(StoreError) in
            try statement.step() ? statement.text(0) : ""
        }
    }
}

/// A borrowed view of a cached prepared statement; valid inside
/// ``SQLiteConnection/withStatement(_:_:)`` only.
struct Statement {
    unowned let connection: SQLiteConnection
    let handle: OpaquePointer

    /// Advances; `true` while there is a row.
    func step() throws(StoreError) -> Bool {
        try connection.check(sqlite3_step(handle), "sqlite3_step") == SQLITE_ROW
    }

    /// Steps a statement that returns no rows.
    func run() throws(StoreError) {
        while try step() {}
    }

    func bind(_ index: Int32, _ value: String) throws(StoreError) {
        let count = Int32(value.utf8.count)
        let rc = value.withCString { csqlite_bind_text_transient(handle, index, $0, count) }
        try connection.check(rc, "sqlite3_bind_text")
    }

    func bind(_ index: Int32, _ value: Int64) throws(StoreError) {
        try connection.check(sqlite3_bind_int64(handle, index, value), "sqlite3_bind_int64")
    }

    func bind(_ index: Int32, _ value: Int) throws(StoreError) { try bind(index, Int64(value)) }

    func bind(_ index: Int32, _ value: Bool) throws(StoreError) { try bind(index, Int64(value ? 1 : 0)) }

    func bind(_ index: Int32, _ value: [UInt8]) throws(StoreError) {
        let rc = value.withUnsafeBytes { buffer in
            // A nil pointer would bind NULL, not an empty blob.
            buffer.baseAddress.map { csqlite_bind_blob_transient(handle, index, $0, Int32(buffer.count)) }
                ?? sqlite3_bind_zeroblob(handle, index, 0)
        }
        try connection.check(rc, "sqlite3_bind_blob")
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    func text(_ column: Int32) -> String {
        // sqlite3_column_text before sqlite3_column_bytes, as SQLite documents.
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The column's blob, valid until the next step/reset: decode it inside `body`.
    func withBlob<T, E: Error>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? pointer : nil, count: count))
    }
}
