// SPDX-License-Identifier: Apache-2.0
import CSQLite

/// The database layout and its upgrades.
///
/// Why `PRAGMA user_version` and an ordered list: the file lives for years in
/// the user's state directory and is opened by whatever version of the
/// daemon is installed next. Each migration runs exactly once, in order, in
/// its own transaction together with the version bump, so a crash or a full
/// disk during an upgrade leaves the previous, consistent schema (never a
/// half-migrated one), and the next start simply retries. Shipped migrations
/// are never edited, only appended. A file from a newer daemon (version above
/// what we know) is refused rather than "downgraded".
enum Schema {
    /// Index `i` upgrades a database from `user_version` `i` to `i + 1`.
    static let migrations: [String] = [version1, version2, version3, version4, version5, version6]

    static var currentVersion: Int { migrations.count }

    /// Version 1.
    ///
    /// - `entries.id` is the FTS rowid and is *reassigned* (to max + 1) each
    ///   time an entry is used, so rowid order is last-use order. That lets a
    ///   search walk FTS5 matches newest-first (`ORDER BY rowid DESC LIMIT n`,
    ///   which FTS5 does lazily) instead of ranking every match. The stable
    ///   public handle is `saved_id`. (Falling negative ids with ascending
    ///   order would walk a prefix query ~1 ms faster, but FTS5 flushes its
    ///   pending terms whenever a rowid is not larger than the last one
    ///   written: the index grew by half and writes slowed by a quarter.)
    /// - `use_hours` is a 24-bucket histogram (24 × UInt32, little-endian) of
    ///   the local hour of each use, for time-of-day affinity. Chosen over a
    ///   uses table: constant size per entry, updated in the same row write,
    ///   read with the row during a suggestion scan (no join, no pruning job),
    ///   and it holds exactly what the score needs; it does not record when
    ///   each use happened, which the score does not use.
    /// - `keywords` is the keyword list joined with newlines (what FTS5
    ///   indexes); `keyword_list` is the exact list (codec-encoded `as`).
    /// - `scope` is a virtual column of two FTS tokens, `A<hex app id>` and
    ///   `T<hex activity type>`: filtering by app and type then happens inside
    ///   the FTS5 query (doclist intersection, still newest-first) instead of
    ///   after it, so a confined app searching a common word stays fast.
    /// - The FTS5 table is external-content (`content='entries'`), kept in
    ///   sync by triggers that index only search-eligible rows; a
    ///   `'rebuild'` can always regenerate it from `entries`.
    /// - `prefix='1 2 3'`: one- to three-letter prefixes expand to thousands
    ///   of terms (30 ms at 100k entries without an index, 2.5 ms with);
    ///   longer prefixes expand to few terms. Each prefix length costs about
    ///   the size of the main index, so more are not worth it.
    static let version1 = """
        CREATE TABLE entries (
            id INTEGER PRIMARY KEY,
            saved_id TEXT NOT NULL UNIQUE,
            app_id TEXT NOT NULL,
            activity_type TEXT NOT NULL,
            persistent_id TEXT NOT NULL,
            title TEXT NOT NULL,
            content_description TEXT NOT NULL,
            keywords TEXT NOT NULL,
            keyword_list BLOB NOT NULL,
            webpage_url TEXT NOT NULL,
            eligible_search INTEGER NOT NULL CHECK (eligible_search IN (0, 1)),
            eligible_prediction INTEGER NOT NULL CHECK (eligible_prediction IN (0, 1)),
            expiration INTEGER NOT NULL,
            phrase TEXT NOT NULL,
            properties BLOB NOT NULL,
            use_count INTEGER NOT NULL CHECK (use_count >= 0),
            last_used INTEGER NOT NULL,
            created INTEGER NOT NULL,
            use_hours BLOB NOT NULL,
            scope TEXT GENERATED ALWAYS AS ('A' || hex(app_id) || ' T' || hex(activity_type)) VIRTUAL
        ) STRICT;

        CREATE UNIQUE INDEX entries_by_persistent_id ON entries(app_id, persistent_id) WHERE persistent_id != '';
        CREATE INDEX entries_by_app ON entries(app_id, last_used);
        CREATE INDEX entries_for_prediction ON entries(last_used) WHERE eligible_prediction = 1;
        CREATE INDEX entries_for_prediction_by_app ON entries(app_id, last_used) WHERE eligible_prediction = 1;
        CREATE INDEX entries_by_use_count ON entries(use_count) WHERE eligible_prediction = 1;
        CREATE INDEX entries_by_expiration ON entries(expiration) WHERE expiration != 0;

        CREATE VIRTUAL TABLE entries_fts USING fts5(
            title, keywords, content_description, scope,
            content = 'entries', content_rowid = 'id',
            tokenize = "unicode61 remove_diacritics 2",
            prefix = '1 2 3'
        );

        CREATE TRIGGER entries_fts_insert AFTER INSERT ON entries WHEN new.eligible_search = 1 BEGIN
            INSERT INTO entries_fts(rowid, title, keywords, content_description, scope)
            VALUES (new.id, new.title, new.keywords, new.content_description, new.scope);
        END;

        CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries WHEN old.eligible_search = 1 BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, keywords, content_description, scope)
            VALUES ('delete', old.id, old.title, old.keywords, old.content_description, old.scope);
        END;

        CREATE TRIGGER entries_fts_update
        AFTER UPDATE OF id, title, keywords, content_description, app_id, activity_type, eligible_search ON entries
        WHEN old.id != new.id OR old.eligible_search != new.eligible_search
            OR old.title != new.title OR old.keywords != new.keywords
            OR old.content_description != new.content_description
            OR old.app_id != new.app_id OR old.activity_type != new.activity_type
        BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, title, keywords, content_description, scope)
            SELECT 'delete', old.id, old.title, old.keywords, old.content_description, old.scope
            WHERE old.eligible_search = 1;
            INSERT INTO entries_fts(rowid, title, keywords, content_description, scope)
            SELECT new.id, new.title, new.keywords, new.content_description, new.scope
            WHERE new.eligible_search = 1;
        END;
        """

    /// Version 2: a dictionary of every term the full-text index holds.
    ///
    /// Why: the last word of a query is also a prefix, and FTS5 (3.40)
    /// evaluates a prefix longer than its prefix indexes by building the
    /// whole merged doclist of the matching terms in memory: a word that is
    /// in every one of 100k entries costs ~3.5 ms before anything is ranked.
    /// An OR of the exact terms is iterated lazily, newest first, and stops
    /// after the candidates (~0.1 ms). The store tokenizes with FTS5's own
    /// tokenizer when it indexes an entry and adds its terms here; terms are
    /// never removed on delete (a stale term only matches nothing), so the
    /// table is always a superset of the index's vocabulary.
    static let version2 = """
        CREATE TABLE terms (term TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE VIRTUAL TABLE temp.entries_vocabulary USING fts5vocab(main, entries_fts, 'row');
        INSERT OR IGNORE INTO terms(term) SELECT term FROM temp.entries_vocabulary;
        DROP TABLE temp.entries_vocabulary;
        """

    /// Version 3: search no longer uses FTS5 (see `SearchIndex`): its table,
    /// the triggers that fed it, the term dictionary and the scope column go.
    ///
    /// Why drop rather than keep them as a fallback: every Donate paid for
    /// four FTS5 indexes (the terms and three prefix lengths) and the term
    /// dictionary, about half of the file at 100 000 entries, for queries
    /// that no longer read them. The pages they held are reused by later
    /// writes (the file does not shrink by itself; `VACUUM` cannot run inside
    /// the migration's transaction).
    static let version3 = """
        DROP TRIGGER entries_fts_insert;
        DROP TRIGGER entries_fts_delete;
        DROP TRIGGER entries_fts_update;
        DROP TABLE entries_fts;
        DROP TABLE terms;
        ALTER TABLE entries DROP COLUMN scope;
        """

    /// Version 4: what bridges from other desktop histories (the recent-files
    /// bridge) have seen, so that an entry forgotten, blocked or recorded
    /// while paused is not imported again until the source records a new use.
    /// `key` is a 64-bit hash of the source's own key (a URI), not the URI:
    /// the table must not keep, in clear, history the user asked to forget.
    /// A row with key 0 holds the source's watermark (uses up to `stamp` are
    /// never imported; set by ForgetAll, which empties the rest).
    static let version4 = """
        CREATE TABLE bridged (
            source TEXT NOT NULL,
            key INTEGER NOT NULL,
            stamp INTEGER NOT NULL,
            PRIMARY KEY (source, key)
        ) WITHOUT ROWID;
        """

    /// Version 5: `entries_for_prediction_by_app` goes; a suggestion for one
    /// app walks `entries_by_app` (the same columns) and skips the entries
    /// that are not prediction-eligible.
    ///
    /// Why: every saved entry that is prediction-eligible (the default) wrote
    /// one page of this index into the WAL on each Donate, a seventh of the
    /// transaction's frames, to serve a query that `entries_by_app` answers
    /// just as fast while an app's entries are mostly eligible. The price is
    /// paid only by an app whose entries are mostly ineligible: its walk reads
    /// the ineligible rows too, bounded by `MaxSavedPerApplication` (1000 by
    /// default, ~0.4 ms); with the limit off and 100 000 entries of one app of
    /// which 1 % are eligible, ~37 ms instead of ~2 ms (measured side by side,
    /// `docs/benchmarks.md`).
    static let version5 = """
        DROP INDEX entries_for_prediction_by_app;
        """

    /// Version 6: `entries_by_use_count` goes; `use_count_ceiling` (one row)
    /// holds a number no prediction-eligible entry's use count exceeds.
    ///
    /// Why: the index served one query, the highest use count, which a
    /// suggestion scan needs only as an upper bound to stop early; yet every
    /// prediction-eligible Donate wrote a page of it into the WAL, and every
    /// repeated use moved the entry within it. The ceiling is raised in the
    /// same transaction as any write that sets a use count above it, and only
    /// then written; it is not lowered when entries are deleted (a higher
    /// bound only lets the scan read further, never changes its answer) except
    /// by forgetting everything. Use counts of 0 and 1 weigh the same
    /// (`Ranking.frequency`), so writes of those never touch it. Without the
    /// index, the exact maximum would cost a walk of every eligible row
    /// (~0.6 s at 100 000 entries); the ceiling is read in one row
    /// (`docs/benchmarks.md`).
    static let version6 = """
        CREATE TABLE use_count_ceiling (value INTEGER NOT NULL);
        INSERT INTO use_count_ceiling (value)
            SELECT coalesce(max(use_count), 0) FROM entries WHERE eligible_prediction = 1;
        DROP INDEX entries_by_use_count;
        """

    /// Brings the database to ``currentVersion``, one transaction per step.
    static func migrate(_ db: SQLiteConnection) throws(StoreError) {
        while true {
            let applied: Bool = try db.transaction { () throws(StoreError) -> Bool in
                // Read inside the write transaction: another process opening the
                // same file at the same moment cannot apply the same step twice.
                let version = Int(try db.pragma("user_version")) ?? 0
                guard version <= currentVersion else {
                    throw StoreError(function: "ActivityStore.migrate", code: SQLITE_CANTOPEN,
                                     message: "the database has schema version \(version), newer than the \(currentVersion) this build knows; refusing to use it")
                }
                guard version < currentVersion else { return false }
                try db.execute(migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
                return true
            }
            if !applied { return }
        }
    }
}
