// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// What the daemon saves: the saved copy of an activity (on Donate, or when
/// an activity eligible for search or prediction becomes current).
public struct SavedActivityRecord: Sendable, Equatable {
    /// The owning app's desktop-file ID (`com.example.Editor`).
    public var appID: String
    public var activityType: String
    /// The key of the saved copy within its app; `""` means none, and then
    /// every save creates a new entry.
    public var persistentIdentifier: String
    public var title: String
    public var contentDescription: String
    public var keywords: [String]
    /// `""` when unset.
    public var webpageURL: String
    public var eligibleForSearch: Bool
    public var eligibleForPrediction: Bool
    /// Unix time in microseconds; 0 = never expires.
    public var expirationDate: Int64
    public var suggestedInvocationPhrase: String
    /// The saved copy's full `a{sv}` (with `user-info` already trimmed to the
    /// required keys by the caller), stored losslessly and returned as given.
    public var properties: TypedValue

    public init(appID: String, activityType: String, persistentIdentifier: String = "",
                title: String = "", contentDescription: String = "", keywords: [String] = [],
                webpageURL: String = "", eligibleForSearch: Bool = false, eligibleForPrediction: Bool = false,
                expirationDate: Int64 = 0, suggestedInvocationPhrase: String = "",
                properties: TypedValue = .dictionary(keyType: "s", valueType: "v", [])) {
        self.appID = appID
        self.activityType = activityType
        self.persistentIdentifier = persistentIdentifier
        self.title = title
        self.contentDescription = contentDescription
        self.keywords = keywords
        self.webpageURL = webpageURL
        self.eligibleForSearch = eligibleForSearch
        self.eligibleForPrediction = eligibleForPrediction
        self.expirationDate = expirationDate
        self.suggestedInvocationPhrase = suggestedInvocationPhrase
        self.properties = properties
    }
}

/// A stored entry: the record plus its identity and usage.
///
/// The record's fields read directly through dynamic member lookup
/// (`activity.title`, `activity.appID`).
@dynamicMemberLookup
public struct SavedActivity: Sendable, Equatable {
    /// 32 lowercase hex digits (128 random bits); stable for an
    /// (app, persistent identifier) pair across updates and restarts.
    public var savedID: String
    public var record: SavedActivityRecord
    /// Uses counted so far (saturates at `UInt32.max`).
    public var useCount: UInt32
    /// Unix µs of the last counted use (of the creation, before any use).
    public var lastUsed: Int64
    /// Unix µs of the first save.
    public var created: Int64

    public init(savedID: String, record: SavedActivityRecord, useCount: UInt32, lastUsed: Int64, created: Int64) {
        self.savedID = savedID
        self.record = record
        self.useCount = useCount
        self.lastUsed = lastUsed
        self.created = created
    }

    public subscript<T>(dynamicMember keyPath: KeyPath<SavedActivityRecord, T>) -> T {
        record[keyPath: keyPath]
    }
}

/// What a search result shows of a saved activity: all of it but the
/// properties, which no result carries and which are the costliest column
/// to decode (a tree of typed values).
public struct SavedActivitySummary: Sendable, Equatable {
    public var savedID: String
    public var appID: String
    public var activityType: String
    public var persistentIdentifier: String
    public var title: String
    public var contentDescription: String
    public var keywords: [String]
    public var webpageURL: String
    public var useCount: UInt32
    public var lastUsed: Int64
    public var created: Int64
}

extension SavedActivity {
    public var summary: SavedActivitySummary {
        SavedActivitySummary(savedID: savedID, appID: record.appID, activityType: record.activityType,
                             persistentIdentifier: record.persistentIdentifier, title: record.title,
                             contentDescription: record.contentDescription, keywords: record.keywords,
                             webpageURL: record.webpageURL, useCount: useCount, lastUsed: lastUsed, created: created)
    }
}

/// A saved activity as a ranked answer; ``score`` is higher for a better one.
public struct ScoredActivity<Activity: Sendable & Equatable>: Sendable, Equatable {
    public var activity: Activity
    public var score: Double

    public init(activity: Activity, score: Double) {
        self.activity = activity
        self.score = score
    }
}

/// One search result (see
/// ``ActivityStore/search(query:limit:appID:activityTypes:now:)``).
public typealias SearchHit = ScoredActivity<SavedActivitySummary>

/// One suggestion (see ``ActivityStore/suggestions(limit:appID:now:)``).
public typealias SuggestionHit = ScoredActivity<SavedActivity>

/// Settings of the open database, for diagnostics and tests.
public struct StoreInfo: Sendable, Equatable {
    /// `wal` for a file database, `memory` for ``ActivityStore/inMemory(hourOfDay:)``.
    public var journalMode: String
    /// `1` = NORMAL.
    public var synchronous: Int
    public var foreignKeys: Bool
    /// The schema version (`PRAGMA user_version`).
    public var userVersion: Int
    /// Size of the main database file's content in bytes (page count × page size),
    /// not counting the WAL.
    public var databaseBytes: Int
}
