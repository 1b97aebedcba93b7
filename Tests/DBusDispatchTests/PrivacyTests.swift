// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

private let errorPrefix = "org.example.UserActivity.Error."
private let editType = "com.example.Editor.edit-document"
private let viewType = "com.example.Viewer.view"

extension Connection {
    func setManagerProperty(_ name: String, _ value: TypedValue) throws {
        try callService("org.freedesktop.DBus.Properties", "Set",
                        [.string(managerInterface), .string(name), .variant(value)])
    }

    /// Donates for `app` and returns the saved id ("" when nothing was saved).
    func donate(_ type: String, app: String, title: String, persistentID: String = "") throws -> String {
        try callService(managerInterface, "Donate", [.string(type), .stringVariantDictionary([
            ("app-id", .string(app)), ("title", .string(title)), ("eligible-for-search", .boolean(true)),
            ("persistent-identifier", .string(persistentID)),
        ])]).first?.stringValue ?? "?"
    }

    /// Titles of every search-eligible saved activity matching `query`.
    func searchTitles(_ query: String) throws -> [String] {
        let reply = try callService(managerInterface, "Search", [.string(query), .stringVariantDictionary([("limit", .uint32(200))])])
        guard case .array(_, let results)? = reply.first else { return [] }
        return results.compactMap { $0.stringVariantEntries?.first { $0.0 == "title" }?.1.stringValue }.sorted()
    }

    func suggestionTitles() throws -> [String] {
        let reply = try callService(managerInterface, "GetSuggestions", [.stringVariantDictionary([("limit", .uint32(200))])])
        guard case .array(_, let results)? = reply.first else { return [] }
        return results.compactMap { $0.stringVariantEntries?.first { $0.0 == "title" }?.1.stringValue }.sorted()
    }
}

@Suite struct PrivacyTests {
    @Test func pauseStopsSavingAndSurvivesARestart() throws {
        let dirs = try TemporaryDirectory(prefix: "uapriv-")
        do {
            let harness = try ServiceHarness(stateDirectory: dirs.appending("state"), configDirectory: dirs.appending("config"))
            let client = try harness.client()
            try client.setManagerProperty("Paused", .boolean(true))
            #expect(try client.donate(editType, app: ServiceHarness.editor, title: "secret plan") == "")
            // Becoming current still works while paused; nothing is saved.
            _ = try client.createActivity(editType, [("app-id", .string(ServiceHarness.editor)), ("title", .string("secret draft")),
                                                     ("eligible-for-search", .boolean(true))], becomeCurrent: true)
            #expect(try client.searchTitles("secret").isEmpty)
            harness.stop()
        }
        let config = try String(contentsOfFile: dirs.appending("config/useractivity.conf"), encoding: .utf8)
        #expect(config.contains("Paused=true"))
        let restarted = try ServiceHarness(stateDirectory: dirs.appending("state"), configDirectory: dirs.appending("config"))
        let client = try restarted.client()
        #expect(try client.property(managerPath, managerInterface, "Paused") == .boolean(true))
        try client.setManagerProperty("Paused", .boolean(false))
        #expect(try client.donate(editType, app: ServiceHarness.editor, title: "public plan") != "")
        #expect(try client.searchTitles("plan") == ["public plan"])
    }

    @Test func blockingAnAppDeletesItsEntriesAndStopsSaving() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        _ = try client.donate(editType, app: ServiceHarness.editor, title: "editor note")
        _ = try client.donate(viewType, app: ServiceHarness.viewer, title: "viewer note")
        try client.setManagerProperty("BlockedApplications", .stringArray([ServiceHarness.editor]))
        #expect(try client.searchTitles("note") == ["viewer note"])
        #expect(try client.suggestionTitles() == ["viewer note"])
        #expect(try client.donate(editType, app: ServiceHarness.editor, title: "editor again") == "")
        #expect(dbusErrorName { try client.setManagerProperty("BlockedApplications", .stringArray(["not an id"])) }
                == errorPrefix + "InvalidArgument")
    }

    @Test func blockingATypeDeletesItsEntries() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        _ = try client.donate(editType, app: ServiceHarness.editor, title: "edit note")
        _ = try client.donate("com.example.Editor.view", app: ServiceHarness.editor, title: "view note")
        try client.setManagerProperty("BlockedActivityTypes", .stringArray([editType]))
        #expect(try client.searchTitles("note") == ["view note"])
    }

    @Test func retentionPurgesEntriesUnusedForTooLong() throws {
        let clock = ManualWallClock(start: 1_800_000_000_000_000)
        let harness = try ServiceHarness(clock: clock.closure)
        let client = try harness.client()
        _ = try client.donate(editType, app: ServiceHarness.editor, title: "old note")
        clock.advance(days: 20)
        _ = try client.donate(editType, app: ServiceHarness.editor, title: "new note")
        clock.advance(days: 15)
        // 35 and 15 days unused: a 30-day retention keeps only the newer one.
        try client.setManagerProperty("RetentionDays", .uint32(30))
        #expect(try client.searchTitles("note") == ["new note"])
        #expect(try client.property(managerPath, managerInterface, "RetentionDays") == .uint32(30))
    }

    @Test func maxSavedPerApplicationKeepsTheMostRecent() throws {
        let clock = ManualWallClock(start: 1_800_000_000_000_000)
        let harness = try ServiceHarness(clock: clock.closure)
        let client = try harness.client()
        for n in 1...5 {
            _ = try client.donate(editType, app: ServiceHarness.editor, title: "note \(n)")
            clock.advance(days: 0.01)
        }
        _ = try client.donate(viewType, app: ServiceHarness.viewer, title: "note v")
        try client.setManagerProperty("MaxSavedPerApplication", .uint32(2))
        #expect(try client.searchTitles("note") == ["note 4", "note 5", "note v"])
        _ = try client.donate(editType, app: ServiceHarness.editor, title: "note 6")
        #expect(try client.searchTitles("note") == ["note 5", "note 6", "note v"])
    }

    @Test func forgetMethods() throws {
        let clock = ManualWallClock(start: 1_800_000_000_000_000)
        let harness = try ServiceHarness(clock: clock.closure)
        let client = try harness.client()
        _ = try client.donate(editType, app: ServiceHarness.editor, title: "a note")
        let middle = clock.now + 1
        clock.advance(days: 1)
        _ = try client.donate(viewType, app: ServiceHarness.viewer, title: "b note")
        _ = try client.donate(editType, app: ServiceHarness.editor, title: "c note")
        #expect(try client.callService(managerInterface, "ForgetRange", [.int64(middle), .int64(clock.now + 1)]) == [.uint32(2)])
        #expect(try client.searchTitles("note") == ["a note"])
        _ = try client.donate(viewType, app: ServiceHarness.viewer, title: "d note")
        #expect(try client.callService(managerInterface, "ForgetApplication", [.string(ServiceHarness.viewer)]) == [.uint32(1)])
        #expect(try client.searchTitles("note") == ["a note"])
        #expect(try client.callService(managerInterface, "ForgetAll") == [.uint32(1)])
        #expect(try client.searchTitles("note").isEmpty)
    }

    @Test func editingTheFileAppliesWithoutARestart() throws {
        let dirs = try TemporaryDirectory(prefix: "uapriv-")
        let harness = try ServiceHarness(configDirectory: dirs.path)
        let client = try harness.client()
        try writeFileAtomically(dirs.appending("useractivity.conf"), contents: "[Privacy]\nPaused=true\nRetentionDays=7\n")
        let applied = waitUntil(timeout: 30) {
            (try? client.property(managerPath, managerInterface, "Paused")) == .boolean(true)
        }
        #expect(applied)
        #expect(try client.property(managerPath, managerInterface, "RetentionDays") == .uint32(7))
    }

    @Test func aSandboxedAppCanNeitherReadNorChangeTheControls() throws {
        let harness = try ServiceHarness(confinedAs: ServiceHarness.sandboxed)
        let client = try harness.client()
        for property in ["Paused", "BlockedApplications", "BlockedActivityTypes", "RetentionDays", "MaxSavedPerApplication",
                         "RecentDocumentsBecomeCurrent"] {
            #expect(dbusErrorName { _ = try client.property(managerPath, managerInterface, property) } == errorPrefix + "AccessDenied")
        }
        #expect(dbusErrorName { try client.setManagerProperty("Paused", .boolean(true)) } == errorPrefix + "AccessDenied")
        #expect(dbusErrorName { try client.callService(managerInterface, "ForgetAll") } == errorPrefix + "AccessDenied")
        #expect(dbusErrorName { try client.callService(managerInterface, "ForgetApplication", [.string(ServiceHarness.editor)]) } == errorPrefix + "AccessDenied")
        #expect(dbusErrorName { try client.callService(managerInterface, "ForgetRange", [.int64(0), .int64(1)]) } == errorPrefix + "AccessDenied")
        let all = try client.callService("org.freedesktop.DBus.Properties", "GetAll", [.string(managerInterface)])
        #expect(all.first?.stringVariantEntries?.map(\.0).sorted() == ["CurrentActivity", "Version"])
    }
}
