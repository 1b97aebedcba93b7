// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

@Suite("useractivityctl")
struct CLITests {
    static let searchKeys: Set<String> = ["saved-id", "app-id", "activity-type", "title", "content-description",
                                          "keywords", "webpage-url", "score", "last-used"]
    static let suggestionKeys = searchKeys.union(["suggested-invocation-phrase", "use-count"])

    @Test("donate prints a saved id; search --json has exactly the spec's result keys")
    func donateThenSearchJSON() throws {
        let h = try CLIHarness()
        let savedID = try h.donate(title: "Quarterly report", extra: [
            "--description", "Numbers for the board", "--keyword", "finance", "--keyword", "q3",
            "--persistent-id", "doc-42", "--url", "https://example.com/doc/42", "--user-info", "page:u=3",
        ])
        #expect(savedID.count == 32, "donate should print the saved id, got '\(savedID)'")

        let results = try #require(try h.ctlJSON(["search", "quarterly", "rep"]) as? [[String: Any]])
        try #require(results.count == 1, "\(results)")
        let result = results[0]
        #expect(Set(result.keys) == Self.searchKeys)
        #expect(result["saved-id"] as? String == savedID)
        #expect(result["app-id"] as? String == UA.editor)
        #expect(result["activity-type"] as? String == UA.editType)
        #expect(result["title"] as? String == "Quarterly report")
        #expect(result["content-description"] as? String == "Numbers for the board")
        #expect(result["keywords"] as? [String] == ["finance", "q3"])
        #expect(result["webpage-url"] as? String == "https://example.com/doc/42")
        #expect((result["score"] as? NSNumber)?.doubleValue ?? 0 > 0)
        #expect((result["last-used"] as? NSNumber)?.int64Value ?? 0 > 1_600_000_000_000_000)

        // The same donation again (same persistent id) is the same saved entry.
        #expect(try h.donate(title: "Quarterly report", extra: ["--persistent-id", "doc-42"]) == savedID)

        // Filters pass through; nothing matches another app or type.
        #expect((try h.ctlJSON(["search", "quarterly", "--app-id", UA.viewer]) as? [Any])?.isEmpty == true)
        #expect((try h.ctlJSON(["search", "quarterly", "--type", UA.viewType]) as? [Any])?.isEmpty == true)
        #expect((try h.ctlJSON(["search", "quarterly", "--limit", "1"]) as? [Any])?.count == 1)
    }

    @Test("search prints a table for people")
    func searchTable() throws {
        let h = try CLIHarness()
        let savedID = try h.donate(title: "Budget 2027")
        let table = try h.ctlOK(["search", "budget"]).stdout
        let lines = table.split(separator: "\n")
        #expect(lines.first?.hasPrefix("SAVED ID") == true, "\(table)")
        #expect(lines.count == 2 && lines[1].contains(savedID) && lines[1].contains("Budget 2027") && lines[1].contains(UA.editor), "\(table)")
        #expect(try h.ctlOK(["search", "nothing-like-this"]).trimmedStdout == "No saved activities match.")
    }

    @Test("suggest --json has the spec's suggestion keys")
    func suggestJSON() throws {
        let h = try CLIHarness()
        let savedID = try h.donate(title: "Morning mail", extra: ["--phrase", "Check mail"])
        let results = try #require(try h.ctlJSON(["suggest", "--limit", "5"]) as? [[String: Any]])
        try #require(results.count == 1, "\(results)")
        #expect(Set(results[0].keys) == Self.suggestionKeys)
        #expect(results[0]["saved-id"] as? String == savedID)
        #expect(results[0]["suggested-invocation-phrase"] as? String == "Check mail")
        #expect((results[0]["use-count"] as? NSNumber)?.intValue == 1)
        #expect(try h.ctlOK(["suggest"]).stdout.contains("Morning mail"))
    }

    @Test("privacy: pause shows as paused, nothing is saved, resume saves again")
    func privacyRoundTrip() throws {
        let h = try CLIHarness()
        try h.ctlOK(["pause"])
        let paused = try #require(try h.ctlJSON(["privacy"]) as? [String: Any])
        #expect(paused["Paused"] as? Bool == true)
        #expect(Set(paused.keys) == ["Paused", "BlockedApplications", "BlockedActivityTypes", "RetentionDays", "MaxSavedPerApplication", "Bridges",
                                     "RecentDocumentsBecomeCurrent"])
        #expect(paused["RecentDocumentsBecomeCurrent"] as? Bool == true)
        #expect(try h.ctlOK(["privacy"]).stdout.contains(#/Bridges:\s+recent-files/#))
        #expect(try h.ctlOK(["privacy"]).stdout.contains(#/Saving:\s+paused/#))
        #expect(try h.donate(title: "Secret") == "", "while paused, donate saves nothing and prints an empty id")

        try h.ctlOK(["resume"])
        #expect((try h.ctlJSON(["privacy"]) as? [String: Any])?["Paused"] as? Bool == false)
        #expect(!(try h.donate(title: "Public")).isEmpty)

        try h.ctlOK(["block-app", UA.viewer])
        try h.ctlOK(["block-type", "com.example.Viewer.other"])
        try h.ctlOK(["retention", "30"])
        try h.ctlOK(["max-saved", "50"])
        try h.ctlOK(["recent-documents-current", "off"])
        #expect(try h.ctlOK(["privacy"]).stdout.contains(#/Documents just opened:\s+not current/#))
        var settings = try #require(try h.ctlJSON(["privacy"]) as? [String: Any])
        #expect(settings["BlockedApplications"] as? [String] == [UA.viewer])
        #expect(settings["BlockedActivityTypes"] as? [String] == ["com.example.Viewer.other"])
        #expect((settings["RetentionDays"] as? NSNumber)?.intValue == 30)
        #expect((settings["MaxSavedPerApplication"] as? NSNumber)?.intValue == 50)
        #expect(settings["RecentDocumentsBecomeCurrent"] as? Bool == false)
        try h.ctlOK(["unblock-app", UA.viewer])
        try h.ctlOK(["unblock-type", "com.example.Viewer.other"])
        settings = try #require(try h.ctlJSON(["privacy"]) as? [String: Any])
        #expect(settings["BlockedApplications"] as? [String] == [])
        #expect(settings["BlockedActivityTypes"] as? [String] == [])
    }

    @Test("forget-app, forget-range (ISO 8601 and µs) and forget-all --yes")
    func forget() throws {
        let h = try CLIHarness()
        _ = try h.donate(title: "One")
        _ = try h.donate(title: "Two")
        #expect(try h.ctlOK(["forget-range", "1970-01-01", "1970-01-02T00:00:00Z"]).trimmedStdout == "Deleted 0 saved activities.")
        #expect(try h.ctlOK(["forget-app", UA.editor]).trimmedStdout == "Deleted 2 saved activities.")
        _ = try h.donate(title: "Three")
        #expect(try h.ctlOK(["forget-range", "0", "now"]).trimmedStdout == "Deleted 1 saved activity.")
        _ = try h.donate(title: "Four")

        let refused = try h.ctl(["forget-all"])
        #expect(refused.exitCode == 64)
        #expect(refused.stderr.hasPrefix("useractivityctl: forget-all deletes every saved activity"), "\(refused.stderr)")
        #expect((try h.ctlJSON(["forget-all", "--yes"]) as? [String: Any])?["deleted"] as? Int == 1)

        let bad = try h.ctl(["forget-range", "yesterday", "now"])
        #expect(bad.exitCode == 64 && bad.stderr.contains("is not a time"), "\(bad)")
    }

    @Test("delete and delete-all act for --app-id")
    func delete() throws {
        let h = try CLIHarness()
        _ = try h.donate(title: "Keep me", extra: ["--persistent-id", "keep"])
        _ = try h.donate(title: "Drop me", extra: ["--persistent-id", "drop"])
        try h.ctlOK(["delete", "drop", "--app-id", UA.editor])
        let titles = (try h.ctlJSON(["search", "me"]) as? [[String: Any]])?.compactMap { $0["title"] as? String }
        #expect(titles == ["Keep me"])
        try h.ctlOK(["delete-all", "--app-id", UA.editor])
        #expect((try h.ctlJSON(["search", "me"]) as? [Any])?.isEmpty == true)
    }

    @Test("--help is exactly the committed text")
    func help() throws {
        let h = try CLIHarness(installDaemon: false)
        let result = try h.ctlOK(["--help"])
        let expectedPath = repositoryRoot() + "/Tests/CLITests/Expected/help.txt"
        let expected = try String(contentsOfFile: expectedPath, encoding: .utf8)
        #expect(result.stdout == expected, "\(expectedPath) differs from `useractivityctl --help`: \(firstDifference(expected, result.stdout))")
    }

    @Test("No session bus: a helpful error, exit 69")
    func noSessionBus() throws {
        let h = try CLIHarness(installDaemon: false)
        // The session layout without DBUS_SESSION_BUS_ADDRESS; its runtime dir has no bus socket.
        let result = try h.ctl(["status"], environment: h.session.environment)
        #expect(result.exitCode == UA.unavailable)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.first?.hasPrefix("useractivityctl: no session bus: DBUS_SESSION_BUS_ADDRESS is not set") == true, "\(result.stderr)")
        #expect(result.stderr.contains("dbus-run-session"), "the error should say what to do: \(result.stderr)")
    }

    @Test("Daemon neither running nor activatable: ServiceUnknown with advice, exit 69")
    func daemonUnavailable() throws {
        let h = try CLIHarness(installDaemon: false)
        let search = try h.ctl(["search", "anything"])
        #expect(search.exitCode == UA.unavailable)
        #expect(search.stderr.hasPrefix("useractivityctl: org.freedesktop.DBus.Error.ServiceUnknown: "), "\(search.stderr)")
        #expect(search.stderr.contains("useractivityd is not running and D-Bus could not start it"), "\(search.stderr)")

        let status = try h.ctl(["status"])
        #expect(status.exitCode == UA.unavailable)
        #expect(status.stdout.contains("not running and not activatable"), "\(status.stdout)")
        #expect(status.stderr.contains("is not running and cannot be started"), "\(status.stderr)")
    }

    @Test("D-Bus errors are printed as useractivityctl: <ErrorName>: <message>, exit 1")
    func dbusErrorFormat() throws {
        let h = try CLIHarness()
        let result = try h.ctl(["donate", "com.example.Editor.undeclared", "--app-id", UA.editor])
        #expect(result.exitCode == 1)
        #expect(result.stderr.hasPrefix("useractivityctl: org.example.UserActivity.Error.NotDeclared: "), "\(result.stderr)")
        #expect(result.stdout.isEmpty)

        let badUserInfo = try h.ctl(["donate", UA.editType, "--app-id", UA.editor, "--user-info", "page=three"])
        #expect(badUserInfo.exitCode == 64 && badUserInfo.stderr.contains("--user-info"), "\(badUserInfo)")
    }

    @Test("status, become-current, current, list and show; Ctrl-C (SIGTERM) ends the activity")
    func liveActivity() throws {
        let h = try CLIHarness()
        let holder = try h.spawnCtl(["become-current", UA.editType, "--app-id", UA.editor, "--title", "Draft",
                                     "--user-info", "page:u=3", "--user-info", "tags=['a', 'b']", "--user-info", "ratio=0.5"])
        defer { holder.terminate(grace: 1) }
        let path = try #require(try holder.readLine(timeout: 20), "become-current printed nothing: \(holder.stderrText)\n\(h.logTail())")
        #expect(path.hasPrefix("/org/example/UserActivity/activity/"))

        let current = try #require(try h.ctlJSON(["current"]) as? [String: Any])
        #expect(current["path"] as? String == path)
        let properties = try #require(current["properties"] as? [String: Any])
        #expect(properties["Title"] as? String == "Draft")
        #expect(properties["Current"] as? Bool == true)
        let userInfo = try #require(properties["UserInfo"] as? [String: Any])
        #expect((userInfo["page"] as? NSNumber)?.intValue == 3)
        #expect(userInfo["tags"] as? [String] == ["a", "b"])
        #expect((userInfo["ratio"] as? NSNumber)?.doubleValue == 0.5)
        // The human form keeps the types (GVariant text).
        let shown = try h.ctlOK(["show", String(path.split(separator: "/").last!)]).stdout
        #expect(shown.contains("<uint32 3>") && shown.contains("<['a', 'b']>") && shown.contains("<0.5>"), "\(shown)")

        let list = try #require(try h.ctlJSON(["list"]) as? [[String: Any]])
        #expect(list.map { $0["path"] as? String } == [path])
        #expect(try h.ctlOK(["list"]).stdout.contains("Draft"))

        let status = try #require(try h.ctlJSON(["status"]) as? [String: Any])
        #expect(status["running"] as? Bool == true)
        #expect(status["version"] as? String == "0.1.0")
        #expect(status["current-activity"] as? String == path)
        #expect(status["live-activities"] as? Int == 1)
        #expect(try h.ctlOK(["status"]).stdout.contains("Live activities: 1"))

        holder.signal(SIGTERM)
        #expect(holder.waitForExit(timeout: 10) == 0, "become-current should exit 0 on SIGTERM: \(holder.stderrText)")
        #expect(holder.stderrText.contains("Press Ctrl-C to end it"))
        #expect(try h.ctlOK(["current"]).trimmedStdout == "No current activity.")
        #expect(try h.ctlOK(["list"]).trimmedStdout == "No live activities.")
    }

    @Test("become-current reports changes of Current only: not its own becoming current, once when another takes over")
    func becomeCurrentReportsChangesOnly() throws {
        let h = try CLIHarness()
        let first = try h.spawnCtl(["become-current", UA.editType, "--app-id", UA.editor, "--title", "First"])
        defer { first.terminate(grace: 1) }
        _ = try #require(try first.readLine(timeout: 20), "become-current printed nothing: \(first.stderrText)\n\(h.logTail())")
        // Its own PropertiesChanged (Current: true) follows the reply by about a millisecond.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!first.stderrText.contains("current again"), "\(first.stderrText)")

        let second = try h.spawnCtl(["become-current", UA.editType, "--app-id", UA.editor, "--title", "Second"])
        defer { second.terminate(grace: 1) }
        _ = try #require(try second.readLine(timeout: 20), "the second become-current printed nothing: \(second.stderrText)")
        let told = waitUntil(timeout: 30) { first.stderrText.contains("the activity is no longer current") }
        #expect(told, "\(first.stderrText)")
        Thread.sleep(forTimeInterval: 0.3)
        #expect(!second.stderrText.contains("current again"), "\(second.stderrText)")
        #expect(first.stderrText.components(separatedBy: "no longer current").count == 2, "\(first.stderrText)")
    }

    @Test("monitor prints a line when another client makes something current")
    func monitor() throws {
        let h = try CLIHarness()
        let monitor = try h.spawnCtl(["monitor"])
        defer { monitor.terminate(grace: 1) }
        let ready = try monitor.readStderrLine(timeout: 20)
        #expect(ready?.hasPrefix("following org.example.UserActivity") == true, "\(ready ?? "nil") \(h.logTail())")

        let holder = try h.spawnCtl(["become-current", UA.editType, "--app-id", UA.editor, "--title", "Seen by monitor"])
        defer { holder.terminate(grace: 1) }
        let path = try #require(try holder.readLine(timeout: 20))
        let line = try #require(try monitor.readLine(timeout: 10), "monitor printed nothing: \(monitor.stderrText)")
        #expect(line.contains(" current \(path) \(UA.editor) \(UA.editType) \"Seen by monitor\""), "\(line)")

        // A continuation of the live activity (Activity.Continue, as a shell would call it).
        do {
            let fixture = try HandlerFixture.start(app: UA.editor, bus: h.bus, directory: h.session.root)
            defer { fixture.terminate(grace: 0.5) }
            let result = try h.bus.run("gdbus", ["call", "--session", "--dest", UA.busName, "--object-path", path,
                                                 "--method", "org.example.UserActivity.Activity.Continue", "{}"])
            #expect(result.succeeded, "\(result)")
            let continued = try #require(try monitor.readLine(timeout: 10))
            #expect(continued.hasSuffix(" continued \(path) by \(UA.editor)"), "\(continued)")
        }

        holder.signal(SIGINT)
        #expect(holder.waitForExit(timeout: 10) == 0)
        let after = try #require(try monitor.readLine(timeout: 10))
        #expect(after.hasSuffix(" current none"), "\(after)")

        monitor.signal(SIGINT)
        #expect(monitor.waitForExit(timeout: 10) == 0, "monitor should exit 0 on SIGINT")
    }

    @Test("monitor --json prints one JSON object per event")
    func monitorJSON() throws {
        let h = try CLIHarness()
        let monitor = try h.spawnCtl(["monitor", "--json"])
        defer { monitor.terminate(grace: 1) }
        _ = try monitor.readStderrLine(timeout: 20)
        let holder = try h.spawnCtl(["become-current", UA.editType, "--app-id", UA.editor, "--title", "JSON"])
        defer { holder.terminate(grace: 1) }
        let path = try #require(try holder.readLine(timeout: 20))
        let line = try #require(try monitor.readLine(timeout: 10))
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(event["event"] == "current" && event["path"] == path && event["title"] == "JSON" && event["app-id"] == UA.editor)
        #expect(event["time"] != nil)
    }

    @Test("types lists declarations and warns about another team's type")
    func types() throws {
        let h = try CLIHarness(installDaemon: false, desktopEntries: [
            (UA.editor, [UA.editType, "org.other.Thing.view"], []),
            (UA.viewer, [UA.viewType], []),
            ("com.example.Plain", [], []),
        ])
        let result = try h.ctl(["types"], environment: h.session.environment)
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains(UA.editType) && result.stdout.contains(UA.viewType), "\(result.stdout)")
        #expect(!result.stdout.contains("com.example.Plain"), "apps declaring nothing are left out without --all")
        #expect(result.stdout.contains("Warnings (these declarations are ignored):"))
        #expect(result.stdout.contains("declared type 'org.other.Thing.view' ignored: it must begin with the app's team 'com.example.'"),
                "\(result.stdout)")

        let json = try #require(try JSONSerialization.jsonObject(
            with: Data(try h.ctl(["types", "--json"], environment: h.session.environment).stdout.utf8)) as? [String: Any])
        let apps = try #require(json["apps"] as? [[String: Any]])
        let editor = try #require(apps.first { $0["app-id"] as? String == UA.editor })
        #expect(editor["types"] as? [String] == [UA.editType])
        #expect(editor["team"] as? String == "com.example")
        #expect((json["warnings"] as? [String])?.contains { $0.contains("org.other.Thing.view") } == true)

        let all = try h.ctl(["types", "--all"], environment: h.session.environment)
        #expect(all.stdout.contains("com.example.Plain"))
        let byType = try h.ctl(["types", "--type", UA.viewType], environment: h.session.environment)
        #expect(byType.stdout.contains(UA.viewer) && !byType.stdout.contains(UA.editType), "\(byType.stdout)")
    }

    @Test("continue-saved reaches the app's handler")
    func continueSaved() throws {
        let h = try CLIHarness()
        let savedID = try h.donate(title: "Continue me")
        do {
            let fixture = try HandlerFixture.start(app: UA.editor, bus: h.bus, directory: h.session.root)
            defer { fixture.terminate(grace: 0.5) }
            let result = try h.ctl(["continue-saved", savedID, "--timeout-ms", "5000"])
            #expect(result.succeeded, "\(result)\n\(h.logTail())")
            #expect(result.trimmedStdout == UA.editor)
            let delivered = try #require(try fixture.readLine(timeout: 10))
            #expect(delivered.contains("\"title\": \"Continue me\""), "\(delivered)")
        }
        let missing = try h.ctl(["continue-saved", "0123456789abcdef0123456789abcdef"])
        #expect(missing.exitCode == 1)
        #expect(missing.stderr.hasPrefix("useractivityctl: org.example.UserActivity.Error.NotFound: "), "\(missing.stderr)")
    }

    @Test("browse lists results and quits on end of input")
    func browse() throws {
        let h = try CLIHarness()
        _ = try h.donate(title: "Quarterly report")
        let result = try h.ctlOK(["browse", "useractivity-search:quarterly%20rep"])
        #expect(result.stdout.contains("Results for \"quarterly rep\":"), "\(result.stdout)")
        #expect(result.stdout.contains("  1  Quarterly report  (com.example.Editor)"), "\(result.stdout)")
    }

    @Test("The committed man page is what generate-manpage prints")
    func manPage() throws {
        let h = try CLIHarness(installDaemon: false)
        let generated = try h.ctlOK(["generate-manpage"]).stdout
        let path = repositoryRoot() + "/man/useractivityctl.1"
        let committed = try String(contentsOfFile: path, encoding: .utf8)
        #expect(generated == committed,
                "\(path) is stale; regenerate it with `useractivityctl generate-manpage > man/useractivityctl.1`: \(firstDifference(committed, generated))")
        // Every visible subcommand has its entry.
        for command in ["status", "become-current", "search", "continue-saved", "types", "monitor", "forget-range", "browse"] {
            #expect(generated.contains(".B useractivityctl \(command.replacingOccurrences(of: "-", with: "\\-"))\n"), "\(command)")
        }
    }

    @Test("useractivityd answers --version, and a bad option with usage and exit status 64")
    func daemonCommandLine() throws {
        let h = try CLIHarness(installDaemon: false)
        let daemon = try BuiltProducts.useractivityd()
        let version = try runCommand(daemon, ["--version"], environment: h.session.environment)
        #expect(version.exitCode == 0 && version.stdout.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil, "\(version)")
        let bad = try runCommand(daemon, ["--no-such-option"], environment: h.session.environment)
        #expect(bad.exitCode == 64, "\(bad)")
        #expect(bad.stderr.contains("Unknown option '--no-such-option'") && bad.stderr.contains("useractivityd --help"), "\(bad.stderr)")
        let stray = try runCommand(daemon, ["extra"], environment: h.session.environment)
        #expect(stray.exitCode == 64 && stray.stderr.contains("Unexpected argument 'extra'"), "\(stray)")
    }

    @Test("useractivityd(8) documents every option of useractivityd --help")
    func daemonManPage() throws {
        let h = try CLIHarness(installDaemon: false)
        let help = try runCommand(try BuiltProducts.useractivityd(), ["--help"], environment: h.session.environment).stdout
        let page = try String(contentsOfFile: repositoryRoot() + "/man/useractivityd.8", encoding: .utf8)
        let options = Set(help.matches(of: #/--[a-z][a-z-]+/#).map { String($0.output) })
        #expect(options.isSuperset(of: ["--replace", "--verbose", "--print-introspection"]), "\(help)")
        for option in options {
            #expect(page.contains(option.replacingOccurrences(of: "-", with: "\\-")), "man/useractivityd.8 lacks \(option)")
        }
    }

    @Test("useractivity-example(1) documents every option of the example app's --help")
    func exampleManPage() throws {
        let h = try CLIHarness(installDaemon: false)
        let help = try runCommand(try BuiltProducts.executable(named: "UserActivityExample"), ["--help"],
                                  environment: h.session.environment).stdout
        let page = try String(contentsOfFile: repositoryRoot() + "/man/useractivity-example.1", encoding: .utf8)
        let options = Set(help.matches(of: #/--[a-z][a-z-]+/#).map { String($0.output) })
        #expect(options.isSuperset(of: ["--serve", "--handle-continuations", "--open", "--page", "--address"]), "\(help)")
        for option in options {
            #expect(page.contains(option.replacingOccurrences(of: "-", with: "\\-")), "man/useractivity-example.1 lacks \(option)")
        }
    }

    @Test("Shell completion scripts are generated")
    func completions() throws {
        let h = try CLIHarness(installDaemon: false)
        for shell in ["bash", "zsh", "fish"] {
            let script = try h.ctlOK(["--generate-completion-script", shell]).stdout
            #expect(script.contains("become-current") && script.contains("forget-range"), "\(shell)")
        }
    }
}
