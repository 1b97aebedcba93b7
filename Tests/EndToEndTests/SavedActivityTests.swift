// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

extension DaemonHarness {
    /// `gdbus call … --method org.example.UserActivity.Donate <type> "<a{sv}>"`; the saved id.
    func donate(_ type: String, _ properties: String) throws -> String {
        let result = try gdbusManager("Donate", [type, properties])
        guard result.succeeded, let savedID = result.gdbusFirstString else { throw CommandFailure(result: result) }
        return savedID
    }

    /// `busctl --user --json=short call org.example.UserActivity /org/example/UserActivity org.example.UserActivity Search sa{sv} <query> 1 limit u <limit>`.
    func search(_ query: String, limit: UInt32 = 100) throws -> [[String: Any]] {
        let result = try busctl(["--json=short", "call", UA.busName, UA.managerPath, UA.managerInterface, "Search",
                                 "sa{sv}", query, "1", "limit", "u", "\(limit)"], debug: true)
        guard result.succeeded else {
            throw ParseFailure("Search failed: \(result.busctlErrorName ?? "?"): \(result.stderr.split(separator: "\n").last ?? "")")
        }
        let json = try BusctlJSON(parsing: result.stdout.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? "")
        let rows = json.arguments.first as? [Any] ?? []
        return rows.map { row in
            ((row as? [String: Any]) ?? [:]).mapValues { BusctlJSON.unwrapVariant($0) ?? NSNull() }
        }
    }

    /// The titles Search finds for `query`.
    func searchTitles(_ query: String) throws -> Set<String> {
        Set(try search(query).compactMap { $0["title"] as? String })
    }

    /// SIGTERM to the daemon; waits until it has released its name.
    func terminateDaemon(signal: Int32 = SIGTERM) throws {
        guard let pid = try daemonPID() else { return }
        kill(pid, signal)
        let released = try waitUntil(timeout: 30, interval: 0.02) { try !nameHasOwner() }
        if !released { throw ParseFailure("the daemon kept its name 30 s after signal \(signal)\n\(logTail(20))") }
    }
}

@Suite("Saved activities")
struct SavedActivityTests {
    @Test("Donate, then Search finds it (gdbus and busctl)")
    func donateThenSearch() throws {
        let h = try DaemonHarness()
        do {
            // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.example.UserActivity.Donate com.example.Editor.edit-document "{'app-id': <'com.example.Editor'>, 'title': <'Quarterly report'>, 'keywords': <['finance', 'q3']>, 'content-description': <'Numbers for the board'>, 'persistent-identifier': <'doc-42'>, 'eligible-for-search': <true>}"
            let properties = "{'app-id': <'com.example.Editor'>, 'title': <'Quarterly report'>, 'keywords': <['finance', 'q3']>, 'content-description': <'Numbers for the board'>, 'persistent-identifier': <'doc-42'>, 'eligible-for-search': <true>}"
            let savedID = try h.donate(UA.editType, properties)
            #expect(!savedID.isEmpty)

            // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.example.UserActivity.Search 'quarter' '{}'
            let gdbus = try h.gdbusManager("Search", ["quarter", "{}"])
            #expect(gdbus.succeeded, "\(gdbus)")
            #expect(gdbus.stdout.contains("'\(savedID)'") && gdbus.stdout.contains("'Quarterly report'"), "\(gdbus.stdout)")

            let results = try h.search("QUARTERLY rep")
            #expect(results.count == 1)
            let hit = try #require(results.first)
            #expect(hit["saved-id"] as? String == savedID)
            #expect(hit["app-id"] as? String == UA.editor)
            #expect(hit["activity-type"] as? String == UA.editType)
            #expect(hit["title"] as? String == "Quarterly report")
            #expect(hit["content-description"] as? String == "Numbers for the board")
            #expect(hit["keywords"] as? [String] == ["finance", "q3"])
            #expect(hit["webpage-url"] as? String == "")
            #expect(hit["score"] is NSNumber || hit["score"] is Double)
            #expect((jsonInt(hit["last-used"]) ?? 0) > 0)

            #expect(try h.search("finance").count == 1, "keywords are searched")
            #expect(try h.search("board").count == 1, "the content description is searched")
            #expect(try h.search("unrelated").isEmpty)
            // A repeated Donate with the same persistent identifier returns the same saved id.
            #expect(try h.donate(UA.editType, properties) == savedID)
            #expect(try h.search("quarterly").count == 1)

            // Case- and accent-insensitive; every word must match; only the last word is a prefix.
            let cafe = try h.donate(UA.viewType, "{'app-id': <'com.example.Viewer'>, 'title': <'Café crème brûlée'>, 'eligible-for-search': <true>}")
            let ids = { (query: String) in try h.search(query).compactMap { $0["saved-id"] as? String } }
            #expect(try ids("cafe creme") == [cafe])
            #expect(try ids("CAFÉ bru") == [cafe], "the last word matches as a prefix")
            #expect(try ids("bru cafe").isEmpty, "only the last word matches as a prefix")
            #expect(try ids("cafe quarterly").isEmpty, "every word must match")
            #expect(try ids("quarterly OR cafe").isEmpty, "operators are plain words")
            #expect(try ids("!!!").isEmpty)
        }
    }

    @Test("DeleteSavedActivities / DeleteAllSavedActivities touch only the caller's app")
    func deletionIsPerApp() throws {
        let h = try DaemonHarness()
        do {
            func donate(_ type: String, _ app: String, _ id: String, _ title: String) throws {
                _ = try h.donate(type, "{'app-id': <'\(app)'>, 'title': <'\(title)'>, 'persistent-identifier': <'\(id)'>, 'eligible-for-search': <true>}")
            }
            try donate(UA.editType, UA.editor, "p1", "zebra editor one")
            try donate(UA.editType, UA.editor, "p2", "zebra editor two")
            try donate(UA.viewType, UA.viewer, "p1", "zebra viewer one")
            try donate(UA.viewType, UA.viewer, "p3", "zebra viewer three")
            #expect(try h.searchTitles("zebra") == ["zebra editor one", "zebra editor two", "zebra viewer one", "zebra viewer three"])

            // The delete methods take no a{sv}: the app is named per connection with RegisterApplication.
            let editor = try h.connect()
            try editor.manager("RegisterApplication", [.string(UA.editor)])
            try editor.manager("DeleteSavedActivities", [.stringArray(["p1"])])
            #expect(try h.searchTitles("zebra") == ["zebra editor two", "zebra viewer one", "zebra viewer three"],
                    "the viewer's p1 must survive the editor's deletion of its own p1")

            let viewer = try h.connect()
            try viewer.manager("RegisterApplication", [.string(UA.viewer)])
            try viewer.manager("DeleteAllSavedActivities")
            #expect(try h.searchTitles("zebra") == ["zebra editor two"])

            // An unidentified caller deletes nothing.
            // busctl --user call org.example.UserActivity /org/example/UserActivity org.example.UserActivity DeleteAllSavedActivities
            let anonymous = try h.busctl(["call", UA.busName, UA.managerPath, UA.managerInterface, "DeleteAllSavedActivities"],
                                         debug: true)
            #expect(anonymous.busctlErrorName == UA.error("UnknownApplication"), "\(anonymous.stderr.suffix(400))")
            let anonymousDelete = try h.gdbusManager("DeleteSavedActivities", ["['p2']"])
            #expect(anonymousDelete.gdbusErrorName == UA.error("UnknownApplication"), "\(anonymousDelete)")
            #expect(try h.searchTitles("zebra") == ["zebra editor two"])

            try editor.manager("DeleteAllSavedActivities")
            #expect(try h.searchTitles("zebra").isEmpty)
        }
    }

    @Test("Saved activities survive a restart (SIGTERM, then re-activation)")
    func persistenceAcrossRestart() throws {
        let h = try DaemonHarness()
        do {
            let savedID = try h.donate(UA.editType, "{'app-id': <'com.example.Editor'>, 'title': <'Persistent notes'>, 'persistent-identifier': <'notes'>, 'eligible-for-search': <true>}")
            let firstPID = try #require(try h.daemonPID())
            try h.terminateDaemon()

            // The search re-activates the daemon.
            let gdbus = try h.gdbusManager("Search", ["persistent", "{}"])
            #expect(gdbus.succeeded && gdbus.stdout.contains("'\(savedID)'"), "\(gdbus)\n\(h.logTail(30))")
            let secondPID = try #require(try h.daemonPID())
            #expect(secondPID != firstPID, "a new instance answered")
            #expect(FileManager.default.fileExists(atPath: "\(h.session.stateHome)/useractivity"),
                    "saved activities live in $XDG_STATE_HOME/useractivity/")
        }
    }

    @Test("20 rounds of Donate then SIGKILL: every acknowledged donation is there after restart")
    func acknowledgedDonationsSurviveSIGKILL() throws {
        let h = try DaemonHarness()
        do {
            let control = try h.connect()
            var savedIDs: [String] = []
            for round in 0..<20 {
                let client = try h.connect()
                // Activate (auto-start) and learn the PID before donating, so the kill follows the reply at once.
                _ = try client.property(UA.managerPath, "Version", interface: UA.managerInterface)
                let pid = try #require(try client.busDaemon("GetConnectionUnixProcessID", [.string(UA.busName)]).first?.uint32Value)
                let reply = try client.manager("Donate", [.string(UA.editType), .stringVariantDictionary([
                    ("app-id", .string(UA.editor)), ("title", .string("Roundtrip entry \(round)")),
                    ("persistent-identifier", .string("round-\(round)")), ("eligible-for-search", .boolean(true)),
                ])])
                kill(pid_t(pid), SIGKILL)
                savedIDs.append(try #require(reply.first?.stringValue))
                client.close()
                let released = try waitUntil(timeout: 30, interval: 0.005) {
                    try control.busDaemon("NameHasOwner", [.string(UA.busName)]).first?.boolValue == false
                }
                try #require(released, "round \(round): the killed daemon still owns the name")
            }
            let results = try h.search("roundtrip", limit: 100)
            let found = Set(results.compactMap { $0["saved-id"] as? String })
            #expect(results.count == 20)
            #expect(Set(savedIDs).subtracting(found).isEmpty,
                    "lost after SIGKILL: \(savedIDs.enumerated().filter { !found.contains($0.element) }.map { "round \($0.offset)" })")
        }
    }
}
