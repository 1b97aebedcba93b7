// SPDX-License-Identifier: Apache-2.0
@testable import ActivityStore
import FuzzGenerators
import Foundation
import TypedValues
import Testing

/// The in-memory search index against a brute-force reading of the same
/// entries: random saves, re-saves, deletes and expiry, then random queries,
/// each answered both ways.
@Suite struct SearchIndexTests {
    /// Words whose folding is plain (lowercase, Latin diacritics removed), so
    /// that the reference below can fold them with Foundation.
    static let vocabulary = ["café", "Cafe", "cafés", "Résumé", "resume", "naïve", "ÜBER", "über", "uber",
                             "report", "reports", "repo", "Quarterly", "quart", "plan", "plans", "planet",
                             "zebra", "x1", "2024", "ñandú", "garden", "gardening", "notes", "Note"]
    static let apps = ["com.example.A", "com.example.B", "org.example.C"]

    struct Model {
        var app: String
        var type: String
        var title: String
        var keywords: [String]
        var description: String
        var searchable: Bool
        var expiration: Int64
        var lastUsed: Int64
    }

    static func fold(_ word: String) -> String {
        word.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased()
    }

    static func tokens(_ text: String) -> [String] {
        text.split { !$0.isLetter && !$0.isNumber }.map { fold(String($0)) }
    }

    /// The contract's matching and ranking, computed from scratch.
    static func expected(_ models: [String: Model], query: String, app: String?, types: [String],
                         now: Int64) -> [String: Double] {
        let words = tokens(query)
        guard let last = words.last else { return [:] }
        let exact = Set(words.dropLast())
        var scores: [String: Double] = [:]
        for (key, model) in models where model.searchable && (model.expiration == 0 || model.expiration > now) {
            if let app, model.app != app { continue }
            if !types.isEmpty, !types.contains(model.type) { continue }
            let columns = [tokens(model.title), tokens(model.keywords.joined(separator: "\n")), tokens(model.description)]
            let all = columns.flatMap { $0 }
            guard exact.allSatisfy(all.contains), all.contains(where: { $0.hasPrefix(last) }) else { continue }
            var relevance = 0.0
            for (column, (weight, average)) in zip(columns, [(3.0, 8.0), (2.0, 8.0), (1.0, 24.0)]) {
                let hits = Double(Set(column).filter { exact.contains($0) || $0.hasPrefix(last) }.count)
                guard hits > 0 else { continue }
                relevance += weight * hits * 2.2 / (hits + 1.2 * (0.25 + 0.75 * Double(column.count) / average))
            }
            let age = max(0, Double(now - model.lastUsed))
            scores[key] = relevance * (1 + exp2(-age / ActivityStore.recencyHalfLife))
        }
        return scores
    }

    /// With the default merge threshold the walk stays in the recent
    /// postings after the first search; with 16 it merges every few writes,
    /// so stale frozen postings and merges are on the path.
    @Test(arguments: [1, 2, 3, 4], [4096, 16])
    func agreesWithABruteForceReading(seed: UInt64, mergeThreshold: Int) throws {
        var random = SplitMix64(seed: seed)
        let store = try ActivityStore.inMemory()
        store.lowerSearchIndexMergeThreshold(to: mergeThreshold)
        var models: [String: Model] = [:]   // by persistent identifier
        var savedIDs: [String: String] = [:]
        var now = baseTime
        var queriesWithResults = 0
        func words(_ range: ClosedRange<Int>) -> String {
            (0..<Int.random(in: range, using: &random)).map { _ in Self.vocabulary.randomElement(using: &random)! }
                .joined(separator: [" ", ", ", "-", " (", "'"].randomElement(using: &random)!)
        }
        for step in 0..<600 {
            now += Int64.random(in: 1...(3 * hour), using: &random)
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<70:
                let id = "e\(Int.random(in: 0..<80, using: &random))"
                let app = models[id]?.app ?? Self.apps.randomElement(using: &random)!
                let type = app + [".edit", ".view"].randomElement(using: &random)!
                let counts = Bool.random(using: &random)
                var model = Model(app: app, type: type, title: words(0...5), keywords: (0..<Int.random(in: 0...3, using: &random)).map { _ in words(1...2) },
                                  description: words(0...12), searchable: Int.random(in: 0..<5, using: &random) > 0,
                                  expiration: Int.random(in: 0..<6, using: &random) == 0 ? now + Int64.random(in: 1...(2 * day), using: &random) : 0,
                                  lastUsed: now)
                if !counts, let old = models[id] { model.lastUsed = old.lastUsed }
                let saved = try store.save(record(app: app, type: type, id: id, title: model.title, description: model.description,
                                                  keywords: model.keywords, search: model.searchable, expiration: model.expiration),
                                           at: now, countsAsUse: counts || models[id] == nil)
                models[id] = model
                savedIDs[id] = saved
            case 70..<78:
                if let id = models.keys.randomElement(using: &random) {
                    #expect(try store.delete(savedID: savedIDs[id]!))
                    models[id] = nil
                }
            case 78..<80:
                let app = Self.apps.randomElement(using: &random)!
                let removed = try store.deleteAll(appID: app)
                #expect(removed == models.values.filter { $0.app == app }.count)
                models = models.filter { $0.value.app != app }
            case 80..<83:
                let purged = try store.purgeExpired(now: now)
                #expect(purged == models.values.filter { $0.expiration != 0 && $0.expiration <= now }.count)
                models = models.filter { $0.value.expiration == 0 || $0.value.expiration > now }
            case 83..<85:
                if let id = models.keys.randomElement(using: &random) {
                    #expect(try store.delete(appID: models[id]!.app, persistentIdentifiers: [id]) == 1)
                    models[id] = nil
                }
            default:
                let app = Bool.random(using: &random) ? nil : Self.apps.randomElement(using: &random)!
                let types = Int.random(in: 0..<4, using: &random) == 0 ? [Self.apps.randomElement(using: &random)! + ".view"] : []
                var query = words(1...3)
                if Bool.random(using: &random), let last = query.last, last.isLetter {
                    query = String(query.dropLast(Int.random(in: 0..<3, using: &random)))
                }
                let expected = Self.expected(models, query: query, app: app, types: types, now: now)
                let hits = try store.search(query: query, limit: 200, appID: app, activityTypes: types, now: now)
                let found = Dictionary(uniqueKeysWithValues: hits.map { ($0.activity.persistentIdentifier, $0.score) })
                #expect(Set(found.keys) == Set(expected.keys), "step \(step): \(query) app \(app ?? "-") types \(types)")
                for (id, score) in found {
                    if let want = expected[id] { #expect(abs(score - want) <= 1e-9 * want, "step \(step): \(query) \(id)") }
                }
                #expect(zip(hits, hits.dropFirst()).allSatisfy { $0.score >= $1.score })
                if !expected.isEmpty { queriesWithResults += 1 }
            }
        }
        // The random walk must have asked questions with answers, not only empty ones.
        #expect(queriesWithResults >= 20)
    }

    /// Prefixes are byte ranges of UTF-8: other scripts, in the frozen and
    /// the recent part alike.
    @Test(arguments: [4096, 1])
    func prefixesOfNonLatinWords(mergeThreshold: Int) throws {
        let store = try ActivityStore.inMemory()
        store.lowerSearchIndexMergeThreshold(to: mergeThreshold)
        func titles(_ query: String) throws -> Set<String> {
            Set(try store.search(query: query, limit: 0, appID: nil, activityTypes: [], now: baseTime + 100).map(\.activity.title))
        }
        try store.save(record(id: "1", title: "Привет мир"), at: baseTime)
        #expect(try titles("прив") == ["Привет мир"]) // builds the index: these two are frozen
        try store.save(record(id: "2", title: "привычка"), at: baseTime + 1)
        try store.save(record(id: "3", title: "пример 東京 Ωmega"), at: baseTime + 2)
        #expect(try titles("прив") == ["Привет мир", "привычка"])
        #expect(try titles("при") == ["Привет мир", "привычка", "пример 東京 Ωmega"])
        #expect(try titles("примерх").isEmpty)
        #expect(try titles("мир при") == ["Привет мир"])
        #expect(try titles("東京") == ["пример 東京 Ωmega"])
        #expect(try titles("ωme") == ["пример 東京 Ωmega"])
    }

    @Test func anotherConnectionsWritesAreSeen() throws {
        let directory = try TemporaryDirectory()
        let first = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        try first.save(record(id: "1", title: "shared garden"), at: baseTime)
        #expect(try first.search(query: "garden", limit: 0, appID: nil, activityTypes: [], now: baseTime).count == 1)
        let second = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        try second.save(record(id: "2", title: "second garden"), at: baseTime + 1)
        try second.delete(savedID: try #require(try second.search(query: "shared", limit: 0, appID: nil, activityTypes: [], now: baseTime).first).activity.savedID)
        #expect(try first.search(query: "garden", limit: 0, appID: nil, activityTypes: [], now: baseTime + 2)
            .map(\.activity.title) == ["second garden"])
    }

    @Test func searchesConfirmTheIndexByTheRowsTheyLoad() throws {
        let directory = try TemporaryDirectory()
        let store = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        func search(_ query: String) throws -> [String] {
            try store.search(query: query, limit: 0, appID: nil, activityTypes: [], now: baseTime + 10).map(\.activity.title)
        }
        try store.save(record(id: "1", title: "quiet garden"), at: baseTime)
        #expect(try search("garden") == ["quiet garden"])
        let asked = store.dataVersionQueries
        #expect(try search("garden") == ["quiet garden"])
        #expect(try search("quiet garden") == ["quiet garden"])
        #expect(store.dataVersionQueries == asked)
        // Its own commit changes the file's version: the next search asks once.
        try store.save(record(id: "2", title: "second garden"), at: baseTime + 1)
        #expect(try Set(search("garden")) == ["quiet garden", "second garden"])
        #expect(store.dataVersionQueries == asked + 1)
        #expect(try search("garden").count == 2)
        #expect(store.dataVersionQueries == asked + 1)
        // Nothing loaded, nothing read: an empty answer is confirmed by asking.
        #expect(try search("orchard").isEmpty)
        #expect(store.dataVersionQueries == asked + 2)
    }

    @Test func anotherConnectionsWritesAreSeenWhenTheOldAnswerStillLoads() throws {
        let directory = try TemporaryDirectory()
        let first = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        func search(_ query: String) throws -> Set<String> {
            Set(try first.search(query: query, limit: 0, appID: nil, activityTypes: [], now: baseTime + 10).map(\.activity.title))
        }
        try first.save(record(id: "1", title: "shared garden"), at: baseTime)
        try first.save(record(id: "2", title: "shared lawn"), at: baseTime)
        #expect(try search("garden") == ["shared garden"])
        #expect(try search("garden") == ["shared garden"]) // answered without asking
        let second = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        // An insert: the old index's one hit still loads, but it is not the whole answer.
        try second.save(record(id: "3", title: "second garden"), at: baseTime + 1)
        #expect(try search("garden") == ["shared garden", "second garden"])
        #expect(try search("garden") == ["shared garden", "second garden"])
        // An update in place: the old index's hit loads, but no longer matches.
        try second.save(record(id: "2", title: "shared meadow"), at: baseTime + 2, countsAsUse: false)
        #expect(try search("lawn").isEmpty)
        #expect(try search("meadow") == ["shared meadow"])
        #expect(try search("meadow") == ["shared meadow"]) // answered without asking
        // A word the old index has never seen: its empty answer is not kept.
        try second.save(record(id: "4", title: "fresh tulip"), at: baseTime + 3)
        #expect(try search("tulip") == ["fresh tulip"])
    }

    @Test func rowidsAreRenumberedBeforeTheyOutgrowTheIndex() throws {
        let store = try ActivityStore.inMemory()
        store.lowerRowIDCeiling(to: 10)
        for n in 0..<8 { try store.save(record(id: "\(n)", title: "entry \(n) common"), at: baseTime + Int64(n)) }
        #expect(try store.search(query: "common", limit: 0, appID: nil, activityTypes: [], now: baseTime + 100).count == 8)
        // Each use moves an entry to max + 1: past 10 the store renumbers 1…8 and goes on.
        for n in 0..<20 { try store.save(record(id: "\(n % 4)", title: "entry \(n % 4) common used"), at: baseTime + 10 + Int64(n)) }
        let hits = try store.search(query: "common", limit: 0, appID: nil, activityTypes: [], now: baseTime + 100)
        #expect(hits.count == 8)
        let lastUses = Dictionary(uniqueKeysWithValues: hits.map { ($0.activity.persistentIdentifier, $0.activity.lastUsed) })
        #expect(lastUses == ["0": baseTime + 26, "1": baseTime + 27, "2": baseTime + 28, "3": baseTime + 29,
                             "4": baseTime + 4, "5": baseTime + 5, "6": baseTime + 6, "7": baseTime + 7])
        #expect(try store.search(query: "used", limit: 0, appID: nil, activityTypes: [], now: baseTime + 100).count == 4)
        for n in 0..<3 { try store.save(record(id: "new\(n)", title: "fresh common"), at: baseTime + 50 + Int64(n)) }
        #expect(try store.search(query: "fresh", limit: 0, appID: nil, activityTypes: [], now: baseTime + 100).count == 3)
        #expect(try store.search(query: "common", limit: 0, appID: nil, activityTypes: [], now: baseTime + 100).count == 11)
    }

    @Test func aVersion2DatabaseIsMigratedAndItsEntriesFound() throws {
        let directory = try TemporaryDirectory()
        do {
            let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
            try db.execute(Schema.version1 + Schema.version2)
            try insertEntryOfAnOlderSchema(db, savedID: "saved1", persistentID: "p1", title: "Old garden plan", lastUsed: baseTime)
            try db.execute("PRAGMA user_version = 2")
        }
        let store = try ActivityStore(directory: directory.path, hourOfDay: ActivityStore.utcHour)
        #expect(try store.info().userVersion == ActivityStore.schemaVersion)
        #expect(try store.search(query: "gard", limit: 0, appID: nil, activityTypes: [], now: baseTime).map(\.activity.savedID) == ["saved1"])
        try store.save(record(app: "com.example.A", id: "p1", title: "New garden plan"), at: baseTime + 1)
        #expect(try store.search(query: "new gard", limit: 0, appID: nil, activityTypes: [], now: baseTime + 1).count == 1)
    }
}

@Suite struct BridgedImportTests {
    @Test func importsWithTheSourcesCountsWithoutDuplicatesAndRemembersStamps() throws {
        let store = try ActivityStore.inMemory()
        func record(_ title: String) -> SavedActivityRecord {
            SavedActivityRecord(appID: "com.example.Docs", activityType: "org.example.UserActivity.open-document",
                                persistentIdentifier: "file:///d/a.txt", title: title, eligibleForSearch: true, eligibleForPrediction: true)
        }
        let key = ActivityStore.bridgedKey("file:///d/a.txt")
        try store.importBridged(source: "recent-files", changes: [.init(key: key, stamp: 1000, save: (record("Alpha"), 3, 1000))])
        try store.importBridged(source: "recent-files", changes: [.init(key: key, stamp: 2000, save: (record("Alpha two"), 4, 2000))])
        #expect(try store.count() == 1)
        let hit = try #require(try store.search(query: "alpha", limit: 0, appID: nil, activityTypes: [], now: 3000).first)
        #expect(hit.activity.useCount == 4)
        #expect(hit.activity.lastUsed == 2000)
        #expect(try store.bridgedStamps(source: "recent-files").stamps == [key: 2000])
        try store.importBridged(source: "recent-files", changes: [], removing: [key])
        #expect(try store.bridgedStamps(source: "recent-files").stamps.isEmpty)
        try store.resetBridges(watermark: 5000, sources: ["recent-files"])
        #expect(try store.bridgedStamps(source: "recent-files").watermark == 5000)
    }
}
