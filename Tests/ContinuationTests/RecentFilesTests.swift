// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

// The recent-files bridge end to end: an XBEL fixture in the test's
// $XDG_DATA_HOME, the daemon started by D-Bus activation, Search and
// ContinueSavedActivity through the bus. Documents live under /var/tmp
// (the bridge skips /tmp, where the test's own directory is).

@Suite("Recent-files bridge", .serialized)
struct RecentFilesTests {
    static let docs = "com.example.Docs"
    static let placeholder = "org.example.UserActivity.RecentFiles"
    static let viewer = "com.example.Viewer"

    /// A harness with the Docs app (Exec records its arguments), a document
    /// folder under /var/tmp and the entries' file written before the daemon starts.
    final class Fixture: @unchecked Sendable {
        let h: ContinuationHarness
        let apps: ArgvApps
        let documents: TemporaryDirectory
        let client: Client
        var xbelPath: String { h.session.dataHome + "/recently-used.xbel" }

        init(entries: (String) -> [XBELEntry], config: String? = nil, privacy: String? = nil) throws {
            // GNOME's privacy keys, when given: a schema of our own (not the system's) and the keyfile backend.
            h = try ContinuationHarness(apps: [], environment: privacy == nil ? [:] : ["GSETTINGS_BACKEND": "keyfile"])
            if let privacy { try Self.installPrivacySchema(h.session, keyfile: privacy) }
            apps = try ArgvApps(h)
            try apps.install(RecentFilesTests.docs, fieldCode: "%U", mimeTypes: ["text/plain"])
            // The default for text/plain, which continues the entries no installed app recorded.
            try apps.install(RecentFilesTests.viewer, fieldCode: "%F", mimeTypes: ["text/plain"])
            try apps.defaults([("text/plain", RecentFilesTests.viewer)])
            documents = try TemporaryDirectory(prefix: "uat-docs-", base: "/var/tmp")
            if let config { try writeFileAtomically(h.session.configHome + "/useractivity/useractivity.conf", contents: config) }
            client = try h.connect()
            try write(entries(documents.path))
        }

        static func installPrivacySchema(_ session: SessionEnvironment, keyfile: String) throws {
            let directory = session.sharedDataDir + "/glib-2.0/schemas"
            try writeFileAtomically(directory + "/org.gnome.desktop.privacy.gschema.xml", contents: """
                <?xml version="1.0" encoding="UTF-8"?>
                <schemalist>
                  <schema id="org.gnome.desktop.privacy" path="/org/gnome/desktop/privacy/">
                    <key name="remember-recent-files" type="b"><default>true</default></key>
                    <key name="recent-files-max-age" type="i"><default>-1</default></key>
                  </schema>
                </schemalist>

                """)
            let compiled = try runCommand("glib-compile-schemas", [directory], environment: session.environment)
            guard compiled.succeeded else { throw FixtureFailure("glib-compile-schemas: \(compiled)") }
            try writeFileAtomically(session.configHome + "/glib-2.0/settings/keyfile", contents: keyfile)
        }

        func write(_ entries: [XBELEntry]) throws { try writeFileAtomically(xbelPath, contents: xbel(entries)) }

        func search(_ query: String) throws -> [[String: TypedValue]] {
            let reply = try client.call(UA.managerPath, UA.managerInterface, "Search", [.string(query), .stringVariantDictionary([])])
            guard case .array(_, let elements) = reply.first ?? .string("") else { return [] }
            return elements.map { element in
                Dictionary((element.stringVariantEntries ?? []).map { ($0.0, $0.1.unwrappedVariant) }, uniquingKeysWith: { a, _ in a })
            }
        }

        /// Waits until `query` finds `count` results.
        func waitFor(_ query: String, count: Int = 1, timeout: Double = 20) throws -> [[String: TypedValue]] {
            var results: [[String: TypedValue]] = []
            _ = try waitUntil(timeout: timeout, interval: 0.05) {
                results = try search(query)
                return results.count == count
            }
            return results
        }

        /// How often the daemon's log has `text` so far.
        func logCount(_ text: String) -> Int { h.bus.log.components(separatedBy: text).count - 1 }

        /// Runs `body`, then waits until the log has one more `text` than before it.
        func afterNextLog(_ text: String, _ body: () throws -> Void) throws -> Bool {
            let before = logCount(text)
            try body()
            return waitUntil(timeout: 20) { logCount(text) > before }
        }

        func setBridges(_ names: [String]) throws {
            try client.call(UA.managerPath, "org.freedesktop.DBus.Properties", "Set",
                            [.string(UA.managerInterface), .string("Bridges"), .variant(.stringArray(names))])
        }

        /// The manager's `CurrentActivity` (reading it also asks for its changes).
        func currentActivity() throws -> String {
            try client.call(UA.managerPath, "org.freedesktop.DBus.Properties", "Get",
                            [.string(UA.managerInterface), .string("CurrentActivity")]).first?.unwrappedVariant.objectPathValue ?? "?"
        }

        func setPaused(_ paused: Bool) throws {
            try client.call(UA.managerPath, "org.freedesktop.DBus.Properties", "Set",
                            [.string(UA.managerInterface), .string("Paused"), .variant(.boolean(paused))])
        }
    }

    static func standardEntries(_ dir: String, at date: Date = Date().addingTimeInterval(-3600)) -> [XBELEntry] {
        [
            XBELEntry(uri: "file://\(dir)/Quarterly%20report.txt", title: "Quarterly zephyr report", app: docs, count: 3, modified: date),
            XBELEntry(uri: "file://\(dir)/notes-zephyrnotes.txt", title: nil, app: "Unknown Writer", exec: "'unknown-writer %u'", modified: date),
            XBELEntry(uri: "file://\(dir)/secret-zephyrprivate.txt", title: "zephyrprivate", app: docs, modified: date, isPrivate: true),
            XBELEntry(uri: "file://\(dir)/.hidden/zephyrhidden.txt", title: "zephyrhidden", app: docs, modified: date),
            XBELEntry(uri: "file:///tmp/zephyrtemp.txt", title: "zephyrtemp", app: docs, modified: date),
        ]
    }

    @Test("On start the file is imported: titles, folder, recording app (or the placeholder); private, hidden and /tmp entries are skipped")
    func importsOnStart() throws {
        let f = try Fixture(entries: { Self.standardEntries($0) })
        let found = try f.waitFor("zephyr report")
        #expect(found.count == 1, "\(f.h.logTail())")
        #expect(found.first?["app-id"]?.stringValue == Self.docs)
        #expect(found.first?["activity-type"]?.stringValue == "org.example.UserActivity.open-document")
        #expect(found.first?["title"]?.stringValue == "Quarterly zephyr report")
        #expect(found.first?["content-description"]?.stringValue == f.documents.path)
        let unmatched = try f.waitFor("zephyrnotes")
        #expect(unmatched.first?["app-id"]?.stringValue == Self.placeholder)
        #expect(unmatched.first?["title"]?.stringValue == "notes-zephyrnotes.txt", "the file's name when there is no title")
        for skipped in ["zephyrprivate", "zephyrhidden", "zephyrtemp"] {
            #expect(try f.search(skipped).isEmpty, "\(skipped) should have been skipped")
        }
        // Prediction too, with the file's use count.
        let reply = try f.client.call(UA.managerPath, UA.managerInterface, "GetSuggestions", [.stringVariantDictionary([])])
        guard case .array(_, let suggestions) = reply.first ?? .string("") else { Issue.record("no array"); return }
        let report = suggestions.compactMap(\.stringVariantEntries).first { $0.contains { $0.0 == "title" && $0.1.unwrappedVariant.stringValue == "Quarterly zephyr report" } }
        #expect(report?.first { $0.0 == "use-count" }?.1.unwrappedVariant.uint32Value == 3)
    }

    @Test("A new entry appended is found; entries read again are not duplicated")
    func followsTheFile() throws {
        let f = try Fixture(entries: { Self.standardEntries($0) })
        #expect(try f.waitFor("zephyr report").count == 1, "\(f.h.logTail())")
        let dir = f.documents.path
        // The same entries, one used again later, and a new one.
        var entries = Self.standardEntries(dir)
        entries[0].modified = Date()
        entries[0].count = 4
        entries.append(XBELEntry(uri: "file://\(dir)/Budget%20quokka.ods", title: "Budget quokka", app: Self.docs, modified: Date()))
        try f.write(entries)
        #expect(try f.waitFor("quokka").count == 1, "\(f.h.logTail())")
        #expect(try f.search("zephyr report").count == 1, "re-reading must not duplicate")
        #expect(try f.search("zephyrnotes").count == 1)
    }

    @Test("Bridges=[] (the setting and its file key) turns it off; Paused entries stay out; ForgetAll sticks until a new use")
    func privacyControls() throws {
        let f = try Fixture(entries: { Self.standardEntries($0) }, config: "[Privacy]\nBridges=\n")
        // Off from the start (the file key): the daemon says so when it looks at the file.
        _ = try f.search("anything") // starts the daemon
        #expect(waitUntil(timeout: 30) { f.logCount("recent files: the bridge is off") > 0 }, "\(f.h.logTail())")
        #expect(try f.search("zephyr").isEmpty)
        try f.setBridges(["recent-files"])
        #expect(try f.waitFor("zephyr report").count == 1, "\(f.h.logTail())")

        // Paused: a new entry is seen but not saved, and unpausing does not bring it back.
        try f.setPaused(true)
        let dir = f.documents.path
        var entries = Self.standardEntries(dir)
        entries.append(XBELEntry(uri: "file://\(dir)/wombat.txt", title: "Offrecord wombat", app: Self.docs, modified: Date()))
        #expect(try f.afterNextLog("recent files read") { try f.write(entries) }, "\(f.h.logTail())")
        try f.setPaused(false)
        entries.append(XBELEntry(uri: "file://\(dir)/marker.txt", title: "Marker platypus", app: Self.docs, modified: Date()))
        try f.write(entries)
        #expect(try f.waitFor("platypus").count == 1, "\(f.h.logTail())")
        #expect(try f.search("wombat").isEmpty, "recorded while paused")

        // ForgetAll: a rewrite of the same file brings nothing back; a new use does.
        _ = try f.client.call(UA.managerPath, UA.managerInterface, "ForgetAll", [])
        entries.append(XBELEntry(uri: "file://\(dir)/echidna.txt", title: "Echidna marker", app: Self.docs, modified: Date().addingTimeInterval(5)))
        try f.write(entries)
        #expect(try f.waitFor("echidna").count == 1, "\(f.h.logTail())")
        #expect(try f.search("zephyr").isEmpty, "forgotten entries must not be imported again")
        entries[0].modified = Date().addingTimeInterval(10)
        try f.write(entries)
        let again = try f.waitFor("zephyr report")
        #expect(again.count == 1, "a new use after ForgetAll is new history: \(again)\n\(f.h.logTail(80))")

        // Off again: the daemon looks at the new file and imports nothing; on again, it does.
        try f.setBridges([])
        entries.append(XBELEntry(uri: "file://\(dir)/koala.txt", title: "Koala", app: Self.docs, modified: Date().addingTimeInterval(15)))
        #expect(try f.afterNextLog("recent files: the bridge is off") { try f.write(entries) }, "\(f.h.logTail())")
        #expect(try f.search("koala").isEmpty)
        try f.setBridges(["recent-files"])
        #expect(try f.waitFor("koala").count == 1, "turned on again, the file is read")
    }

    @Test("Blocks and retention keep bridged entries out; ForgetApplication, ForgetRange and DeleteSavedActivities stick until a new use")
    func blocksRetentionAndForgetting() throws {
        let hour = Date().addingTimeInterval(-3600)
        func entries(_ dir: String) -> [XBELEntry] {
            [
                XBELEntry(uri: "file://\(dir)/alpha.txt", title: "Alpha koru", app: Self.docs, modified: hour),
                XBELEntry(uri: "file://\(dir)/beta.txt", title: "Beta koru", app: "Unknown Writer", exec: "'unknown-writer %u'", modified: hour),
                XBELEntry(uri: "file://\(dir)/gamma.txt", title: "Gamma koru", app: Self.docs, modified: Date().addingTimeInterval(-30 * 86_400)),
            ]
        }
        // The placeholder app is blocked from the start; entries older than a week are out.
        let f = try Fixture(entries: entries, config: "[Privacy]\nBlockedApplications=\(Self.placeholder);\nRetentionDays=7\n")
        let dir = f.documents.path
        var current = entries(dir)
        var markers = 0
        /// Appends a new entry and waits for it: the file has been read again and its batch written.
        func rewriteAndSettle() throws {
            markers += 1
            current.append(XBELEntry(uri: "file://\(dir)/marker\(markers).txt", title: "Marker\(markers) kiwi", app: Self.docs,
                                     modified: Date().addingTimeInterval(Double(markers))))
            try f.write(current)
            #expect(try f.waitFor("marker\(markers) kiwi").count == 1, "\(f.h.logTail())")
        }
        func titles() throws -> Set<String> { Set(try f.search("koru").compactMap { $0["title"]?.stringValue }) }

        #expect(try f.waitFor("alpha koru").count == 1, "\(f.h.logTail())")
        #expect(try titles() == ["Alpha koru"], "the blocked app's entry and the one past retention are not imported")

        // Unblocked: what was seen while blocked stays out; a new use of it is imported.
        _ = try f.client.call(UA.managerPath, "org.freedesktop.DBus.Properties", "Set",
                              [.string(UA.managerInterface), .string("BlockedApplications"), .variant(.stringArray([]))])
        try rewriteAndSettle()
        #expect(try titles() == ["Alpha koru"])
        current[1].modified = Date()
        try f.write(current)
        #expect(try f.waitFor("beta koru").count == 1, "a new use after unblocking: \(f.h.logTail())")

        // A blocked type: blocking deletes its saved entries, a new use recorded meanwhile is not
        // saved, and unblocking brings back neither.
        _ = try f.client.call(UA.managerPath, "org.freedesktop.DBus.Properties", "Set",
                              [.string(UA.managerInterface), .string("BlockedActivityTypes"), .variant(.stringArray(["org.example.UserActivity.open-document"]))])
        #expect(try titles().isEmpty, "blocking deletes")
        current.append(XBELEntry(uri: "file://\(dir)/delta.txt", title: "Delta koru", app: Self.docs, modified: Date()))
        #expect(try f.afterNextLog("recent files read") { try f.write(current) }, "\(f.h.logTail())")
        _ = try f.client.call(UA.managerPath, "org.freedesktop.DBus.Properties", "Set",
                              [.string(UA.managerInterface), .string("BlockedActivityTypes"), .variant(.stringArray([]))])
        try rewriteAndSettle()
        #expect(try titles().isEmpty, "deleted by the block or recorded while it held")

        // ForgetApplication: the app's bridged entries go and are not read back.
        current[0].modified = Date().addingTimeInterval(50)
        try f.write(current)
        #expect(try f.waitFor("alpha koru").count == 1, "a new use after the block: \(f.h.logTail())")
        let forgotten = try f.client.call(UA.managerPath, UA.managerInterface, "ForgetApplication", [.string(Self.docs)])
        #expect((forgotten.first?.uint32Value ?? 0) >= 2, "alpha and the markers: \(forgotten)")
        try rewriteAndSettle()
        #expect(try f.search("alpha koru").isEmpty, "forgotten with its app")

        // ForgetRange over the placeholder's entry, used again.
        current[1].modified = Date().addingTimeInterval(60)
        try f.write(current)
        #expect(try f.waitFor("beta koru").count == 1, "\(f.h.logTail())")
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let ranged = try f.client.call(UA.managerPath, UA.managerInterface, "ForgetRange", [.int64(now - 7_200_000_000), .int64(now + 3_600_000_000)])
        #expect((ranged.first?.uint32Value ?? 0) >= 1, "\(ranged)")
        try rewriteAndSettle()
        #expect(try titles().isEmpty, "forgotten by range")

        // DeleteSavedActivities by the app itself (the persistent identifier is the URI).
        current[0].modified = Date().addingTimeInterval(100)
        try f.write(current)
        #expect(try f.waitFor("alpha koru").count == 1, "a new use after forgetting: \(f.h.logTail())")
        let docs = try f.h.connect()
        try docs.registerApplication(Self.docs)
        _ = try docs.call(UA.managerPath, UA.managerInterface, "DeleteSavedActivities", [.stringArray([current[0].uri])])
        #expect(try titles().isEmpty)
        try rewriteAndSettle()
        #expect(try titles().isEmpty, "deleted by the app")
    }

    @Test("A restarted daemon does not import again: no duplicates, nothing queued")
    func restartDoesNotReimport() throws {
        let f = try Fixture(entries: { Self.standardEntries($0) })
        #expect(try f.waitFor("zephyr report").count == 1, "\(f.h.logTail())")
        #expect(try f.waitFor("zephyrnotes").count == 1)
        let message = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                         interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID")
        try message.append([.string(UA.busName)])
        let pid = try #require(try f.client.connection.call(message, timeoutMilliseconds: 5000).arguments().first?.uint32Value)
        let reads = f.logCount("recent files read")
        kill(pid_t(pid), SIGTERM)
        // The next call starts it again (D-Bus activation); it reads the file again.
        #expect(waitUntil(timeout: 30) { (try? f.search("zephyr report").count) == 1 && f.logCount("recent files read") > reads },
                "\(f.h.logTail())")
        #expect(f.h.bus.log.contains("queued=0"), "the second start finds nothing new: \(f.h.logTail())")
        #expect(try f.search("zephyr report").count == 1)
        #expect(try f.search("zephyrnotes").count == 1)
    }

    @Test("ContinueSavedActivity on a bridged entry launches the recording app with the document; an unmatched one, the MIME type's default")
    func continueBridged() throws {
        let f = try Fixture(entries: { Self.standardEntries($0) })
        try writeFileAtomically(f.documents.path + "/Quarterly report.txt", contents: "Q3\n")
        let found = try f.waitFor("zephyr report")
        let savedID = try #require(found.first?["saved-id"]?.stringValue, "\(f.h.logTail())")
        let reply = try f.client.call(UA.managerPath, UA.managerInterface, "ContinueSavedActivity",
                                      [.string(savedID), .stringVariantDictionary([("activation-token", .string("tok-rf"))])])
        #expect(reply.first?.stringValue == Self.docs)
        let recorded = try #require(f.apps.recorded(Self.docs), "\(f.h.logTail())")
        #expect(recorded.contains("ARG \(f.documents.path)/Quarterly report.txt"), "\(recorded)")
        #expect(recorded.contains("XDG_ACTIVATION_TOKEN=tok-rf"))
        #expect(!f.apps.wasLaunched(Self.viewer))

        // An entry no installed app matched: the default handler for its MIME type opens it.
        try writeFileAtomically(f.documents.path + "/notes-zephyrnotes.txt", contents: "n\n")
        let unmatched = try #require(try f.waitFor("zephyrnotes").first?["saved-id"]?.stringValue)
        let byDefault = try f.client.call(UA.managerPath, UA.managerInterface, "ContinueSavedActivity",
                                          [.string(unmatched), .stringVariantDictionary([])])
        #expect(byDefault.first?.stringValue == Self.viewer, "\(f.h.logTail())")
        #expect(f.apps.arguments(Self.viewer) == [f.documents.path + "/notes-zephyrnotes.txt"])
    }

    @Test("GNOME's privacy keys: recent-files-max-age caps the import by age; remember-recent-files=false turns it off")
    func gnomePrivacyKeys() throws {
        let capped = try Fixture(entries: { dir in [
            XBELEntry(uri: "file://\(dir)/fresh.txt", title: "Fresh gnu", app: Self.docs, modified: Date().addingTimeInterval(-3600)),
            XBELEntry(uri: "file://\(dir)/stale.txt", title: "Stale gnu", app: Self.docs, modified: Date().addingTimeInterval(-3 * 86_400)),
        ] }, privacy: "[org/gnome/desktop/privacy]\nrecent-files-max-age=2\n")
        #expect(try capped.waitFor("fresh gnu").count == 1, "\(capped.h.logTail())")
        #expect(try capped.search("stale gnu").isEmpty, "older than recent-files-max-age")

        let off = try Fixture(entries: { Self.standardEntries($0) }, privacy: "[org/gnome/desktop/privacy]\nremember-recent-files=false\n")
        _ = try off.search("anything") // starts the daemon
        #expect(waitUntil(timeout: 30) { off.h.bus.log.contains("recent files: the bridge is off") }, "\(off.h.logTail())")
        #expect(try off.search("zephyr").isEmpty)
    }

    @Test("A GTK-style entry just written makes the document current; with remember-recent-files=false it does not")
    func documentJustOpenedIsCurrent() throws {
        func justOpened(_ dir: String) -> [XBELEntry] {
            [XBELEntry(uri: "file://\(dir)/Minutes.txt", title: "Minutes kowhai", app: Self.docs, modified: Date())]
        }
        let f = try Fixture(entries: justOpened)
        var path = "/"
        #expect(try waitUntil(timeout: 30, interval: 0.05) {
            path = try f.currentActivity()
            return path != "/"
        }, "\(f.h.logTail())")
        let all = try f.client.call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(UA.activityInterface)])
        let properties = Dictionary((all.first?.stringVariantEntries ?? []).map { ($0.0, $0.1.unwrappedVariant) }, uniquingKeysWith: { a, _ in a })
        #expect(properties["ActivityType"] == .string("org.example.UserActivity.open-document"))
        #expect(properties["AppId"] == .string(Self.docs))
        #expect(properties["Title"] == .string("Minutes kowhai"))
        #expect(properties["EligibleForHandoff"] == .boolean(true))
        let info = Dictionary((properties["UserInfo"]?.stringVariantEntries ?? []).map { ($0.0, $0.1.unwrappedVariant) }, uniquingKeysWith: { a, _ in a })
        #expect(info["uri"] == .string("file://\(f.documents.path)/Minutes.txt"))
        #expect(info["mime-type"] == .string("text/plain"))

        let off = try Fixture(entries: justOpened, privacy: "[org/gnome/desktop/privacy]\nremember-recent-files=false\n")
        #expect(try off.currentActivity() == "/")
        #expect(waitUntil(timeout: 30) { off.h.bus.log.contains("recent files: the bridge is off") }, "\(off.h.logTail())")
        #expect(try off.currentActivity() == "/")
    }
}
