// SPDX-License-Identifier: Apache-2.0
@testable import ActivityStore
import FuzzGenerators
import Foundation
import Testing
import TypedValues

@Suite struct SuggestionTests {
    func ids(_ hits: [SuggestionHit]) -> [String] { hits.map(\.activity.record.persistentIdentifier) }

    @Test func onlyPredictionEligibleAndUnexpired() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "yes", title: "A"), at: baseTime)
        try store.save(record(id: "no", title: "B", prediction: false), at: baseTime)
        try store.save(record(id: "gone", title: "C", expiration: baseTime + hour), at: baseTime)
        #expect(Set(ids(try store.suggestions(limit: 0, appID: nil, now: baseTime + 1))) == ["yes", "gone"])
        #expect(ids(try store.suggestions(limit: 0, appID: nil, now: baseTime + hour)) == ["yes"])
    }

    @Test func frequencyWins() throws {
        let store = try ActivityStore.inMemory()
        for _ in 0..<8 { try store.save(record(id: "often", title: "Often"), at: baseTime) }
        try store.save(record(id: "once", title: "Once"), at: baseTime)
        let hits = try store.suggestions(limit: 0, appID: nil, now: baseTime + hour)
        #expect(ids(hits) == ["often", "once"])
        #expect(hits[0].activity.useCount == 8)
        #expect(abs(hits[0].score / hits[1].score - 4) < 1e-9) // 1 + log2(8) = 4 vs 1
    }

    @Test func recencyWins() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "old", title: "Old"), at: baseTime - 30 * day)
        try store.save(record(id: "new", title: "New"), at: baseTime - day)
        let hits = try store.suggestions(limit: 0, appID: nil, now: baseTime)
        #expect(ids(hits) == ["new", "old"])
        // One half-life (7 days) apart would be a factor of 2; 29 days is 2^(29/7).
        #expect(abs(hits[0].score / hits[1].score - exp2(29.0 / 7)) < 1e-6)
    }

    @Test func timeOfDayAffinity() throws {
        let store = try ActivityStore.inMemory(hourOfDay: ActivityStore.utcHour)
        for d in 1...3 {
            try store.save(record(id: "morning", title: "Mail"), at: baseTime - Int64(d) * day + 9 * hour)
            try store.save(record(id: "evening", title: "Movies"), at: baseTime - Int64(d) * day + 21 * hour)
        }
        #expect(ids(try store.suggestions(limit: 0, appID: nil, now: baseTime + 9 * hour + hour / 2)) == ["morning", "evening"])
        #expect(ids(try store.suggestions(limit: 0, appID: nil, now: baseTime + 20 * hour)) == ["evening", "morning"])
        // Midnight wraps: 23:00 is within an hour of 00:xx.
        try store.save(record(id: "late", title: "Late"), at: baseTime - 2 * day + 23 * hour)
        let atMidnight = try store.suggestions(limit: 0, appID: nil, now: baseTime + hour / 2)
        #expect(ids(atMidnight).first == "late")
    }

    @Test func appFilterAndLimits() throws {
        let store = try ActivityStore.inMemory()
        try store.saveBatch((0..<250).map { record(app: $0 % 2 == 0 ? "com.example.A" : "com.example.B", id: "\($0)") },
                            at: baseTime)
        #expect(try store.suggestions(limit: 0, appID: nil, now: baseTime).count == 10)
        #expect(try store.suggestions(limit: 3, appID: nil, now: baseTime).count == 3)
        #expect(try store.suggestions(limit: 500, appID: nil, now: baseTime).count == 200)
        let onlyB = try store.suggestions(limit: 200, appID: "com.example.B", now: baseTime)
        #expect(onlyB.count == 125)
        #expect(onlyB.allSatisfy { $0.activity.record.appID == "com.example.B" })
        #expect(try store.suggestions(limit: 0, appID: "com.example.C", now: baseTime).isEmpty)
    }

    /// The early exit must not change the answer: compare with scores computed
    /// from the documented formula over every entry.
    @Test func boundedScanMatchesBruteForce() throws {
        let store = try ActivityStore.inMemory(hourOfDay: ActivityStore.utcHour)
        var generator = SplitMix64(seed: 7)
        var expected: [String: Double] = [:]
        let now = baseTime + 100 * day + 10 * hour
        for i in 0..<400 {
            let uses = Int.random(in: 1...40, using: &generator)
            let last = now - Int64.random(in: 0...(90 * day), using: &generator)
            let useHour = Int64((last / hour) % 24)
            for u in 0..<uses {
                // All uses of an entry at the same hour of day, the last at `last`.
                try store.save(record(id: "\(i)"), at: last - Int64(uses - 1 - u) * day)
            }
            let distance = min(abs(useHour - 10), 24 - abs(useHour - 10))
            let affinity = distance <= 1 ? 1.0 : 0.2
            let age = Double(now - last)
            expected["\(i)"] = (1 + log2(Double(uses))) * exp2(-age / ActivityStore.recencyHalfLife) * affinity
        }
        let bruteForce = expected.sorted { $0.value > $1.value }.prefix(10)
        let hits = try store.suggestions(limit: 10, appID: nil, now: now)
        #expect(ids(hits) == bruteForce.map(\.key))
        for (hit, want) in zip(hits, bruteForce) {
            #expect(abs(hit.score - want.value) < 1e-9 * want.value)
        }
    }
}

/// One app's suggestions walk `entries_by_app` (schema version 5), which also
/// holds the app's ineligible entries: those must be skipped, not counted.
@Suite struct AppSuggestionIndexTests {
    @Test func anAppsIneligibleEntriesAreSkippedWhereverTheyAreInTheWalk() throws {
        let store = try ActivityStore.inMemory()
        for n in 0..<30 {
            try store.save(record(app: "com.example.A", id: "\(n)", prediction: n % 3 == 0), at: baseTime + Int64(n))
        }
        try store.save(record(app: "com.example.B", id: "other"), at: baseTime + 100)
        let hits = try store.suggestions(limit: 200, appID: "com.example.A", now: baseTime + 100)
        #expect(hits.map(\.activity.record.persistentIdentifier) == stride(from: 27, through: 0, by: -3).map { "\($0)" })
        #expect(try store.suggestions(limit: 200, appID: "com.example.B", now: baseTime + 100).count == 1)
    }

    @Test func aVersion4DatabaseLosesTheRedundantIndexAndKeepsItsEntries() throws {
        let directory = try TemporaryDirectory()
        do {
            let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
            try db.execute(Schema.version1 + Schema.version2 + Schema.version3 + Schema.version4)
            try insertEntryOfAnOlderSchema(db, savedID: "saved-old", persistentID: "old", title: "Old plan", lastUsed: baseTime - 10)
            try db.execute("PRAGMA user_version = 4")
        }
        let before = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        #expect(try before.info().userVersion == ActivityStore.schemaVersion)
        try before.save(record(app: "com.example.A", id: "kept", title: "Kept"), at: baseTime)
        try before.save(record(app: "com.example.A", id: "search-only", prediction: false), at: baseTime + 1)

        let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
        let indexes = try db.withStatement(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL ORDER BY name"
        ) { statement throws(StoreError) in
            var names: [String] = []
            while try statement.step() { names.append(statement.text(0)) }
            return names
        }
        #expect(!indexes.contains("entries_for_prediction_by_app"))
        #expect(indexes.contains("entries_by_app") && indexes.contains("entries_for_prediction"))
        let reopened = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        #expect(try reopened.suggestions(limit: 0, appID: "com.example.A", now: baseTime + 2)
            .map(\.activity.record.persistentIdentifier) == ["kept", "old"])
        #expect(try reopened.count() == 3)
    }
}

/// The suggestion scan's early exit reads `use_count_ceiling` (schema
/// version 6) instead of the exact highest use count: it must stay at or
/// above every prediction-eligible entry's count, through every kind of write.
@Suite struct UseCountCeilingTests {
    func ceiling(_ directory: TemporaryDirectory) throws -> Int64 {
        let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
        return try db.withStatement("SELECT value FROM use_count_ceiling") { statement throws(StoreError) in
            try statement.step() ? statement.int64(0) : -1
        }
    }

    func indexes(_ directory: TemporaryDirectory) throws -> [String] {
        let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
        return try db.withStatement(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL ORDER BY name"
        ) { statement throws(StoreError) in
            var names: [String] = []
            while try statement.step() { names.append(statement.text(0)) }
            return names
        }
    }

    @Test func aVersion5DatabaseLosesTheUseCountIndexAndStartsFromItsHighestEligibleCount() throws {
        let directory = try TemporaryDirectory()
        do {
            let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
            try db.execute(Schema.version1 + Schema.version2 + Schema.version3 + Schema.version4 + Schema.version5)
            try insertEntryOfAnOlderSchema(db, savedID: "saved-often", persistentID: "often", title: "Often", lastUsed: baseTime - 20)
            try insertEntryOfAnOlderSchema(db, savedID: "saved-once", persistentID: "once", title: "Once", lastUsed: baseTime - 10)
            try insertEntryOfAnOlderSchema(db, savedID: "saved-hidden", persistentID: "hidden", title: "Hidden", lastUsed: baseTime - 5)
            try db.execute("""
                UPDATE entries SET use_count = 7 WHERE persistent_id = 'often';
                UPDATE entries SET use_count = 20, eligible_prediction = 0 WHERE persistent_id = 'hidden';
                PRAGMA user_version = 5;
                """)
        }
        let store = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        #expect(try store.info().userVersion == ActivityStore.schemaVersion)
        #expect(try ceiling(directory) == 7)
        let names = try indexes(directory)
        #expect(!names.contains("entries_by_use_count"))
        #expect(names.contains("entries_for_prediction") && names.contains("entries_by_app"))
        #expect(try store.count() == 3)
        #expect(try store.suggestions(limit: 0, appID: nil, now: baseTime).map(\.activity.record.persistentIdentifier)
            == ["often", "once"])
    }

    @Test func writesRaiseItDeletesKeepItAndForgettingEverythingResetsIt() throws {
        let directory = try TemporaryDirectory()
        let store = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        try store.save(record(id: "new"), at: baseTime)
        #expect(try ceiling(directory) == 0) // one use scores like none
        for n in 0..<5 { try store.save(record(id: "often", title: "Often"), at: baseTime + Int64(n)) }
        #expect(try ceiling(directory) == 5)
        for n in 0..<9 { try store.save(record(id: "hidden", prediction: false), at: baseTime + Int64(n)) }
        #expect(try ceiling(directory) == 5)
        // Becoming eligible with its count already above the ceiling.
        try store.save(record(id: "hidden"), at: baseTime + 10, countsAsUse: false)
        #expect(try ceiling(directory) == 9)
        try store.importBridged(source: "recent-files", changes: [
            .init(key: 1, stamp: 1, save: (record: record(id: "imported", title: "Imported"), useCount: 12, lastUsed: baseTime + 11)),
        ])
        #expect(try ceiling(directory) == 12)

        // A stale, higher ceiling: the same answer as the documented formula.
        #expect(try store.delete(appID: "com.example.Editor", persistentIdentifiers: ["imported", "hidden"]) == 2)
        #expect(try ceiling(directory) == 12)
        let now = baseTime + 12
        let hits = try store.suggestions(limit: 0, appID: nil, now: now)
        #expect(hits.map(\.activity.record.persistentIdentifier) == ["often", "new"])
        let recency = exp2(-Double(now - (baseTime + 4)) / ActivityStore.recencyHalfLife)
        #expect(abs(hits[0].score - (1 + log2(5.0)) * recency * (0.2 + 0.8 * 1)) < 1e-9)

        try store.deleteAll()
        #expect(try ceiling(directory) == 0)
    }
}
