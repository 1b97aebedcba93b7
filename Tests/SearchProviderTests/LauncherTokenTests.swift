// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

// KRunner's SetActivationToken and the per-app GNOME Shell providers. The
// continued entries are open-document activities of an app whose Exec runs a
// script that records its arguments and XDG_ACTIVATION_TOKEN in the test's
// temporary directory.

private let docs = "com.example.Docs"

/// A harness with the recording Docs app and one document on disk.
private func harness() throws -> (DesktopSearchHarness, record: String, document: String) {
    let h = try DesktopSearchHarness(extraEntries: [])
    let script = h.session.root + "/record.sh"
    let record = h.session.root + "/docs.record"
    try writeFileAtomically(script, contents: """
        #!/bin/sh
        out="$1"; shift
        { for a in "$@"; do printf 'ARG %s\\n' "$a"; done
          printf 'XDG_ACTIVATION_TOKEN=%s\\n' "$XDG_ACTIVATION_TOKEN"; } > "$out.tmp.$$"
        mv "$out.tmp.$$" "$out"

        """, mode: 0o755)
    try h.session.writeDesktopEntry(appID: docs, types: [], name: "Docs", exec: "/bin/sh \(script) \(record) %U",
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

private func waitForRecord(_ path: String) -> [String]? {
    var lines: [String]?
    _ = waitUntil(timeout: 10) {
        lines = (try? String(contentsOfFile: path, encoding: .utf8)).map { $0.split(separator: "\n").map(String.init) }
        return lines != nil
    }
    return lines
}

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
        let path = UA.searchProviderPath + "/com_2eexample_2eDocs"
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
}
