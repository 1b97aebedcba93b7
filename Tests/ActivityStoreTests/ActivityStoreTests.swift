// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import Testing
import TypedValues

@Suite struct ActivityStoreTests {
    @Test func createsPrivateDirectoriesAndFileWithWAL() throws {
        let temp = try TemporaryDirectory()
        let store = try ActivityStore(directory: temp.path + "/state/useractivity")
        try store.save(record(id: "a", title: "Hello"), at: baseTime)
        #expect(temp.mode(of: "state") == 0o700)
        #expect(temp.mode(of: "state/useractivity") == 0o700)
        #expect(temp.mode(of: "state/useractivity/activities.sqlite3") == 0o600)
        #expect(temp.mode(of: "state/useractivity/activities.sqlite3-wal") == 0o600)
        #expect(store.path == temp.path + "/state/useractivity/activities.sqlite3")
        let info = try store.info()
        #expect(info.journalMode == "wal")
        #expect(info.synchronous == 1)
        #expect(info.foreignKeys)
        #expect(info.userVersion == ActivityStore.schemaVersion)
    }

    @Test func aFileWhereTheDirectoryShouldBeIsAnError() throws {
        let temp = try TemporaryDirectory()
        _ = try ActivityStore(directory: temp.path + "/d")
        #expect(throws: StoreError.self) { try ActivityStore(directory: temp.path + "/d/activities.sqlite3/x") }
        do {
            _ = try ActivityStore(directory: temp.path + "/d/activities.sqlite3/x")
        } catch let error as StoreError {
            #expect(error.function == "mkdir")
            #expect(error.description.contains("mkdir failed"))
            #expect(!error.isDiskFull)
        }
    }

    @Test func reopeningKeepsEverything() throws {
        let temp = try TemporaryDirectory()
        let properties: TypedValue = .stringVariantDictionary([
            ("user-info", .variant(.stringVariantDictionary([("nan", .double(Double(bitPattern: 0x7FF8_0000_0000_0042)))]))),
        ])
        var savedID = ""
        do {
            let store = try ActivityStore(directory: temp.path, hourOfDay: ActivityStore.utcHour)
            savedID = try store.save(record(id: "doc-1", title: "Budget 2025", keywords: ["money", "plan"],
                                            phrase: "Open the budget", properties: properties), at: baseTime)
            try store.save(record(id: "doc-1", title: "Budget 2025"), at: baseTime + hour, countsAsUse: true)
        }
        let store = try ActivityStore(directory: temp.path, hourOfDay: ActivityStore.utcHour)
        #expect(try store.count() == 1)
        let loaded = try #require(try store.load(savedID: savedID, now: baseTime + 2 * hour))
        #expect(loaded.useCount == 2)
        #expect(loaded.lastUsed == baseTime + hour)
        #expect(loaded.created == baseTime)
        #expect(try store.search(query: "budg", limit: 0, appID: nil, activityTypes: [], now: baseTime).count == 1)
        #expect(try store.info().userVersion == ActivityStore.schemaVersion)
    }

    @Test func upsertBySamePersistentIdentifierKeepsTheSavedIDAndCountsUses() throws {
        let store = try ActivityStore.inMemory()
        let first = try store.save(record(id: "doc", title: "Draft", keywords: ["one"]), at: baseTime)
        let second = try store.save(record(id: "doc", title: "Final", keywords: ["two", "three"], phrase: "Say it"),
                                    at: baseTime + hour)
        #expect(first == second)
        #expect(first.count == 32 && first.allSatisfy(\.isHexDigit))
        #expect(try store.count() == 1)
        let loaded = try #require(try store.load(savedID: first, now: baseTime + hour))
        #expect(loaded.title == "Final")
        #expect(loaded.keywords == ["two", "three"])
        #expect(loaded.suggestedInvocationPhrase == "Say it")
        #expect(loaded.useCount == 2)
        #expect(loaded.lastUsed == baseTime + hour)
        #expect(loaded.created == baseTime)

        // Not a use: content changes, counters do not.
        try store.save(record(id: "doc", title: "Edited"), at: baseTime + 2 * hour, countsAsUse: false)
        let edited = try #require(try store.load(savedID: first, now: baseTime))
        #expect(edited.title == "Edited")
        #expect(edited.useCount == 2)
        #expect(edited.lastUsed == baseTime + hour)
        #expect(try store.search(query: "final", limit: 0, appID: nil, activityTypes: [], now: baseTime).isEmpty)
        #expect(try store.search(query: "edited", limit: 0, appID: nil, activityTypes: [], now: baseTime).count == 1)
    }

    @Test func samePersistentIdentifierInTwoAppsIsTwoEntries() throws {
        let store = try ActivityStore.inMemory()
        let a = try store.save(record(app: "com.example.A", id: "x", title: "One"), at: baseTime)
        let b = try store.save(record(app: "com.example.B", id: "x", title: "One"), at: baseTime)
        #expect(a != b)
        #expect(try store.count() == 2)
    }

    @Test func emptyPersistentIdentifierCreatesANewEntryEachTime() throws {
        let store = try ActivityStore.inMemory()
        let ids = try (0..<3).map { _ in try store.save(record(title: "Same"), at: baseTime) }
        #expect(Set(ids).count == 3)
        #expect(try store.count() == 3)
        #expect(try store.delete(appID: "com.example.Editor", persistentIdentifiers: [""]) == 0)
    }

    @Test func everyFieldRoundTrips() throws {
        let store = try ActivityStore.inMemory()
        let properties: TypedValue = .stringVariantDictionary([
            ("title", .string("Ünïcödé ✓")),
            ("user-info", .variant(.stringVariantDictionary([
                ("empty", .array(elementType: "(ii)", [])),
                ("n", .int16(-2)),
            ]))),
        ])
        var original = record(id: "p", title: "Ünïcödé ✓", description: "desc", keywords: ["k1", "k 2", ""],
                              expiration: baseTime + day, phrase: "phrase", properties: properties)
        original.webpageURL = "https://example.com/a?b=c"
        original.eligibleForPrediction = false
        let id = try store.save(original, at: baseTime)
        let loaded = try #require(try store.load(savedID: id, now: baseTime))
        #expect(loaded.record.appID == original.appID)
        #expect(loaded.record.activityType == original.activityType)
        #expect(loaded.record.persistentIdentifier == "p")
        #expect(loaded.record.title == original.title)
        #expect(loaded.record.contentDescription == "desc")
        #expect(loaded.record.keywords == ["k1", "k 2", ""])
        #expect(loaded.record.webpageURL == original.webpageURL)
        #expect(loaded.record.eligibleForSearch && !loaded.record.eligibleForPrediction)
        #expect(loaded.record.expirationDate == baseTime + day)
        #expect(loaded.record.suggestedInvocationPhrase == "phrase")
        #expect(loaded.record.properties.isIdentical(to: properties))
        #expect(loaded.savedID == id)
    }

    @Test func loadReturnsNilForUnknownOrExpired() throws {
        let store = try ActivityStore.inMemory()
        let id = try store.save(record(title: "Soon gone", expiration: baseTime + hour), at: baseTime)
        #expect(try store.load(savedID: "0123", now: baseTime) == nil)
        #expect(try store.load(savedID: id, now: baseTime + hour - 1) != nil)
        #expect(try store.load(savedID: id, now: baseTime + hour) == nil)
    }

    @Test func deletingByIdentifiersAndAllLeavesOtherAppsAlone() throws {
        let store = try ActivityStore.inMemory()
        for app in ["com.example.A", "com.example.B"] {
            for id in ["1", "2", "3"] { try store.save(record(app: app, id: id, title: "Doc \(id)"), at: baseTime) }
            try store.save(record(app: app, title: "anonymous"), at: baseTime)
        }
        #expect(try store.delete(appID: "com.example.A", persistentIdentifiers: ["1", "3", "missing", "1"]) == 2)
        #expect(try store.count() == 6)
        #expect(try store.search(query: "doc", limit: 0, appID: "com.example.B", activityTypes: [], now: baseTime).count == 3)
        #expect(try store.search(query: "doc", limit: 0, appID: "com.example.A", activityTypes: [], now: baseTime)
            .map(\.activity.persistentIdentifier) == ["2"])
        #expect(try store.deleteAll(appID: "com.example.A") == 2)
        #expect(try store.count() == 4)
        #expect(try store.search(query: "doc", limit: 0, appID: nil, activityTypes: [], now: baseTime).count == 3)
        #expect(try store.deleteAll(appID: "com.example.A") == 0)
        #expect(try store.deleteAll() == 4)
        #expect(try store.search(query: "doc", limit: 0, appID: nil, activityTypes: [], now: baseTime).isEmpty)
    }

    @Test func deleteBySavedID() throws {
        let store = try ActivityStore.inMemory()
        let id = try store.save(record(id: "x", title: "Keep me not"), at: baseTime)
        let other = try store.save(record(id: "y", title: "Keep me"), at: baseTime)
        #expect(try store.delete(savedID: id))
        #expect(try !store.delete(savedID: id))
        #expect(try store.load(savedID: id, now: baseTime) == nil)
        #expect(try store.load(savedID: other, now: baseTime) != nil)
        #expect(try store.search(query: "keep", limit: 0, appID: nil, activityTypes: [], now: baseTime).count == 1)
        // The same persistent identifier now makes a new entry with a new saved ID.
        #expect(try store.save(record(id: "x", title: "Back"), at: baseTime) != id)
    }

    @Test func purgeExpiredAndNextExpiration() throws {
        let store = try ActivityStore.inMemory()
        #expect(try store.nextExpiration() == nil)
        try store.save(record(id: "never", title: "Forever"), at: baseTime)
        try store.save(record(id: "soon", title: "Soon", expiration: baseTime + hour), at: baseTime)
        try store.save(record(id: "later", title: "Later", expiration: baseTime + day), at: baseTime)
        #expect(try store.nextExpiration() == baseTime + hour)
        #expect(try store.purgeExpired(now: baseTime + hour - 1) == 0)
        #expect(try store.purgeExpired(now: baseTime + hour) == 1)
        #expect(try store.nextExpiration() == baseTime + day)
        #expect(try store.purgeExpired(now: baseTime + 2 * day) == 1)
        #expect(try store.nextExpiration() == nil)
        #expect(try store.count() == 1)
    }

    @Test func privacyHelpers() throws {
        let store = try ActivityStore.inMemory()
        for i in 0..<5 { try store.save(record(id: "\(i)", title: "Entry \(i)"), at: baseTime + Int64(i) * day) }
        try store.save(record(app: "com.example.Other", id: "o", title: "Other"), at: baseTime)
        #expect(try store.trim(appID: "com.example.Editor", keeping: 3) == 2)
        let left = try store.search(query: "entry", limit: 0, appID: nil, activityTypes: [], now: baseTime)
        #expect(Set(left.map(\.activity.persistentIdentifier)) == ["2", "3", "4"])
        #expect(try store.delete(lastUsedFrom: baseTime + 3 * day, to: baseTime + 4 * day) == 1)
        #expect(try store.delete(lastUsedFrom: .min, to: baseTime + 1) == 1) // retention: the other app's entry
        #expect(try store.count() == 2)
    }

    @Test func limitClamping() {
        #expect(ActivityStore.clampedLimit(0, default: 20) == 20)
        #expect(ActivityStore.clampedLimit(0, default: 10) == 10)
        #expect(ActivityStore.clampedLimit(-3, default: 10) == 10)
        #expect(ActivityStore.clampedLimit(7, default: 20) == 7)
        #expect(ActivityStore.clampedLimit(200, default: 20) == 200)
        #expect(ActivityStore.clampedLimit(201, default: 20) == 200)
        #expect(ActivityStore.clampedLimit(.max, default: 20) == 200)
    }

    @Test func storeErrorClassification() {
        #expect(StoreError(function: "sqlite3_step", code: 13, message: "database or disk is full").isDiskFull)
        #expect(StoreError(function: "sqlite3_step", code: 8, message: "attempt to write a readonly database").isReadOnly)
        #expect(StoreError(function: "sqlite3_open_v2", code: 14, message: "unable to open database file").isReadOnly)
        let ioWrite = StoreError(function: "sqlite3_step", code: 10 | (3 << 8), message: "disk I/O error")
        #expect(!ioWrite.isDiskFull && !ioWrite.isReadOnly)
        #expect(ioWrite.description == "sqlite3_step failed: disk I/O error (SQLite result code 778, disk I/O error)")
    }
}
