// SPDX-License-Identifier: Apache-2.0
@testable import ActivityStore
import Testing
import TypedValues

/// `saveGroup`: many saves in one transaction, each on its own savepoint.
@Suite struct GroupSaveTests {
    private func search(_ store: ActivityStore, _ query: String) throws -> [String] {
        try store.search(query: query, limit: 0, appID: nil, activityTypes: [], now: baseTime + day).map(\.activity.title)
    }

    /// A trigger added from a second connection makes saves titled `title` fail inside the transaction.
    private func poison(_ directory: TemporaryDirectory, title: String, raise: String = "ABORT") throws {
        let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
        try db.execute("""
            CREATE TRIGGER poison BEFORE INSERT ON entries WHEN new.title = '\(title)'
            BEGIN SELECT RAISE(\(raise), 'poisoned for the test'); END;
            """)
    }

    @Test func aGroupSavesLikeOneSaveEach() throws {
        let grouped = try ActivityStore.inMemory()
        let single = try ActivityStore.inMemory()
        let records = [
            record(id: "doc", title: "Garden plan", keywords: ["roses"]),
            record(app: "com.example.Other", id: "doc", title: "Garden other"),
            record(title: "Anonymous note"),
            record(id: "doc", title: "Garden plan revised"),
        ]
        let results = try grouped.saveGroup(records.enumerated().map { .init(record: $1, now: baseTime + Int64($0) * hour) })
        let ids = try results.map { try $0.get() }
        let singleIDs = try records.enumerated().map { try single.save($1, at: baseTime + Int64($0) * hour) }

        // The same (app, persistent identifier) twice in one group is one entry, used twice.
        #expect(ids[0] == ids[3])
        #expect(Set(ids).count == 3)
        #expect(try grouped.count() == 3)
        let entry = try #require(try grouped.load(savedID: ids[0], now: baseTime + day))
        let singleEntry = try #require(try single.load(savedID: singleIDs[0], now: baseTime + day))
        #expect(entry.title == "Garden plan revised")
        #expect(entry.useCount == 2 && singleEntry.useCount == 2)
        #expect(entry.lastUsed == singleEntry.lastUsed)
        #expect(entry.created == singleEntry.created)
        for query in ["garden", "roses", "note", "revised", "plan"] {
            #expect(try search(grouped, query) == search(single, query), "query \(query)")
        }
    }

    @Test func aFailingSaveLeavesTheOthersOfItsGroup() throws {
        let directory = try TemporaryDirectory()
        let store = try ActivityStore(directory: directory.path)
        try store.save(record(id: "before", title: "Before the group"), at: baseTime)
        try store.save(record(app: "com.example.Trimmed", id: "old", title: "Undeletable"), at: baseTime)
        try store.save(record(app: "com.example.Trimmed", id: "new", title: "Existing entry", keywords: ["venom"]), at: baseTime)
        // The save itself succeeds (and queues its index changes: out with the old entry, in with
        // the new one); the trim after it fails.
        let db = try SQLiteConnection(path: directory.path + "/" + ActivityStore.fileName)
        try db.execute("""
            CREATE TRIGGER poison BEFORE DELETE ON entries WHEN old.title = 'Undeletable'
            BEGIN SELECT RAISE(ABORT, 'poisoned for the test'); END;
            """)
        // The index is (re)built now, after the other connection's write, so the group's
        // changes are applied to it rather than read back from the file.
        #expect(try search(store, "before") == ["Before the group"])

        let results = try store.saveGroup([
            .init(record: record(id: "a", title: "Kept alpha"), now: baseTime + 1),
            .init(record: record(app: "com.example.Trimmed", id: "new", title: "Renamed entry"),
                  now: baseTime + 2, keepingPerApp: 1),
            .init(record: record(id: "b", title: "Kept beta"), now: baseTime + 3),
        ])
        #expect(results.count == 3)
        #expect((try? results[0].get()) != nil)
        #expect((try? results[2].get()) != nil)
        guard case .failure(let error) = results[1] else {
            Issue.record("the poisoned save succeeded")
            return
        }
        #expect(error.description.contains("poisoned for the test"))

        #expect(try store.count() == 5)
        #expect(try search(store, "kept").sorted() == ["Kept alpha", "Kept beta"])
        // The savepoint took back the row's change and its index changes alike.
        #expect(try search(store, "renamed").isEmpty)
        #expect(try search(store, "venom") == ["Existing entry"])
        #expect(try search(store, "undeletable") == ["Undeletable"])
    }

    @Test func aTransactionSQLiteAbandonsKeepsNoneOfTheGroup() throws {
        let directory = try TemporaryDirectory()
        let store = try ActivityStore(directory: directory.path)
        try store.save(record(id: "before", title: "Before the group"), at: baseTime)
        // RAISE(ROLLBACK) ends the whole transaction, as a full disk can.
        try poison(directory, title: "Poisoned entry", raise: "ROLLBACK")

        #expect(throws: StoreError.self) {
            try store.saveGroup([
                .init(record: record(id: "a", title: "Lost alpha"), now: baseTime + 1),
                .init(record: record(id: "p", title: "Poisoned entry"), now: baseTime + 2),
                .init(record: record(id: "b", title: "Lost beta"), now: baseTime + 3),
            ])
        }
        #expect(try store.count() == 1)
        #expect(try search(store, "lost").isEmpty)
        #expect(try search(store, "before") == ["Before the group"])
        // The store goes on: the next group commits.
        let after = try store.saveGroup([.init(record: record(id: "c", title: "After the failure"), now: baseTime + 4)])
        #expect((try? after[0].get()) != nil)
        #expect(try search(store, "after") == ["After the failure"])
    }

    @Test func aGroupOfOneFailsAsAWhole() throws {
        let directory = try TemporaryDirectory()
        let store = try ActivityStore(directory: directory.path)
        try poison(directory, title: "Poisoned entry")
        #expect(throws: StoreError.self) {
            try store.saveGroup([.init(record: record(id: "p", title: "Poisoned entry"), now: baseTime)])
        }
        #expect(try store.count() == 0)
    }

    @Test func eachSaveKeepsItsAppWithinTheLimit() throws {
        let store = try ActivityStore.inMemory()
        let saves = (0..<5).map { index in
            ActivityStore.GroupedSave(record: record(id: "doc-\(index)", title: "Entry \(index)"),
                                      now: baseTime + Int64(index) * hour, keepingPerApp: 2)
        }
        let other = ActivityStore.GroupedSave(record: record(app: "com.example.Other", title: "Elsewhere"),
                                              now: baseTime, keepingPerApp: 2)
        let results = try store.saveGroup(saves + [other])
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(try store.count() == 3)
        #expect(try search(store, "entry").sorted() == ["Entry 3", "Entry 4"])
        #expect(try search(store, "elsewhere") == ["Elsewhere"])
    }

    @Test func anAppAtItsLimitLosesOnlyItsOldestEntries() throws {
        let store = try ActivityStore.inMemory()
        try store.save(record(app: "com.example.Other", id: "other", title: "Elsewhere"), at: baseTime)
        for index in 0..<6 {
            _ = try store.saveGroup([.init(record: record(id: "doc-\(index)", title: "Entry \(index)"),
                                           now: baseTime + Int64(index) * hour, keepingPerApp: 3)])
        }
        // Used again: no longer the oldest.
        _ = try store.saveGroup([.init(record: record(id: "doc-3", title: "Entry 3"), now: baseTime + 9 * hour, keepingPerApp: 3)])
        _ = try store.saveGroup([.init(record: record(id: "doc-6", title: "Entry 6"), now: baseTime + 10 * hour, keepingPerApp: 3)])
        #expect(try search(store, "entry").sorted() == ["Entry 3", "Entry 5", "Entry 6"])
        #expect(try search(store, "elsewhere") == ["Elsewhere"])
    }

    @Test func entriesAnotherConnectionDeletedAreNotCountedWhenTrimming() throws {
        let directory = try TemporaryDirectory()
        let store = try ActivityStore(directory: directory.path)
        for index in 0..<3 {
            _ = try store.saveGroup([.init(record: record(id: "doc-\(index)", title: "Entry \(index)"),
                                           now: baseTime + Int64(index) * hour, keepingPerApp: 3)])
        }
        // A second daemon (a restart) forgets two of them; this one counted three.
        let other = try ActivityStore(directory: directory.path)
        #expect(try other.delete(appID: "com.example.Editor", persistentIdentifiers: ["doc-1", "doc-2"]) == 2)
        _ = try store.saveGroup([.init(record: record(id: "doc-3", title: "Entry 3"), now: baseTime + 3 * hour, keepingPerApp: 3)])
        #expect(try search(store, "entry").sorted() == ["Entry 0", "Entry 3"])
    }

    @Test func savedIDsBeginWithTheirCreationTimeAndStayUnique() throws {
        let sameMicrosecond = (0..<1000).map { _ in ActivityStore.newSavedID(now: baseTime) }
        #expect(Set(sameMicrosecond).count == 1000)
        #expect(sameMicrosecond.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
        #expect(sameMicrosecond.allSatisfy { $0.hasPrefix(String(baseTime, radix: 16).leftPadded(to: 13)) })
        let later = ActivityStore.newSavedID(now: baseTime + 1)
        #expect(sameMicrosecond.allSatisfy { $0 < later })
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
