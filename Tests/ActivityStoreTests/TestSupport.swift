// SPDX-License-Identifier: Apache-2.0
@testable import ActivityStore
import Foundation
import TypedValues

/// A fresh directory under the system temporary directory, removed at deinit.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/activitystore-test-XXXXXX").utf8CString)
        guard let result = mkdtemp(&template) else { throw POSIXError(.EIO) }
        path = String(cString: result)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func mode(of relativePath: String) -> Int? {
        var info = stat()
        guard stat(path + "/" + relativePath, &info) == 0 else { return nil }
        return Int(info.st_mode & 0o7777)
    }
}

let hour: Int64 = 3_600_000_000
let day: Int64 = 24 * hour
/// 2024-06-03 00:00:00 UTC, a Monday.
let baseTime: Int64 = 1_717_372_800_000_000

func record(app: String = "com.example.Editor", type: String? = nil, id: String = "", title: String = "",
            description: String = "", keywords: [String] = [], search: Bool = true, prediction: Bool = true,
            expiration: Int64 = 0, phrase: String = "", properties: TypedValue? = nil) -> SavedActivityRecord {
    SavedActivityRecord(
        appID: app, activityType: type ?? app + ".edit", persistentIdentifier: id, title: title,
        contentDescription: description, keywords: keywords, webpageURL: "",
        eligibleForSearch: search, eligibleForPrediction: prediction, expirationDate: expiration,
        suggestedInvocationPhrase: phrase,
        properties: properties ?? .stringVariantDictionary([("title", .string(title))]))
}

/// One prediction- and search-eligible entry of `com.example.A`, written with
/// SQL as an older build's schema holds it, for the migration tests.
func insertEntryOfAnOlderSchema(_ db: SQLiteConnection, savedID: String, persistentID: String, title: String,
                                lastUsed: Int64) throws(StoreError) {
    try db.withStatement("""
        INSERT INTO entries (saved_id, app_id, activity_type, persistent_id, title, content_description,
            keywords, keyword_list, webpage_url, eligible_search, eligible_prediction, expiration, phrase,
            properties, use_count, last_used, created, use_hours)
        VALUES (?1, 'com.example.A', 'com.example.A.edit', ?2, ?3, '', '', ?4, '', 1, 1, 0, '', ?5, 1, ?6, ?6, x'')
        """) { statement throws(StoreError) in
        try statement.bind(1, savedID)
        try statement.bind(2, persistentID)
        try statement.bind(3, title)
        try statement.bind(4, try! TypedValueCodec.encode(.stringArray([])))
        try statement.bind(5, try! TypedValueCodec.encode(.stringVariantDictionary([])))
        try statement.bind(6, lastUsed)
        try statement.run()
    }
}
