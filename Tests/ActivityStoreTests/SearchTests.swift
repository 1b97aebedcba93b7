// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import Testing
import TypedValues

@Suite struct SearchTests {
    func titles(_ store: ActivityStore, _ query: String, limit: Int = 0, app: String? = nil, types: [String] = [],
                now: Int64 = baseTime) throws -> [String] {
        try store.search(query: query, limit: limit, appID: app, activityTypes: types, now: now).map(\.activity.title)
    }

    @Test func accentAndCaseInsensitive() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "1", title: "Café au lait"), at: baseTime)
        try store.save(record(id: "2", title: "naïve résumé"), at: baseTime)
        try store.save(record(id: "3", title: "plain cafe"), at: baseTime)
        try store.save(record(id: "4", title: "decomposed cafe\u{301}s"), at: baseTime)
        #expect(Set(try titles(store, "cafe")) == ["Café au lait", "plain cafe", "decomposed cafe\u{301}s"])
        #expect(Set(try titles(store, "CAFÉ")) == ["Café au lait", "plain cafe", "decomposed cafe\u{301}s"])
        #expect(try titles(store, "RESUME naive") == ["naïve résumé"])
        #expect(try titles(store, "RÉSUMÉ") == ["naïve résumé"])
    }

    @Test func everyWordMustMatchAndOnlyTheLastIsAPrefix() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "1", title: "Quarterly report"), at: baseTime)
        try store.save(record(id: "2", title: "Quarterly budget"), at: baseTime)
        #expect(try titles(store, "quarterly report") == ["Quarterly report"])
        #expect(try titles(store, "report quar") == ["Quarterly report"])
        #expect(try titles(store, "quar rep").isEmpty)      // "quar" is not the last word
        #expect(try titles(store, "quarterly rep") == ["Quarterly report"])
        #expect(try titles(store, "quarterly report annual").isEmpty)
        #expect(Set(try titles(store, "q")) == ["Quarterly report", "Quarterly budget"])
    }

    @Test func searchesTitleKeywordsAndDescriptionOnly() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(app: "com.example.Mail", id: "1", title: "Inbox", description: "Messages from Alice",
                              keywords: ["email", "correspondence"]), at: baseTime)
        #expect(try titles(store, "alice") == ["Inbox"])
        #expect(try titles(store, "correspondence") == ["Inbox"])
        #expect(try titles(store, "email inbox alice") == ["Inbox"])
        #expect(try titles(store, "mail").isEmpty)        // the app ID is not searched
        #expect(try titles(store, "edit").isEmpty)        // nor the activity type
        // nor the hidden scope tokens
        let scope = "A" + "com.example.Mail".utf8.map { String($0, radix: 16, uppercase: true) }.joined()
        #expect(try titles(store, scope).isEmpty)
        #expect(try titles(store, "scope").isEmpty)
    }

    @Test func operatorsAndSyntaxArePlainText() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "1", title: "Black OR White"), at: baseTime)
        try store.save(record(id: "2", title: "NOT NEAR AND"), at: baseTime)
        try store.save(record(id: "3", title: "title: colon (paren) \"quoted\" star*"), at: baseTime)
        let nasty = [
            "OR", "NOT", "AND", "NEAR", "a OR b", "NOT white", "NEAR(black white)", "\"", "\"\"", "\"black", "*", "**",
            "(", ")", "(()", ":", "title:black", "{title}: black", "- black", "-title: black", "^black", "black*",
            "+", "a\"b\"c", "\u{0}", "black\u{0}white", "🙂", "🙂 black", "\\", "'", "'; DROP TABLE entries; --",
            String(repeating: "(", count: 10_000), String(repeating: "x ", count: 5_000), "e\u{301}\u{301}\u{301}",
            "\"\u{301}", "𞤀𞤁", "ǅ", "\u{FFFF}", "black\u{202E}white",
        ]
        for query in nasty {
            _ = try store.search(query: query, limit: 0, appID: nil, activityTypes: [], now: baseTime)
        }
        #expect(try titles(store, "or white") == ["Black OR White"])
        #expect(try titles(store, "black OR") == ["Black OR White"])
        #expect(try titles(store, "not near and") == ["NOT NEAR AND"])
        #expect(try titles(store, "NOT white").isEmpty)            // "not" is a word that must match
        #expect(try titles(store, "\"quoted\" (paren) title:") == ["title: colon (paren) \"quoted\" star*"])
        #expect(try titles(store, "star*") == ["title: colon (paren) \"quoted\" star*"])
        #expect(try store.count() == 3)
    }

    @Test func queriesWithoutWordsReturnNothing() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "1", title: "Anything"), at: baseTime)
        for query in ["", " ", "\t\n", "!!!", "\"*():", "🙂🙂", "—", "\u{301}"] {
            #expect(try titles(store, query).isEmpty, "\(query)")
        }
    }

    @Test func appAndTypeFilters() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(app: "com.example.A", type: "com.example.A.edit", id: "1", title: "report one"), at: baseTime)
        try store.save(record(app: "com.example.A", type: "com.example.A.view", id: "2", title: "report two"), at: baseTime)
        try store.save(record(app: "com.example.AB", type: "com.example.AB.edit", id: "3", title: "report three"), at: baseTime)
        #expect(Set(try titles(store, "report", app: "com.example.A")) == ["report one", "report two"])
        #expect(try titles(store, "report", app: "com.example.AB") == ["report three"])
        #expect(try titles(store, "report", app: "com.example").isEmpty)
        #expect(try titles(store, "report", types: ["com.example.A.view"]) == ["report two"])
        #expect(Set(try titles(store, "report", types: ["com.example.A.view", "com.example.AB.edit"])) == ["report two", "report three"])
        #expect(try titles(store, "report", app: "com.example.A", types: ["com.example.AB.edit"]).isEmpty)
        #expect(try titles(store, "report", app: "com.example.A", types: ["com.example.A.edit", "com.example.AB.edit"]) == ["report one"])
    }

    @Test func eligibilityAndExpiry() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "hidden", title: "secret plan", search: false), at: baseTime)
        try store.save(record(id: "expiring", title: "secret meeting", expiration: baseTime + hour), at: baseTime)
        #expect(try titles(store, "secret") == ["secret meeting"])
        #expect(try titles(store, "secret", now: baseTime + hour).isEmpty)
        // Becoming eligible (an update) indexes it; becoming ineligible removes it.
        try store.save(record(id: "hidden", title: "secret plan", search: true), at: baseTime)
        #expect(Set(try titles(store, "secret")) == ["secret plan", "secret meeting"])
        try store.save(record(id: "hidden", title: "secret plan", search: false), at: baseTime, countsAsUse: false)
        #expect(try titles(store, "plan").isEmpty)
        try store.save(record(id: "hidden", title: "renamed", search: true), at: baseTime, countsAsUse: false)
        #expect(try titles(store, "plan").isEmpty)
        #expect(try titles(store, "renamed") == ["renamed"])
    }

    @Test func limitsAreClamped() throws {
        let store = try ActivityStore.inMemory()
        try store.saveBatch((0..<250).map { record(id: "\($0)", title: "common \($0)") }, at: baseTime)
        #expect(try titles(store, "common", limit: 0).count == 20)
        #expect(try titles(store, "common", limit: 5).count == 5)
        #expect(try titles(store, "common", limit: 1000).count == 200)
        // The last word is a prefix: 17 and 170…179.
        #expect(Set(try titles(store, "common 17")) == Set(["common 17"] + (170...179).map { "common \($0)" }))
        #expect(try titles(store, "common 249") == ["common 249"])
    }

    @Test func rankingPrefersTitleMatchesAndRecentUse() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "desc", title: "Notes", description: "about the garden and other things"), at: baseTime)
        try store.save(record(id: "title", title: "Garden", description: "notes"), at: baseTime)
        let hits = try store.search(query: "garden", limit: 0, appID: nil, activityTypes: [], now: baseTime)
        #expect(hits.map(\.activity.persistentIdentifier) == ["title", "desc"])
        #expect(hits[0].score > hits[1].score && hits[1].score > 0)

        try store.save(record(id: "old", title: "Tomato seeds"), at: baseTime - 60 * day)
        try store.save(record(id: "new", title: "Tomato seeds"), at: baseTime - hour)
        let ranked = try store.search(query: "tomato", limit: 0, appID: nil, activityTypes: [], now: baseTime)
        #expect(ranked.map(\.activity.persistentIdentifier) == ["new", "old"])
        #expect(ranked[0].score > ranked[1].score * 1.9)
        #expect(ranked[0].activity.lastUsed == baseTime - hour)
    }
}

/// The last word matches every indexed term it begins.
@Suite struct TermExpansionTests {
    func titles(_ store: ActivityStore, _ query: String) throws -> [String] {
        try store.search(query: query, limit: 200, appID: nil, activityTypes: [], now: baseTime + 1000).map(\.activity.title)
    }

    @Test func longLastWordsMatchEveryIndexedExtension() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "1", title: "everywhere notes"), at: baseTime)
        try store.save(record(id: "2", title: "Everywheres unique"), at: baseTime)
        try store.save(record(id: "3", title: "everyday"), at: baseTime)
        try store.save(record(id: "4", title: "Évérywhérê accents"), at: baseTime)
        #expect(Set(try titles(store, "everywhere")) == ["everywhere notes", "Everywheres unique", "Évérywhérê accents"])
        #expect(Set(try titles(store, "notes everyw")) == ["everywhere notes"])
        #expect(try titles(store, "everywherez").isEmpty)
        #expect(Set(try titles(store, "every")) == ["everywhere notes", "Everywheres unique", "everyday", "Évérywhérê accents"])
    }

    @Test func termsOfUpdatedEntriesAreFoundAndOfNonSearchableOnesAreNot() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "1", title: "first draft"), at: baseTime)
        try store.save(record(id: "1", title: "second version"), at: baseTime + 1)
        try store.save(record(id: "2", title: "hidden versions", search: false), at: baseTime + 1)
        #expect(try titles(store, "versio") == ["second version"])
        #expect(try titles(store, "draft").isEmpty)
    }

    @Test func aPrefixWithManyExtensionsFindsEveryOne() throws {
        // More new terms than the index keeps unsorted, so some are found in
        // its sorted list and some among the recent ones.
        let store = try ActivityStore.inMemory()
        let count = 700
        #expect(try titles(store, "plan").isEmpty) // builds the index before the saves
        for n in 0..<count {
            try store.save(record(id: "\(n)", title: "plan\(n)x"), at: baseTime + Int64(n))
        }
        #expect(try store.search(query: "plan", limit: 200, appID: nil, activityTypes: [], now: baseTime + 1000).count == 200)
        let expected = (0..<count).map { "plan\($0)x" }.filter { $0.hasPrefix("plan6") }
        #expect(expected.count == 111)
        #expect(Set(try titles(store, "plan6")) == Set(expected))
        #expect(try titles(store, "plan699") == ["plan699x"])
        #expect(try titles(store, "plan6990").isEmpty)
    }

    @Test func expansionWorksWithFilters() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(id: "1", title: "meeting minutes"), at: baseTime)
        #expect(try store.search(query: "meeting minut", limit: 10, appID: "com.example.Other", activityTypes: [], now: baseTime).isEmpty)
    }
}
