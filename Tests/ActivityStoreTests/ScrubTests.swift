// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TypedValues
@testable import ActivityStore

/// `secure_delete = ON` and a WAL checkpoint after a forget: what they cost,
/// against FAST and no checkpoint, on the same data in the same run.
@Suite struct ScrubTests {
    static func contains(_ directory: String, _ needle: String) -> Bool {
        let bytes = Data(needle.utf8)
        return ["", "-wal", "-shm"].contains { suffix in
            FileManager.default.contents(atPath: directory + "/" + ActivityStore.fileName + suffix)?.range(of: bytes) != nil
        }
    }

    func filledStore(_ directory: String, secureDelete: String) throws -> ActivityStore {
        let store = try ActivityStore(directory: directory)
        try store.setSecureDelete(secureDelete)
        let records = (0..<4000).map { n in
            record(app: n % 2 == 0 ? "com.example.Editor" : "com.example.Viewer", id: "e\(n)", title: "entry \(n) wombat-title",
                   description: "description \(n) " + String(repeating: "d", count: 400))
        }
        _ = try store.saveBatch(records, at: baseTime)
        return store
    }

    @Test func forgettingCostWithAndWithoutScrubbing() throws {
        let fastDirectory = try TemporaryDirectory()
        let fast = try filledStore(fastDirectory.path, secureDelete: "FAST")
        var started = Date()
        let fastDeleted = try fast.deleteAll(appID: "com.example.Editor")
        let fastSeconds = Date().timeIntervalSince(started)

        let scrubbedDirectory = try TemporaryDirectory()
        let scrubbed = try filledStore(scrubbedDirectory.path, secureDelete: "ON")
        #expect(Self.contains(scrubbedDirectory.path, "entry 0 wombat-title"))
        started = Date()
        let scrubbedDeleted = try scrubbed.deleteAll(appID: "com.example.Editor")
        let deleteSeconds = Date().timeIntervalSince(started)
        #expect(try scrubbed.scrubDeletedContent())
        let scrubbedSeconds = Date().timeIntervalSince(started)

        #expect(fastDeleted == 2000 && scrubbedDeleted == 2000)
        print(String(format: "forget 2000 of 4000 entries: secure_delete=FAST, no checkpoint %.2f ms; secure_delete=ON %.2f ms, + checkpoint(TRUNCATE) %.2f ms in all",
                     fastSeconds * 1000, deleteSeconds * 1000, scrubbedSeconds * 1000))
        #expect(!Self.contains(scrubbedDirectory.path, "entry 0 wombat-title"), "a forgotten title is still in the files")
        #expect(Self.contains(scrubbedDirectory.path, "entry 1 wombat-title"), "the other app's entries stay")
        print("forget without scrubbing leaves the title on disk: \(Self.contains(fastDirectory.path, "entry 0 wombat-title"))")
    }

    /// A file an older build wrote (secure_delete FAST, no mark): what it
    /// deleted is still in free pages until the store, opened by this
    /// build, rewrites the file once.
    @Test func fileFromAnOlderBuildIsRewrittenOnce() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/" + ActivityStore.fileName
        do {
            let old = try filledStore(directory.path, secureDelete: "FAST")
            // Descriptions long enough for overflow pages, which FAST frees without zeroing.
            _ = try old.saveBatch((0..<200).map { n in
                record(app: "com.example.Editor", id: "long\(n)", title: "long \(n)",
                       description: String(repeating: "o", count: 6000) + " wombat-overflow \(n)")
            }, at: baseTime)
            #expect(try old.deleteAll(appID: "com.example.Editor") == 2200)
        }
        do {
            // Older builds left the header's application ID at 0.
            let raw = try SQLiteConnection(path: file)
            try raw.execute("PRAGMA application_id = 0")
        }
        #expect(Self.contains(directory.path, "wombat-overflow 7"), "the older build's forgotten description is in a free page")
        let started = Date()
        do { _ = try ActivityStore(directory: directory.path) }
        let seconds = Date().timeIntervalSince(started)
        // The same file again, marked now: the open that every later start pays.
        let reopened = Date()
        do { _ = try ActivityStore(directory: directory.path) }
        let baseline = Date().timeIntervalSince(reopened)
        print(String(format: "opening a file of 2000 live and 2200 deleted entries an older build wrote: %.1f ms with the one-time rewrite, %.1f ms for the next open", seconds * 1000, baseline * 1000))
        #expect(!Self.contains(directory.path, "wombat-overflow 7") && !Self.contains(directory.path, "entry 0 wombat-title"),
                "text forgotten before the upgrade is still in the files")
        #expect(Self.contains(directory.path, "entry 1 wombat-title"), "live entries stay")
        let mark = try SQLiteConnection(path: file).pragma("application_id")
        #expect(mark == String(ActivityStore.zeroedFreePagesMark))
    }
}
