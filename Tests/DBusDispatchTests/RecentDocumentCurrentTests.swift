// SPDX-License-Identifier: Apache-2.0
import SchedulerTestSupport
import DBusKit
import Foundation
import GLibSupport
import SchedulerTestSupport
import TestSupport
import Testing
import TypedValues
@testable import UserActivityService

// The document an app has just recorded in recently-used.xbel becomes the
// current activity on its behalf. The service's time is a ManualScheduler:
// "2 minutes ago", "30 minutes later" are set by the test, and the bridge's
// reads (worker thread, then idle work) are awaited by its read count.

private let openDocument = "org.example.UserActivity.open-document"

@Suite("Recent-files bridge: the document just opened is current", .serialized)
struct RecentDocumentCurrentTests {
    /// A service with the bridge on a file of `entries` (written before it starts), and a client
    /// that has read `CurrentActivity` (so that it hears its changes).
    final class Fixture: @unchecked Sendable {
        let now: Int64
        let scheduler: ManualScheduler
        let documents: TemporaryDirectory
        let path: String
        /// The entries the file started with (rewritten as they are, their stamps do not change).
        let initial: [XBELEntry]
        let h: ServiceHarness
        let client: Connection

        init(_ entries: (_ documents: String, _ now: Date) -> [XBELEntry]) throws {
            now = Int64(Date().timeIntervalSince1970 * 1_000_000)
            scheduler = ManualScheduler(now: now)
            // Outside /tmp, which the bridge skips.
            documents = try TemporaryDirectory(prefix: "uad-docs-", base: "/var/tmp")
            path = documents.appending("recently-used.xbel")
            initial = entries(documents.path, Self.date(now))
            try writeFileAtomically(path, contents: xbel(initial))
            h = try ServiceHarness(scheduler: scheduler, recentFilesPath: path)
            client = try h.client()
            #expect(try current() == "/")
        }

        deinit { client.close() }

        static func date(_ micros: Int64) -> Date { Date(timeIntervalSince1970: Double(micros) / 1e6) }
        var date: Date { Self.date(scheduler.now) }

        func uri(_ name: String) -> String { "file://\(documents.path)/\(name)" }

        func current() throws -> String {
            try client.property(managerPath, managerInterface, "CurrentActivity").objectPathValue ?? "?"
        }

        var reads: Int { h.onService { $0.recentFiles?.completedReads ?? -1 } }

        /// Lets the bridge read the file (again): idle work runs, then the worker thread's result is awaited.
        func settleRead(after previous: Int) throws {
            #expect(waitUntil(timeout: 30, interval: 0.01) {
                h.advance(byMilliseconds: 0)
                return reads > previous
            }, "the bridge did not read the file")
            // The batches it queued.
            h.advance(byMilliseconds: 0)
        }

        func firstRead() throws { try settleRead(after: 0) }

        /// Writes `entries` and tells the bridge the file changed (the directory monitor may too).
        func rewrite(_ entries: [XBELEntry]) throws {
            let before = reads
            try writeFileAtomically(path, contents: xbel(entries))
            h.onService { $0.recentFiles?.fileMayHaveChanged() }
            try settleRead(after: before)
        }

        func set(_ property: String, _ value: TypedValue) throws {
            try client.callService("org.freedesktop.DBus.Properties", "Set", [.string(managerInterface), .string(property), .variant(value)])
        }

        func properties(_ path: String) throws -> [String: TypedValue] {
            let all = try client.callService(on: path, "org.freedesktop.DBus.Properties", "GetAll", [.string(activityInterface)])
            return Dictionary((all.first?.stringVariantEntries ?? []).map { ($0.0, $0.1.unwrappedVariant) }, uniquingKeysWith: { a, _ in a })
        }

        func userInfo(_ path: String) throws -> [String: TypedValue] {
            Dictionary((try properties(path)["UserInfo"]?.stringVariantEntries ?? []).map { ($0.0, $0.1.unwrappedVariant) },
                       uniquingKeysWith: { a, _ in a })
        }

        /// Whether an activity object is still on the bus.
        func exists(_ path: String) -> Bool { (try? properties(path)) != nil }
    }

    static func report(_ f: String, _ modified: Date, title: String? = "Quarterly report", app: String = ServiceHarness.editor) -> XBELEntry {
        XBELEntry(uri: f, title: title, app: app, modified: modified, mimeType: "application/vnd.oasis.opendocument.text")
    }

    @Test("An entry recorded 30 s ago makes the document current: open-document, uri, mime-type, title, eligible for handoff, of the recording app")
    func newUseBecomesCurrent() throws {
        let f = try Fixture { dir, now in
            [Self.report("file://\(dir)/Report.odt", now.addingTimeInterval(-30)),
             XBELEntry(uri: "file://\(dir)/older.txt", title: "Older", app: ServiceHarness.viewer, modified: now.addingTimeInterval(-50))]
        }
        try f.firstRead()
        let path = try f.current()
        try #require(path != "/", "the document just opened is not current")
        let properties = try f.properties(path)
        #expect(properties["ActivityType"] == .string(openDocument))
        #expect(properties["AppId"] == .string(ServiceHarness.editor))
        #expect(properties["Title"] == .string("Quarterly report"))
        #expect(properties["EligibleForHandoff"] == .boolean(true))
        #expect(properties["EligibleForSearch"] == .boolean(false), "the bridge saves the entry itself")
        #expect(properties["Current"] == .boolean(true))
        let info = try f.userInfo(path)
        #expect(info["uri"] == .string(f.uri("Report.odt")))
        #expect(info["mime-type"] == .string("application/vnd.oasis.opendocument.text"))
    }

    @Test("An entry recorded more than 2 minutes before the read is history only: saved, not current")
    func oldUseIsNotCurrent() throws {
        let f = try Fixture { dir, now in [Self.report("file://\(dir)/Report.odt", now.addingTimeInterval(-150))] }
        try f.firstRead()
        #expect(try RecentFilesImportTests.searchCount(f.client, "quarterly") == 1, "the entry is imported as history")
        #expect(try f.current() == "/")
    }

    @Test("The next BecomeCurrent replaces it, as any app's; a newer use of another document makes that one current")
    func laterBecomeCurrentReplacesIt() throws {
        let f = try Fixture { dir, now in [Self.report("file://\(dir)/Report.odt", now.addingTimeInterval(-10))] }
        try f.firstRead()
        let bridged = try f.current()
        try #require(bridged != "/")
        let viewer = try f.client.createActivity("com.example.Viewer.view", [("app-id", .string(ServiceHarness.viewer)), ("title", .string("Map"))],
                                                 becomeCurrent: true)
        #expect(try f.current() == viewer)
        #expect(try f.properties(bridged)["Current"] == .boolean(false))

        f.h.advance(byMilliseconds: 60_000)
        try f.rewrite(f.initial + [Self.report(f.uri("Budget.ods"), f.date, title: "Budget")])
        let budget = try f.current()
        #expect(budget != viewer && budget != "/")
        #expect(try f.properties(budget)["Title"] == .string("Budget"))
        #expect(!f.exists(bridged), "the bridge keeps one activity: the one it showed before is gone")
    }

    @Test("A document the app itself made current in the same minute is left to the app")
    func theAppsOwnPublicationWins() throws {
        let f = try Fixture { dir, now in [Self.report("file://\(dir)/Report.odt", now.addingTimeInterval(-20))] }
        // The editor adopts the API: it made the document current itself, 20 s after recording it,
        // then another app became current; only then does the bridge read the file (its first
        // read is idle work, run by the first advance).
        let own = try f.client.createActivity(openDocument, [
            ("app-id", .string(ServiceHarness.editor)), ("title", .string("Report (editor)")),
            ("user-info", .stringVariantDictionary([("uri", .string(f.uri("Report.odt")))])),
        ], becomeCurrent: true)
        #expect(try f.current() == own)
        let viewer = try f.client.createActivity("com.example.Viewer.view", [("app-id", .string(ServiceHarness.viewer))], becomeCurrent: true)
        try f.firstRead()
        #expect(try f.current() == viewer, "the bridge published the editor's document again")

        // Another document the editor recorded but did not publish is the bridge's to show.
        f.h.advance(byMilliseconds: 90_000)
        try f.rewrite(f.initial + [Self.report(f.uri("Letter.odt"), f.date.addingTimeInterval(-1), title: "Letter")])
        let letter = try f.current()
        #expect(letter != viewer && letter != own)
        #expect(try f.userInfo(letter)["uri"] == .string(f.uri("Letter.odt")))
    }

    @Test("While the app's own activity is current, its documents are left to it; another app's document still becomes current")
    func theAppsOwnCurrentActivityWins() throws {
        let f = try Fixture { dir, now in [Self.report("file://\(dir)/Report.odt", now.addingTimeInterval(-20))] }
        let own = try f.client.createActivity("com.example.Editor.edit-document", [("app-id", .string(ServiceHarness.editor)),
                                                                                   ("title", .string("Editing"))], becomeCurrent: true)
        try f.firstRead()
        #expect(try f.current() == own, "the bridge replaced the editor's own current activity with one of its documents")

        try f.rewrite(f.initial + [Self.report(f.uri("Map.png"), f.date, title: "Map", app: ServiceHarness.viewer)])
        let map = try f.current()
        #expect(map != own && map != "/")
        #expect(try f.properties(map)["AppId"] == .string(ServiceHarness.viewer))
    }

    @Test("It ends 30 minutes after the use; a newer use of the same document keeps it")
    func endsAfterThirtyMinutesWithoutANewerUse() throws {
        let f = try Fixture { dir, now in [Self.report("file://\(dir)/Report.odt", now)] }
        try f.firstRead()
        let path = try f.current()
        try #require(path != "/")

        f.h.advance(byMilliseconds: 20 * 60_000)
        try f.rewrite([Self.report(f.uri("Report.odt"), f.date)]) // used again at 20 min
        #expect(try f.current() == path, "a newer use of the document shown keeps the same activity")
        f.h.advance(byMilliseconds: 15 * 60_000) // 35 min: 15 after the newer use
        #expect(try f.current() == path)
        f.h.advance(byMilliseconds: 15 * 60_000 + 1_000) // 50 min: 30 after it
        #expect(try f.current() == "/")
        #expect(!f.exists(path), "the bridge's activity left the bus")
    }

    struct Control: CustomStringConvertible, Sendable {
        var description: String
        var property: String
        var value: TypedValue
    }

    static let controls = [
        Control(description: "Paused", property: "Paused", value: .boolean(true)),
        Control(description: "a blocked app", property: "BlockedApplications", value: .stringArray([ServiceHarness.editor])),
        Control(description: "a blocked type", property: "BlockedActivityTypes", value: .stringArray([openDocument])),
        Control(description: "the bridge off", property: "Bridges", value: .stringArray([])),
        Control(description: "RecentDocumentsBecomeCurrent off", property: "RecentDocumentsBecomeCurrent", value: .boolean(false)),
    ]

    @Test("Each privacy control keeps the document from being current, and ends it when set while it is", arguments: controls)
    func privacyControls(_ control: Control) throws {
        let f = try Fixture { dir, now in [Self.report("file://\(dir)/Report.odt", now.addingTimeInterval(-5))] }
        try f.set(control.property, control.value)
        if control.property == "Bridges" {
            // Off: the file is not read at all.
            for _ in 0..<5 { f.h.advance(byMilliseconds: 0) }
            f.h.onService { $0.recentFiles?.fileMayHaveChanged() }
            for _ in 0..<5 { f.h.advance(byMilliseconds: 0) }
            #expect(f.reads == 0)
        } else {
            try f.firstRead()
        }
        #expect(try f.current() == "/", "current despite \(control)")

        // Set while the document is current: it ends.
        let g = try Fixture { dir, now in [Self.report("file://\(dir)/Report.odt", now.addingTimeInterval(-5))] }
        try g.firstRead()
        let path = try g.current()
        try #require(path != "/")
        try g.set(control.property, control.value)
        #expect(try g.current() == "/", "still current after \(control)")
        #expect(!g.exists(path))
    }

    @Test("RecentDocumentsBecomeCurrent is kept in useractivity.conf and read back on start")
    func theSettingIsPersisted() throws {
        let config = try TemporaryDirectory(prefix: "uad-conf-")
        do {
            let h = try ServiceHarness(configDirectory: config.path)
            let client = try h.client()
            defer { client.close() }
            #expect(try client.property(managerPath, managerInterface, "RecentDocumentsBecomeCurrent") == .boolean(true), "on by default")
            try client.callService("org.freedesktop.DBus.Properties", "Set", [.string(managerInterface), .string("RecentDocumentsBecomeCurrent"),
                                                                               .variant(.boolean(false))])
        }
        let text = try String(contentsOfFile: config.appending("useractivity.conf"), encoding: .utf8)
        #expect(text.contains("RecentDocumentsBecomeCurrent=false"))
        let h = try ServiceHarness(configDirectory: config.path)
        let client = try h.client()
        defer { client.close() }
        #expect(try client.property(managerPath, managerInterface, "RecentDocumentsBecomeCurrent") == .boolean(false))
        #expect(throws: DBusFailure.self) {
            try client.callService("org.freedesktop.DBus.Properties", "Set", [.string(managerInterface), .string("RecentDocumentsBecomeCurrent"),
                                                                               .variant(.string("no"))])
        }
    }
}
