// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

// KRunner's SetActivationToken and the per-app GNOME Shell providers. The
// continued entries are open-document activities of an app whose Exec runs a
// script that records its arguments and XDG_ACTIVATION_TOKEN in the test's
// temporary directory.

private let docs = "com.example.Docs"

/// A harness with the recording Docs app and one document on disk.
private func harness() throws -> (DesktopSearchHarness, record: String, document: String) {
    let h = try DesktopSearchHarness(extraEntries: [])
    let record = h.session.root + "/docs.record"
    let recorder = try LaunchRecorder(directory: h.session.root)
    try h.session.writeDesktopEntry(appID: docs, types: [], name: "Docs",
                                    exec: recorder.command(recordingTo: record).joined(separator: " ") + " %U",
                                    extraLines: ["Icon=x-office-document", "MimeType=text/plain;"])
    let document = h.session.root + "/token-report.txt"
    try writeFileAtomically(document, contents: "hello\n")
    return (h, record, document)
}

private func donateDocument(_ h: DesktopSearchHarness, title: String, path: String) throws -> String {
    let properties = "{'app-id': <'\(docs)'>, 'title': <'\(title)'>, 'eligible-for-search': <true>, 'user-info': <{'uri': <'file://\(path)'>}>}"
    let result = try h.gdbusOK(UA.managerPath, "org.example.UserActivity.Donate", ["org.example.UserActivity.open-document", properties])
    return try #require(result.stdout.firstMatch(of: #/'([0-9a-f]{32})'/#).map { String($0.1) }, "\(result)")
}

private func waitForRecord(_ path: String) -> [String]? { LaunchRecorder.read(path, timeout: 10) }

@Suite("Launchers: activation tokens and per-app providers", .serialized)
struct LauncherTokenTests {
    @Test("KRunner: SetActivationToken then Run passes the token to the continued app, once")
    func krunnerActivationToken() throws {
        let (h, record, document) = try harness()
        let id = try donateDocument(h, title: "Quarterly token report", path: document)
        // One connection for both calls, as KRunner makes them.
        let connection = try Connection.bus(address: h.bus.address)
        defer { connection.close() }
        func call(_ member: String, _ arguments: [TypedValue]) throws {
            let message = Message.methodCall(destination: UA.busName, path: UA.krunnerPath, interface: UA.krunner, member: member)
            try message.append(arguments)
            _ = try connection.call(message, timeoutMilliseconds: 25_000)
        }
        try call("SetActivationToken", [.string("tok-krunner-1")])
        try call("Run", [.string(id), .string("")])
        let first = try #require(waitForRecord(record), "\(h.logTail())")
        #expect(first.contains("ARG \(document)"), "\(first)")
        #expect(first.contains("XDG_ACTIVATION_TOKEN=tok-krunner-1"), "\(first)")

        try FileManager.default.removeItem(atPath: record)
        try call("Run", [.string(id), .string("")])
        let second = try #require(waitForRecord(record), "\(h.logTail())")
        #expect(second.contains("XDG_ACTIVATION_TOKEN="), "the token is used up by the first Run: \(second)")
        #expect(!second.contains("XDG_ACTIVATION_TOKEN=tok-krunner-1"))
    }

    @Test("GNOME Shell: an app's own provider object returns only its entries, with its icon; other paths are UnknownObject")
    func perAppProvider() throws {
        let (h, record, document) = try harness()
        let docID = try donateDocument(h, title: "Quarterly zz token report", path: document)
        let editorID = try h.donate("Quarterly zz editor report")
        // The object the shipped template names, as an app copies it for itself.
        let ini = try #require(try ShippedFilesTests().keyFile(repositoryRoot() + "/desktop/app-search-provider.ini.example")["Shell Search Provider"])
        #expect(ini["DesktopId"] == "\(docs).desktop" && ini["BusName"] == UA.busName && ini["Version"] == "2", "\(ini)")
        let path = try #require(ini["ObjectPath"])
        #expect(path == UA.searchProviderPath + "/com_2eexample_2eDocs", "g_dbus_escape_object_path of the app ID")
        let terms = "['quarterly', 'zz']"

        // gdbus call … --object-path /org/example/UserActivity/SearchProvider/com_2eexample_2eDocs \
        //   --method org.gnome.Shell.SearchProvider2.GetInitialResultSet "['quarterly', 'zz']"
        let all = try h.gdbusOK(UA.searchProviderPath, "\(UA.searchProvider).GetInitialResultSet", [terms]).stdout
        #expect(all.contains(docID) && all.contains(editorID), "\(all)")
        let own = try h.gdbusOK(path, "\(UA.searchProvider).GetInitialResultSet", [terms]).stdout
        #expect(own.contains(docID) && !own.contains(editorID), "\(own)")
        let sub = try h.gdbusOK(path, "\(UA.searchProvider).GetSubsearchResultSet", ["['\(docID)', '\(editorID)']", terms]).stdout
        #expect(sub.contains(docID) && !sub.contains(editorID), "\(sub)")

        let metas = try h.gdbusOK(path, "\(UA.searchProvider).GetResultMetas", ["['\(docID)', '\(editorID)']"]).stdout
        #expect(metas.contains("'gicon': <'x-office-document'>"), "the app's Icon=: \(metas)")
        #expect(!metas.contains(editorID), "another app's entry is not this provider's: \(metas)")

        _ = try h.gdbusOK(path, "\(UA.searchProvider).ActivateResult", [docID, terms, "0"])
        let launched = try #require(waitForRecord(record), "\(h.logTail())")
        #expect(launched.contains("ARG \(document)"), "\(launched)")
        let other = try h.gdbus(path, "\(UA.searchProvider).ActivateResult", [editorID, terms, "0"])
        #expect(other.gdbusErrorName == UA.error("NotFound"), "\(other)")

        let bad = try h.bus.run("busctl", ["--user", "call", UA.busName, UA.searchProviderPath + "/nope", UA.searchProvider,
                                           "GetInitialResultSet", "as", "1", "quarterly"])
        #expect(!bad.succeeded && bad.stderr.contains("no object"), "\(bad)")
    }

    @Test("KRunner: match IDs are the saved IDs, unique in a reply, the same in every query and after a restart")
    func krunnerStableMatchIDs() throws {
        let h = try DesktopSearchHarness()
        let report = try h.donate("Quarterly stable report")
        let budget = try h.donate("Quarterly stable budget", app: UA.viewer, type: UA.viewType)
        let first = try h.match("quarterly stable").map(\.id)
        #expect(Set(first) == [report, budget] && first.count == 2, "\(first)")
        #expect(try h.match("stable rep").map(\.id) == [report], "another query, the same ID")

        let message = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                         interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID")
        try message.append([.string(UA.busName)])
        let connection = try Connection.bus(address: h.bus.address)
        defer { connection.close() }
        let pid = try #require(try connection.call(message, timeoutMilliseconds: 25_000).arguments().first?.uint32Value)
        kill(pid_t(pid), SIGTERM)
        #expect(waitUntil(timeout: 30) { !FileManager.default.fileExists(atPath: "/proc/\(pid)") || isZombie(pid) })
        // A later call starts the daemon again by D-Bus activation (one sent while the bus
        // still had the old connection fails, hence the retries).
        var again: [String] = []
        _ = waitUntil(timeout: 30, interval: 0.1) {
            again = (try? h.match("quarterly stable").map(\.id)) ?? []
            return !again.isEmpty
        }
        #expect(Set(again) == Set(first), "after a restart: \(again) against \(first)\n\(h.logTail())")
    }
}

/// A process that has exited but not been reaped yet.
private func isZombie(_ pid: UInt32) -> Bool {
    ((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "").contains(") Z ")
}
