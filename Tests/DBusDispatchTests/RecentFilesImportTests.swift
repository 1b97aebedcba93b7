// SPDX-License-Identifier: Apache-2.0
import SchedulerTestSupport
import DBusKit
import Foundation
import GLibSupport
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

// A privacy control used while the recent-files bridge is still importing:
// the bridge writes a large file in batches from idle work, which the
// ManualScheduler runs only when the test advances it, so "between two
// batches" is a place the test can stop at.

@Suite("Recent-files bridge: privacy controls used between two batches of an import", .serialized)
struct RecentFilesImportTests {
    /// What the test does between the batches, and whether the first batch's entries remain.
    struct Control: CustomStringConvertible, Sendable {
        var description: String
        var firstBatchRemains: Bool
        /// Called with the client, the time, and the URIs of the second batch's entries.
        var apply: @Sendable (Connection, Int64, [String]) throws -> Void
    }

    static func setProperty(_ name: String, _ value: TypedValue) -> @Sendable (Connection, Int64, [String]) throws -> Void {
        { client, _, _ in
            try client.callService("org.freedesktop.DBus.Properties", "Set", [.string(managerInterface), .string(name), .variant(value)])
        }
    }

    static let controls = [
        Control(description: "Paused", firstBatchRemains: true, apply: setProperty("Paused", .boolean(true))),
        Control(description: "BlockedApplications", firstBatchRemains: false,
                apply: setProperty("BlockedApplications", .stringArray([ServiceHarness.editor]))),
        Control(description: "BlockedActivityTypes", firstBatchRemains: false,
                apply: setProperty("BlockedActivityTypes", .stringArray(["org.example.UserActivity.open-document"]))),
        Control(description: "RetentionDays", firstBatchRemains: false, apply: setProperty("RetentionDays", .uint32(1))),
        Control(description: "ForgetApplication", firstBatchRemains: false) { client, _, _ in
            try client.callService(managerInterface, "ForgetApplication", [.string(ServiceHarness.editor)])
        },
        Control(description: "ForgetRange", firstBatchRemains: false) { client, now, _ in
            try client.callService(managerInterface, "ForgetRange", [.int64(0), .int64(now)])
        },
        Control(description: "DeleteSavedActivities", firstBatchRemains: true) { client, _, secondBatch in
            // The persistent identifier of a bridged entry is its URI.
            try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])
            try client.callService(managerInterface, "DeleteSavedActivities", [.stringArray(secondBatch)])
        },
        Control(description: "DeleteAllSavedActivities", firstBatchRemains: false) { client, _, _ in
            try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])
            try client.callService(managerInterface, "DeleteAllSavedActivities")
        },
    ]

    /// How many saved activities Search finds for `word`.
    static func searchCount(_ client: Connection, _ word: String) throws -> Int {
        guard case .array(_, let results) = try client.callService(managerInterface, "Search", [.string(word), .stringVariantDictionary([])]).first
        else { return -1 }
        return results.count
    }

    @Test("The rest of the import is not saved", arguments: controls)
    func controlBetweenBatches(_ control: Control) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let scheduler = ManualScheduler(now: now)
        // Outside /tmp, which the bridge skips. 250 older entries (the first batch) and 50 newer
        // ones (the second), all two days old: within the default retention when read, past
        // RetentionDays=1 (which also purges what was saved).
        let documents = try TemporaryDirectory(prefix: "uad-docs-", base: "/var/tmp")
        let newer = Date(timeIntervalSince1970: Double(now) / 1e6 - 2 * 86_400)
        let entries = (0..<300).map { index in
            XBELEntry(uri: "file://\(documents.path)/note-\(index).txt", title: "\(index < 250 ? "Kauri" : "Rimu") note \(index)",
                      app: ServiceHarness.editor, modified: newer.addingTimeInterval(Double(index - 300)))
        }
        let path = documents.appending("recently-used.xbel")
        try writeFileAtomically(path, contents: xbel(entries))
        let h = try ServiceHarness(scheduler: scheduler, recentFilesPath: path)
        let client = try h.client()
        defer { client.close() }
        func found(_ word: String) throws -> Int { try Self.searchCount(client, word) }

        // The read runs on a worker thread; each advance then writes at most one batch.
        #expect(try waitUntil(timeout: 30, interval: 0.01) {
            h.advance(byMilliseconds: 0)
            return try found("kauri") > 0
        }, "the first batch was never written")
        #expect(try found("rimu") == 0, "the second batch waits for the next advance")

        try control.apply(client, now, entries[250...].map(\.uri))
        h.advance(byMilliseconds: 0)
        #expect(try found("rimu") == 0, "the second batch was saved after \(control)")
        #expect((try found("kauri") > 0) == control.firstBatchRemains, "the first batch after \(control)")
    }

    @Test("ForgetApplication while the file is being read: what that read brings is not saved")
    func forgetDuringTheRead() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let scheduler = ManualScheduler(now: now)
        let documents = try TemporaryDirectory(prefix: "uad-docs-", base: "/var/tmp")
        let hour = Date(timeIntervalSince1970: Double(now) / 1e6 - 3600)
        // The Viewer's entry is the oldest (the first batch): once it is found, the read is done.
        let entries = [XBELEntry(uri: "file://\(documents.path)/totara.txt", title: "Totara", app: ServiceHarness.viewer,
                                 modified: hour.addingTimeInterval(-1000))]
            + (0..<300).map { index in
                XBELEntry(uri: "file://\(documents.path)/note-\(index).txt", title: "Kauri note \(index)", app: ServiceHarness.editor,
                          modified: hour.addingTimeInterval(Double(index - 300)))
            }
        // A FIFO: the bridge's read (on its worker thread) waits in open() until the test writes,
        // so the forget below certainly comes while the read is under way.
        let path = documents.appending("recently-used.xbel")
        // A later read (should the directory monitor report the write before the test ends)
        // waits in open() for good: released, it would hand its result to a loop already gone.
        #expect(mkfifo(path, 0o600) == 0)
        let h = try ServiceHarness(scheduler: scheduler, recentFilesPath: path)
        let client = try h.client()
        defer { client.close() }
        func found(_ word: String) throws -> Int { try Self.searchCount(client, word) }

        h.advance(byMilliseconds: 0) // the first read starts, and waits for the FIFO's writer
        try client.callService(managerInterface, "ForgetApplication", [.string(ServiceHarness.editor)])
        let writer = try #require(FileHandle(forWritingAtPath: path))
        writer.write(Data(xbel(entries).utf8))
        try writer.close()

        #expect(try waitUntil(timeout: 30, interval: 0.01) {
            h.advance(byMilliseconds: 0)
            return try found("totara") > 0
        }, "the first batch was never written")
        h.advance(byMilliseconds: 0) // the second batch
        #expect(try found("kauri") == 0, "the editor's entries read while it was forgotten were saved")
    }
}
