// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

@Suite("GNOME Shell search provider (org.gnome.Shell.SearchProvider2)")
struct GnomeSearchProviderTests {
    @Test("GetInitialResultSet finds a donated entry; GetResultMetas describes it")
    func initialResultSetAndMetas() throws {
        let h = try DesktopSearchHarness()
        let report = try h.donate("Quarterly report", description: "Numbers for the board", url: "https://example.com/q3")
        let notes = try h.donate("Meeting notes", app: UA.viewer, type: UA.viewType)

        // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity/SearchProvider \
        //   --method org.gnome.Shell.SearchProvider2.GetInitialResultSet "['quarterly', 'rep']"
        #expect(try h.initialResultSet(["quarterly", "rep"]) == [report])
        #expect(try h.initialResultSet(["nothing"]).isEmpty)
        #expect(try h.initialResultSet([]).isEmpty)

        // gdbus call … --method org.gnome.Shell.SearchProvider2.GetResultMetas "['<id>', '<id>', 'unknown']"
        let metas = try h.gdbusOK(UA.searchProviderPath, "\(UA.searchProvider).GetResultMetas",
                                  [h.gvariantStrings([report, notes, "0123456789abcdef0123456789abcdef"])]).stdout
        #expect(metas.contains("'id': <'\(report)'>"), "\(metas)")
        #expect(metas.contains("'name': <'Quarterly report'>"), "\(metas)")
        #expect(metas.contains("'description': <'Numbers for the board'>"), "\(metas)")
        #expect(metas.contains("'gicon': <'accessories-text-editor'>"), "the app's Icon= from its desktop entry: \(metas)")
        #expect(metas.contains("'clipboardText': <'https://example.com/q3'>"), "\(metas)")
        // No icon and no description: the generic icon and the app's name.
        #expect(metas.contains("'name': <'Meeting notes'>") && metas.contains("'description': <'Viewer'>")
                && metas.contains("'gicon': <'edit-find'>"), "\(metas)")
        #expect(!metas.contains("0123456789abcdef0123456789abcdef"), "unknown IDs are left out")
    }

    @Test("GetSubsearchResultSet narrows the previous results and never adds new ones")
    func subsearch() throws {
        let h = try DesktopSearchHarness()
        let report = try h.donate("Quarterly report")
        let budget = try h.donate("Quarterly budget")
        let initial = try h.initialResultSet(["quarterly"])
        #expect(Set(initial) == [report, budget])
        #expect(try h.subsearchResultSet(initial, ["quarterly", "rep"]) == [report])
        #expect(try h.subsearchResultSet([budget], ["quarterly"]) == [budget])
        #expect(try h.subsearchResultSet([], ["quarterly"]).isEmpty)
    }

    @Test("ActivateResult continues the saved activity through ContinueSavedActivity")
    func activateResult() throws {
        let h = try DesktopSearchHarness()
        let report = try h.donate("Quarterly report")
        do {
            let fixture = try HandlerFixture.start(app: UA.editor, bus: h.bus, directory: h.session.root)
            defer { fixture.terminate(grace: 0.5) }
            // gdbus call … --method org.gnome.Shell.SearchProvider2.ActivateResult '<id>' "['quarterly']" 1234
            let result = try h.gdbus(UA.searchProviderPath, "\(UA.searchProvider).ActivateResult", [report, "['quarterly']", "1234"])
            #expect(result.succeeded, "\(result)\n\(h.logTail())")
            let delivered = try #require(try fixture.readLine(timeout: 10), "the handler received nothing\n\(h.logTail())")
            let event = try #require(try JSONSerialization.jsonObject(with: Data(delivered.utf8)) as? [String: Any])
            #expect(event["type"] as? String == UA.editType)
            #expect(event["title"] as? String == "Quarterly report")
            // The shell's timestamp travels as an X11 startup id.
            #expect((event["platform"] as? [String: Any])?["desktop-startup-id"] as? String == "_TIME1234", "\(event)")
        }
        let unknown = try h.gdbus(UA.searchProviderPath, "\(UA.searchProvider).ActivateResult",
                                  ["0123456789abcdef0123456789abcdef", "@as []", "0"])
        #expect(unknown.gdbusErrorName == UA.error("NotFound"), "\(unknown)")
    }

    @Test("LaunchSearch launches org.example.UserActivity.desktop with the terms")
    func launchSearch() throws {
        let probe = try TemporaryDirectory(prefix: "uals-")
        let record = probe.appending("launched.txt")
        let script = probe.appending("record.sh")
        try writeFileAtomically(script, contents: "#!/bin/sh\nprintf '%s\\n' \"$@\" > \(shellQuote(record)).tmp && mv \(shellQuote(record)).tmp \(shellQuote(record))\n", mode: 0o755)
        let h = try DesktopSearchHarness(extraEntries: [("org.example.UserActivity", [
            "[Desktop Entry]", "Type=Application", "Name=Recent Activities", "Exec=\(script) %u",
        ])])
        // gdbus call … --method org.gnome.Shell.SearchProvider2.LaunchSearch "['quarterly', 'rep']" 0
        _ = try h.gdbusOK(UA.searchProviderPath, "\(UA.searchProvider).LaunchSearch", ["['quarterly', 'rëp']", "0"])
        #expect(waitUntil(timeout: 30) { FileManager.default.fileExists(atPath: record) }, "\(h.logTail())")
        #expect(try String(contentsOfFile: record, encoding: .utf8) == "useractivity-search:quarterly%20r%C3%ABp\n")
    }

    @Test("LaunchSearch without the desktop entry is an error, not a silent no-op")
    func launchSearchWithoutEntry() throws {
        let h = try DesktopSearchHarness()
        let result = try h.gdbus(UA.searchProviderPath, "\(UA.searchProvider).LaunchSearch", ["['x']", "0"])
        #expect(result.gdbusErrorName == "org.freedesktop.DBus.Error.Failed", "\(result)")
        #expect(result.stderr.contains("org.example.UserActivity.desktop is not installed"))
    }

    @Test("Introspection comes from the interface tables; wrong signatures are refused")
    func introspection() throws {
        let h = try DesktopSearchHarness()
        let xml = try h.gdbusOK(UA.searchProviderPath, "org.freedesktop.DBus.Introspectable.Introspect").stdout
        for member in ["GetInitialResultSet", "GetSubsearchResultSet", "GetResultMetas", "ActivateResult", "LaunchSearch"] {
            #expect(xml.contains("<method name=\\\"\(member)\\\">"), "\(member)")
        }
        let manager = try h.gdbusOK(UA.managerPath, "org.freedesktop.DBus.Introspectable.Introspect").stdout
        #expect(manager.contains("<node name=\\\"SearchProvider\\\"/>") && manager.contains("<node name=\\\"KRunner\\\"/>"), "\(manager)")
        // gdbus checks signatures against introspection; busctl lets us send the wrong one.
        let wrong = try h.bus.run("busctl", ["--user", "call", UA.busName, UA.searchProviderPath, UA.searchProvider,
                                             "GetInitialResultSet", "s", "quarterly"])
        #expect(!wrong.succeeded && wrong.stderr.contains("takes arguments of type (as)"), "\(wrong)")
    }
}

@Suite("KRunner runner (org.kde.krunner1)")
struct KRunnerTests {
    @Test("Match returns the entry with a relevance in 0…1")
    func match() throws {
        let h = try DesktopSearchHarness()
        let report = try h.donate("Quarterly report", description: "Numbers for the board", url: "https://example.com/q3")
        let budget = try h.donate("Quarterly budget report", app: UA.viewer, type: UA.viewType)

        // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity/KRunner \
        //   --method org.kde.krunner1.Match 'quarterly rep'
        let matches = try h.match("quarterly rep")
        #expect(Set(matches.map(\.id)) == [report, budget], "\(matches)")
        for match in matches {
            #expect(match.relevance >= 0 && match.relevance <= 1, "\(match)")
            #expect(match.type == 70)
        }
        #expect(matches.map(\.relevance).max() == 1, "the best result has relevance 1")
        let first = try #require(matches.first { $0.id == report })
        #expect(first.text == "Quarterly report" && first.icon == "accessories-text-editor")
        #expect(first.properties.contains("'subtext': <'Numbers for the board'>"), "\(first.properties)")
        #expect(first.properties.contains("'urls': <['https://example.com/q3']>"), "\(first.properties)")
        #expect(first.properties.contains("'actions': <['open-in-browser']>"), "\(first.properties)")
        let other = try #require(matches.first { $0.id == budget })
        #expect(other.icon == "edit-find" && other.properties.contains("'actions': <@as []>"), "\(other)")

        // The title typed in full (case and accents aside) is an exact match.
        let exact = try h.match("QUARTERLY REPORT")
        #expect(exact.first { $0.id == report }?.type == 100)
        #expect(exact.first { $0.id == report }?.relevance == 1)
        #expect(try h.match("nothing like this").isEmpty)
    }

    @Test("Actions and Config")
    func actionsAndConfig() throws {
        let h = try DesktopSearchHarness()
        let actions = try h.gdbusOK(UA.krunnerPath, "\(UA.krunner).Actions").stdout
        #expect(actions.trimmingCharacters(in: .whitespacesAndNewlines)
                == "([('open-in-browser', 'Open in Browser', 'internet-web-browser')],)", "\(actions)")
        let config = try h.gdbusOK(UA.krunnerPath, "\(UA.krunner).Config").stdout
        #expect(config.contains("'MinLetterCount': <2>"), "\(config)")
        _ = try h.gdbusOK(UA.krunnerPath, "\(UA.krunner).Teardown")
    }

    @Test("Run continues the saved activity; bad IDs and actions are errors")
    func run() throws {
        let h = try DesktopSearchHarness()
        let report = try h.donate("Quarterly report")
        do {
            let fixture = try HandlerFixture.start(app: UA.editor, bus: h.bus, directory: h.session.root)
            defer { fixture.terminate(grace: 0.5) }
            // gdbus call … --method org.kde.krunner1.Run '<id>' ''
            let result = try h.gdbus(UA.krunnerPath, "\(UA.krunner).Run", [report, ""])
            #expect(result.succeeded, "\(result)\n\(h.logTail())")
            let delivered = try #require(try fixture.readLine(timeout: 10), "the handler received nothing\n\(h.logTail())")
            #expect(delivered.contains("\"title\": \"Quarterly report\""), "\(delivered)")
        }
        #expect(try h.gdbus(UA.krunnerPath, "\(UA.krunner).Run", ["0123456789abcdef0123456789abcdef", ""]).gdbusErrorName
                == UA.error("NotFound"))
        #expect(try h.gdbus(UA.krunnerPath, "\(UA.krunner).Run", [report, "open-in-browser"]).gdbusErrorName
                == UA.error("InvalidArgument"), "no webpage-url to open")
        #expect(try h.gdbus(UA.krunnerPath, "\(UA.krunner).Run", [report, "fly"]).gdbusErrorName == UA.error("InvalidArgument"))
    }
}

@Suite("Shipped desktop files")
struct ShippedFilesTests {
    /// `[group]` → key → value of a simple key file.
    func keyFile(_ path: String) throws -> [String: [String: String]] {
        var groups: [String: [String: String]] = [:]
        var group = ""
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("[") { group = String(line.dropFirst().dropLast()); continue }
            guard let equals = line.firstIndex(of: "=") else { continue }
            groups[group, default: [:]][String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return groups
    }

    @Test("The search-provider .ini names the served object and a desktop entry GNOME Shell will show")
    func searchProviderIni() throws {
        let root = repositoryRoot()
        let ini = try #require(try keyFile(root + "/desktop/org.example.UserActivity.search-provider.ini")["Shell Search Provider"])
        #expect(ini["DesktopId"] == "org.example.UserActivity.desktop")
        #expect(ini["BusName"] == UA.busName)
        #expect(ini["ObjectPath"] == UA.searchProviderPath)
        #expect(ini["Version"] == "2")

        let entry = try #require(try keyFile(root + "/desktop/org.example.UserActivity.desktop")["Desktop Entry"])
        #expect(entry["Type"] == "Application")
        // GNOME Shell skips a provider whose app g_app_info_should_show() hides.
        #expect(entry["NoDisplay"] != "true" && entry["Hidden"] != "true")
        #expect(entry["Exec"]?.hasPrefix("useractivityctl browse") == true)
        #expect(entry["Terminal"] == "true")
        #expect(entry["DBusActivatable"] == nil || entry["DBusActivatable"] == "false",
                "the daemon does not implement org.freedesktop.Application")
    }

    @Test("The KRunner plugin file names the served object (DBus2 API)")
    func krunnerPlugin() throws {
        let entry = try #require(try keyFile(repositoryRoot() + "/desktop/krunner/org.example.UserActivity.desktop")["Desktop Entry"])
        #expect(entry["X-Plasma-API"] == "DBus2")
        #expect(entry["X-Plasma-DBusRunner-Service"] == UA.busName)
        #expect(entry["X-Plasma-DBusRunner-Path"] == UA.krunnerPath)
        #expect(entry["X-KDE-ServiceTypes"] == "Plasma/Runner")
        #expect(entry["Type"] == "Service")
        #expect(entry["Name"] != nil && entry["Icon"] != nil)
        // KRunner then keeps one match per ID across its queries; the IDs are saved IDs (krunnerStableMatchIDs).
        #expect(entry["X-Plasma-Runner-Unique-Results"] == "true")
    }
}
