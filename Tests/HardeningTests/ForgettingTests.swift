// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// What "forget" leaves on disk: nothing of a forgotten entry may stay in
/// the database file, its WAL or its shared-memory index.
@Suite("Forgetting")
struct ForgettingTests {
    /// Whether any of the store's files holds `needle`.
    static func filesContain(_ directory: String, _ needle: String) -> [String] {
        let bytes = Array(needle.utf8)
        return ["", "-wal", "-shm"].compactMap { suffix in
            let path = directory + "/" + ActivityStore.fileName + suffix
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            let found = data.withUnsafeBytes { raw -> Bool in
                guard raw.count >= bytes.count, let first = bytes.first else { return false }
                var index = 0
                while index <= raw.count - bytes.count {
                    if raw[index] == first && bytes.indices.allSatisfy({ raw[index + $0] == bytes[$0] }) { return true }
                    index += 1
                }
                return false
            }
            return found ? ActivityStore.fileName + suffix : nil
        }
    }

    @Test("ForgetApplication, DeleteSavedActivities, DeleteAllSavedActivities, ForgetRange, ForgetAll and blocking the app leave no forgotten title in the db, -wal or -shm file",
          arguments: ["ForgetApplication", "DeleteSavedActivities", "DeleteAllSavedActivities", "ForgetRange", "ForgetAll", "BlockedApplications"])
    func forgottenTitlesLeaveNoTrace(method: String) throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let client = try daemon.connect()
        _ = try client.manager("RegisterApplication", [.string(UA.editor)])
        // Entries that stay, around the ones forgotten, so that pages are shared.
        for n in 0..<40 {
            _ = try client.donate(app: UA.editor, [("title", .string("kept entry \(n)")), ("eligible-for-search", .boolean(true)),
                                                   ("persistent-identifier", .string("kept-\(n)"))])
            _ = try client.donate(UA.viewType, app: UA.viewer, [("title", .string("viewer entry \(n)")), ("eligible-for-search", .boolean(true))])
        }
        let secret = "quokka-\(method)-secret"
        let description = "the secret-description " + String(repeating: "x", count: 6000) // spills onto an overflow page
        for n in 0..<5 {
            _ = try client.donate(app: UA.editor, [("title", .string("\(secret) \(n)")), ("eligible-for-search", .boolean(true)),
                                                   ("content-description", .string(description)),
                                                   ("persistent-identifier", .string("secret-\(n)"))])
        }
        let before = Self.filesContain(daemon.stateDirectory, secret)
        #expect(!before.isEmpty, "the title is on disk before it is forgotten")
        let started = Date()
        switch method {
        case "ForgetApplication": _ = try client.manager("ForgetApplication", [.string(UA.editor)])
        case "DeleteSavedActivities": _ = try client.manager("DeleteSavedActivities", [.stringArray((0..<5).map { "secret-\($0)" })])
        case "DeleteAllSavedActivities": _ = try client.manager("DeleteAllSavedActivities")
        case "BlockedApplications":
            _ = try client.call(UA.managerPath, UA.properties, "Set", [.string(UA.manager), .string("BlockedApplications"), .variant(.stringArray([UA.editor]))])
        case "ForgetRange": _ = try client.manager("ForgetRange", [.int64(0), .int64(Int64.max)])
        default: _ = try client.manager("ForgetAll")
        }
        print("forget: \(method) took \(String(format: "%.2f", seconds(since: started) * 1000)) ms")
        #expect(try client.search(secret).isEmpty)
        let after = Self.filesContain(daemon.stateDirectory, secret)
        #expect(after.isEmpty, "the forgotten title is still in \(after)")
        #expect(Self.filesContain(daemon.stateDirectory, "the secret-description").isEmpty)
        if method == "DeleteSavedActivities" {
            #expect(!Self.filesContain(daemon.stateDirectory, "kept entry").isEmpty, "what was not forgotten stays")
        }
        #expect(try daemon.daemonPID() == pid)
    }

    @Test("An expired saved activity, purged when its date passes, leaves nothing in the db, -wal or -shm file")
    func expiredEntriesLeaveNoTrace() throws {
        let state = try TemporaryDirectory(prefix: "uahs-")
        let clock = ManualWallClock(start: 1_700_000_000_000_000)
        let harness = try InProcessService(stateDirectory: state.path, clock: { clock.now })
        let client = try harness.client()
        let secret = "wallaby-expiring-secret"
        _ = try client.donate(app: UA.editor, [("title", .string("kept entry")), ("eligible-for-search", .boolean(true))])
        _ = try client.donate(app: UA.editor, [("title", .string(secret)), ("eligible-for-search", .boolean(true)),
                                               ("content-description", .string(secret + String(repeating: "x", count: 6000))),
                                               ("expiration-date", .int64(clock.now + 300_000))])
        #expect(!Self.filesContain(state.path, secret).isEmpty, "the title is on disk before it expires")
        // The service's timer for the earliest expiration fires (real time), then reads the stepped clock.
        clock.advance(by: 1_000_000)
        #expect(waitUntil(timeout: 30) { Self.filesContain(state.path, secret).isEmpty },
                "the expired entry is still in \(Self.filesContain(state.path, secret))")
        #expect(try client.search(secret).isEmpty)
        #expect(!Self.filesContain(state.path, "kept entry").isEmpty)
    }
}
