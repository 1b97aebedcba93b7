// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

// The first run a desktop user sees: the service was just installed, no app
// has adopted it, but GTK has already recorded documents in
// recently-used.xbel. The CLI and both launchers must find them from the
// first start, and continuing one must open it in the app that recorded it.

@Suite("First run with an existing recently-used.xbel", .serialized)
struct FirstRunTests {
    static let writer = "com.example.Writer"

    /// A fresh session: the Writer app (its Exec records its arguments and
    /// launch variables), a document it recorded in recently-used.xbel, and
    /// the daemon installed for D-Bus activation but not yet started.
    final class FirstRun: @unchecked Sendable {
        let session: SessionEnvironment
        let bus: PrivateBus
        /// Documents live outside /tmp, which the bridge skips.
        let documents: TemporaryDirectory
        let document: String
        let record: String

        init() throws {
            session = try SessionEnvironment()
            documents = try TemporaryDirectory(prefix: "uae-docs-", base: "/var/tmp")
            document = documents.path + "/Harbour plan.txt"
            try writeFileAtomically(document, contents: "pier 4\n")
            record = session.root + "/writer.record"
            let recorder = try LaunchRecorder(directory: session.root)
            try session.writeDesktopEntry(appID: FirstRunTests.writer, types: [], name: "Writer",
                                          exec: recorder.command(recordingTo: record).joined(separator: " ") + " %U",
                                          extraLines: ["Icon=x-office-document", "MimeType=text/plain;"])
            // As GTK writes it: the application's name and its exec, not an app ID.
            let entry = XBELEntry(uri: "file://" + documents.path + "/Harbour%20plan.txt", title: nil, app: "Writer",
                                  exec: "'writer %u'", count: 2, modified: Date().addingTimeInterval(-600))
            try writeFileAtomically(session.dataHome + "/recently-used.xbel", contents: xbel([entry]))
            bus = try PrivateBus(environment: session)
            try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
        }

        deinit { bus.stop() }

        func logTail(_ lines: Int = 60) -> String {
            "--- bus log ---\n" + bus.log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
        }

        func gdbus(_ path: String, _ method: String, _ arguments: [String]) throws -> String {
            let result = try bus.run("gdbus", ["call", "--session", "--dest", UA.busName, "--object-path", path, "--method", method] + arguments)
            guard result.succeeded else { throw CommandFailure(result: result) }
            return result.stdout
        }

        /// What the Writer's Exec recorded; nil when it was not launched in time.
        func recorded() -> [String]? { LaunchRecorder.read(record) }
    }

    @Test("useractivityctl search, GNOME Shell and KRunner find the recorded document; continuing it opens it in the Writer")
    func recordedDocumentIsFoundAndOpened() throws {
        let f = try FirstRun()
        #expect(!FileManager.default.fileExists(atPath: f.session.stateHome + "/useractivity"), "a fresh install has no store yet")

        // The first call starts the daemon; the import runs right after, so wait for it (a guard, not a measurement).
        let ctl = try BuiltProducts.executable(named: "useractivityctl")
        var hits: [[String: Any]] = []
        _ = try waitUntil(timeout: 30, interval: 0.1) {
            let result = try runCommand(ctl, ["search", "harbour", "--json"], environment: f.bus.environment, timeout: 30)
            guard result.succeeded else { throw CommandFailure(result: result) }
            hits = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]] ?? []
            return !hits.isEmpty
        }
        #expect(hits.count == 1, "\(hits)\n\(f.logTail())")
        let hit = try #require(hits.first)
        #expect(hit["app-id"] as? String == Self.writer, "matched by the recorder's name: \(hit)")
        #expect(hit["activity-type"] as? String == "org.example.UserActivity.open-document")
        #expect(hit["title"] as? String == "Harbour plan.txt")
        let id = try #require(hit["saved-id"] as? String)

        // GNOME Shell, the service's own provider and the Writer's.
        let terms = "['harbour']"
        #expect(try f.gdbus(UA.searchProviderPath, "org.gnome.Shell.SearchProvider2.GetInitialResultSet", [terms]).contains("'\(id)'"))
        let own = UA.searchProviderPath + "/com_2eexample_2eWriter"
        #expect(try f.gdbus(own, "org.gnome.Shell.SearchProvider2.GetInitialResultSet", [terms]).contains("'\(id)'"))
        let metas = try f.gdbus(UA.searchProviderPath, "org.gnome.Shell.SearchProvider2.GetResultMetas", ["['\(id)']"])
        #expect(metas.contains("'gicon': <'x-office-document'>"), "the Writer's icon: \(metas)")
        // KRunner.
        #expect(try f.gdbus(UA.krunnerPath, "org.kde.krunner1.Match", ["harbour"]).contains("('\(id)', 'Harbour plan.txt'"))

        // Chosen in GNOME Shell: the Writer is launched with the document.
        _ = try f.gdbus(UA.searchProviderPath, "org.gnome.Shell.SearchProvider2.ActivateResult", [id, terms, "4321"])
        let byShell = try #require(f.recorded(), "the Writer was not launched\n\(f.logTail())")
        #expect(byShell.contains("ARG \(f.document)"), "\(byShell)")
        #expect(byShell.filter { $0.hasPrefix("ARG ") }.count == 1, "\(byShell)")
        #expect(byShell.contains("DESKTOP_STARTUP_ID=_TIME4321"), "\(byShell)")
        try FileManager.default.removeItem(atPath: f.record)

        // Chosen in KRunner, which sends its activation token first on the same connection.
        let connection = try Connection.bus(address: f.bus.address)
        defer { connection.close() }
        for (member, arguments) in [("SetActivationToken", [TypedValue.string("tok-first-run")]), ("Run", [.string(id), .string("")])] {
            let message = Message.methodCall(destination: UA.busName, path: UA.krunnerPath, interface: "org.kde.krunner1", member: member)
            try message.append(arguments)
            _ = try connection.call(message, timeoutMilliseconds: 25_000)
        }
        let byKRunner = try #require(f.recorded(), "the Writer was not launched\n\(f.logTail())")
        #expect(byKRunner.contains("ARG \(f.document)"), "\(byKRunner)")
        #expect(byKRunner.contains("XDG_ACTIVATION_TOKEN=tok-first-run"), "\(byKRunner)")
    }
}
