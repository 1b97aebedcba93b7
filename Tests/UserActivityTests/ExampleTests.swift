// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

/// Whether `pid` is a process that has not exited (a zombie has).
func isLiveProcess(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    return !stat[close...].hasPrefix(") Z")
}

@Suite("The example app and the Python examples, run against the daemon", .serialized)
struct ExampleTests {
    /// A bus whose daemon sees the repository's desktop/ entries (as scripts/run-dev.sh arranges).
    private func harness() throws -> LibraryHarness {
        let h = try LibraryHarness()
        let source = "\(repositoryRoot())/desktop/share/applications/com.example.UserActivityExample.desktop"
        try FileManager.default.copyItem(atPath: source, toPath: "\(h.session.applicationsDirectory())/com.example.UserActivityExample.desktop")
        return h
    }

    @Test("UserActivityExample runs headless end to end: publishes, searches, continues into itself")
    func exampleApp() async throws {
        let h = try harness()
        let example: String
        do {
            example = try BuiltProducts.executable(named: "UserActivityExample")
        } catch {
            Issue.record("UserActivityExample is not built: run `swift build --product UserActivityExample` first (\(error))")
            return
        }
        let bus = h.bus
        let result = try await offload { try bus.run(example, [], timeout: 60) }
        #expect(result.exitCode == 0, "\(result)\n\(h.logTail())")
        let out = result.stdout
        #expect(out.contains("✓ the desktop entry declares every type"), "\(out)")
        #expect(!out.contains("does not take continuation handlers yet"), "\(out)")
        #expect(out.contains("▶ open-document: /home/user/Quarterly Report.odt, page 3, zoom 1.25 (run by the app)"), "\(out)")
        #expect(out.contains("✓ published com.example.UserActivityExample.open-document \"Open Quarterly Report.odt\""), "\(out)")
        #expect(out.contains("▶ show-page: Q3 results online <https://example.com/reports/q3> (run by the app)"), "\(out)")
        #expect(out.contains("search \"quarterly\": 1 result(s)\n  Open Quarterly Report.odt — Page 4 of /home/user/Quarterly Report.odt"), "\(out)")
        if !out.contains("does not continue activities yet") {
            #expect(out.contains("▶ open-document: /home/user/Notes.odt, page 7 (continued, published by com.example.UserActivityExample)"), "\(out)")
            #expect(out.contains("✓ continued by com.example.UserActivityExample"), "\(out)")
        }
        #expect(out.hasSuffix("done\n"), "\(out)")
    }

    @Test("Continuing an example activity launches the example from its desktop entry, which takes it and exits with the bus")
    func exampleLaunchedOnDemand() async throws {
        guard let example = try? BuiltProducts.executable(named: "UserActivityExample") else {
            Issue.record("UserActivityExample is not built: run `swift build --product UserActivityExample` first")
            return
        }
        // The repository's entry, with Exec's program made absolute (its arguments stay as shipped).
        let h = try LibraryHarness()
        let source = "\(repositoryRoot())/desktop/share/applications/com.example.UserActivityExample.desktop"
        let entry = try String(contentsOfFile: source, encoding: .utf8)
            .replacingOccurrences(of: "\nExec=UserActivityExample ", with: "\nExec=\(example) ")
        #expect(entry.contains("\nExec=\(example) --handle-continuations\n"), "\(entry)")
        try entry.write(toFile: "\(h.session.applicationsDirectory())/com.example.UserActivityExample.desktop",
                        atomically: true, encoding: .utf8)

        let client = try h.client(nil)
        let link = UserActivity(activityType: "com.example.UserActivityExample.open-document", client: client)
        link.title = "From a link"
        link.userInfo = ["path": "/home/user/Launched.odt", "page": 5]
        let app = try await client.continueActivity(link, options: .init(targetAppID: "com.example.UserActivityExample", timeout: 60))
        #expect(app == "com.example.UserActivityExample", "\(h.logTail())")
        // What the launched example printed reaches the bus log through the daemon.
        let performed = await waitUntil(timeout: 30, interval: 0.05) {
            h.bus.log.contains("▶ open-document: /home/user/Launched.odt, page 5 (continued")
        }
        #expect(performed, "\(h.logTail())")
        #expect(!h.bus.log.contains("UserActivityExample failed"), "\(h.logTail())")

        // It keeps serving: a second continuation goes to the same process.
        let launched = try #require(await examplePID(h), "\(h.logTail())")
        let again = try await client.continueActivity(link, options: .init(targetAppID: "com.example.UserActivityExample", timeout: 60))
        #expect(again == "com.example.UserActivityExample")
        #expect(await examplePID(h) == launched)

        // And it exits when the session bus goes away (onDisconnected). Only the
        // bus is killed: stopping the harness would signal its whole process group.
        client.close()
        kill(h.bus.pid, SIGKILL)
        let exited = await waitUntil(timeout: 30, interval: 0.05) { !isLiveProcess(launched) }
        if !exited { kill(launched, SIGKILL) }
        #expect(exited, "the launched UserActivityExample (pid \(launched)) outlived the bus")
    }

    /// The PID of the bus connection whose process is UserActivityExample, if any.
    private func examplePID(_ h: LibraryHarness) async -> pid_t? {
        try? await offload { () -> pid_t? in
            let connection = try h.rawConnection()
            func call(_ member: String, _ arguments: [TypedValue]) throws -> [TypedValue] {
                let message = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                 interface: "org.freedesktop.DBus", member: member)
                try message.append(arguments)
                return try connection.call(message, timeoutMilliseconds: 5000).arguments()
            }
            for name in try call("ListNames", []).first?.stringArrayValue ?? [] where name.hasPrefix(":") {
                guard let pid = try? call("GetConnectionUnixProcessID", [.string(name)]).first?.uint32Value,
                      let commandLine = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8) else { continue }
                if commandLine.contains("UserActivityExample\0--handle-continuations") { return pid_t(pid) }
            }
            return nil
        }
    }

    @Test("UserActivityExample without its desktop entry stops with the line to add (exit 78)")
    func exampleWithoutDeclaration() async throws {
        let h = try LibraryHarness()
        try h.session.writeDesktopEntry(appID: "com.example.UserActivityExample", types: ["com.example.UserActivityExample.open-document"])
        guard let example = try? BuiltProducts.executable(named: "UserActivityExample") else {
            Issue.record("UserActivityExample is not built")
            return
        }
        let bus = h.bus
        let result = try await offload { try bus.run(example, [], timeout: 60) }
        #expect(result.exitCode == 78, "\(result)")
        #expect(result.stderr.contains("X-UserActivityTypes=com.example.UserActivityExample.open-document;com.example.UserActivityExample.show-page;"),
                "\(result.stderr)")
    }

    @Test("examples/python/donate_and_search.py donates and finds a shortcut over D-Bus")
    func pythonDonateAndSearch() async throws {
        let h = try harness()
        let script = "\(repositoryRoot())/examples/python/donate_and_search.py"
        let bus = h.bus
        let result = try await offload { try bus.run("/usr/bin/python3", [script, "quarterly"], timeout: 60) }
        #expect(result.exitCode == 0, "\(result)\n\(h.logTail())")
        #expect(result.stdout.contains("donated: saved id "), "\(result.stdout)")
        #expect(result.stdout.contains("Quarterly report"), "\(result.stdout)")
    }

    @Test("examples/python/continue_handler.py receives a continuation the library asks for")
    func pythonContinueHandler() async throws {
        let h = try harness()
        let script = "\(repositoryRoot())/examples/python/continue_handler.py"
        let handler = try h.bus.spawn("/usr/bin/python3", [script, "--once"])
        defer { handler.terminate(grace: 1) }
        let client = try h.client(nil)
        let link = UserActivity(activityType: "com.example.UserActivityExample.open-document", client: client)
        link.title = "From Swift"
        link.userInfo = ["path": "/tmp/from-swift.odt", "page": 2]
        do {
            let ready = try await offload { try handler.readLine(timeout: 60) }
            #expect(ready?.hasPrefix("waiting for continuations") == true, "\(ready ?? "nil") \(handler.stderrText)")
            let app = try await client.continueActivity(link, options: .init(targetAppID: "com.example.UserActivityExample", timeout: 60))
            #expect(app == "com.example.UserActivityExample")
            let line = try await offload { try handler.readLine(timeout: 60) }
            #expect(line?.contains("continue com.example.UserActivityExample.open-document") == true, "\(line ?? "nil")")
            #expect(line?.contains("/tmp/from-swift.odt") == true, "\(line ?? "nil")")
        }
    }
}
