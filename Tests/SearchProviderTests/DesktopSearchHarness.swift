// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Desktop-search tests call the daemon's org.gnome.Shell.SearchProvider2 and
// org.kde.krunner1 objects with `gdbus call`, as the shells do, on a private
// bus where the BUILT daemon is started by D-Bus activation.

enum UA {
    static let busName = "org.example.UserActivity"
    static let managerPath = "/org/example/UserActivity"
    static let searchProviderPath = "/org/example/UserActivity/SearchProvider"
    static let krunnerPath = "/org/example/UserActivity/KRunner"
    static let searchProvider = "org.gnome.Shell.SearchProvider2"
    static let krunner = "org.kde.krunner1"
    static let editor = "com.example.Editor"
    static let editType = "com.example.Editor.edit-document"
    static let viewer = "com.example.Viewer"
    static let viewType = "com.example.Viewer.view"
    static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    static func error(_ name: String) -> String { "org.example.UserActivity.Error.\(name)" }
}

final class DesktopSearchHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus

    /// - Parameter extraEntries: more desktop entries, written before the daemon starts.
    init(extraEntries: [(id: String, lines: [String])] = []) throws {
        session = try SessionEnvironment()
        // The editor has an icon; the viewer has none (the generic icon is used).
        try session.writeDesktopEntry(appID: UA.editor, types: [UA.editType], name: "Editor", extraLines: ["Icon=accessories-text-editor"])
        try session.writeDesktopEntry(appID: UA.viewer, types: [UA.viewType], name: "Viewer")
        for entry in extraEntries {
            try writeFileAtomically(session.applicationsDirectory() + "/\(entry.id).desktop",
                                    contents: entry.lines.joined(separator: "\n") + "\n")
        }
        bus = try PrivateBus(environment: session)
        try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
    }

    deinit { bus.stop() }

    func logTail(_ lines: Int = 40) -> String {
        "--- bus log ---\n" + bus.log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// `gdbus call --session --dest org.example.UserActivity --object-path <path> --method <method> <arguments…>`.
    func gdbus(_ path: String, _ method: String, _ arguments: [String] = []) throws -> CommandResult {
        try bus.run("gdbus", ["call", "--session", "--dest", UA.busName, "--object-path", path, "--method", method] + arguments)
    }

    /// A gdbus call that must succeed.
    func gdbusOK(_ path: String, _ method: String, _ arguments: [String] = []) throws -> CommandResult {
        let result = try gdbus(path, method, arguments)
        guard result.succeeded else { throw CommandFailure(result: result) }
        return result
    }

    /// Donates a search-eligible activity with gdbus; its saved id.
    func donate(_ title: String, app: String = UA.editor, type: String = UA.editType, description: String = "",
                url: String? = nil) throws -> String {
        var properties = "{'app-id': <'\(app)'>, 'title': <'\(title)'>, 'eligible-for-search': <true>, 'content-description': <'\(description)'>"
        if let url { properties += ", 'webpage-url': <'\(url)'>" }
        properties += "}"
        let result = try gdbusOK(UA.managerPath, "org.example.UserActivity.Donate", [type, properties])
        return try #require(result.stdout.firstMatch(of: #/'([0-9a-f]{32})'/#).map { String($0.1) }, "\(result)")
    }

    // MARK: The shells' calls

    /// GetInitialResultSet(as terms) → as.
    func initialResultSet(_ terms: [String]) throws -> [String] {
        strings(try gdbusOK(UA.searchProviderPath, "\(UA.searchProvider).GetInitialResultSet", [gvariantStrings(terms)]).stdout)
    }

    /// GetSubsearchResultSet(as previous, as terms) → as.
    func subsearchResultSet(_ previous: [String], _ terms: [String]) throws -> [String] {
        strings(try gdbusOK(UA.searchProviderPath, "\(UA.searchProvider).GetSubsearchResultSet",
                            [gvariantStrings(previous), gvariantStrings(terms)]).stdout)
    }

    /// KRunner's Match(s) → a(sssida{sv}), parsed from gdbus's text.
    func match(_ query: String) throws -> [KRunnerMatch] {
        let output = try gdbusOK(UA.krunnerPath, "\(UA.krunner).Match", [query]).stdout
        return output.matches(of: #/\('([^']*)', '([^']*)', '([^']*)', (-?\d+), ([-+0-9.e]+), (\{[^}]*\}|@a\{sv\} \{\})\)/#).map {
            KRunnerMatch(id: String($0.1), text: String($0.2), icon: String($0.3), type: Int($0.4) ?? -1,
                         relevance: Double($0.5) ?? -1, properties: String($0.6))
        }
    }

    /// `['a', 'b']` (or `@as []`) for gdbus.
    func gvariantStrings(_ strings: [String]) -> String {
        strings.isEmpty ? "@as []" : "[" + strings.map { "'\($0)'" }.joined(separator: ", ") + "]"
    }

    /// Every single-quoted string of gdbus output (saved IDs are plain hex).
    func strings(_ output: String) -> [String] {
        output.matches(of: #/'([^']*)'/#).map { String($0.1) }
    }
}

struct KRunnerMatch {
    var id: String
    var text: String
    var icon: String
    var type: Int
    var relevance: Double
    var properties: String
}

extension CommandResult {
    /// The D-Bus error name in gdbus's `GDBus.Error:<name>: <message>`.
    var gdbusErrorName: String? {
        stderr.firstMatch(of: #/GDBus\.Error:([A-Za-z0-9_.\-]+):/#).map { String($0.1) }
    }
}

/// The daemon answered `org.freedesktop.DBus.Error.NotSupported` (continuation not built yet).
struct NotSupportedByDaemon: Error, CustomStringConvertible {
    let description: String
}

/// `NotSupported` from the daemon is a known issue until continuation lands,
/// never a success; every other problem still fails.
func withContinuationKnownIssue(_ body: () throws -> Void) throws {
    try withKnownIssue("continuation answered org.freedesktop.DBus.Error.NotSupported: not built in this daemon yet",
                       isIntermittent: true) {
        try body()
    } matching: { issue in
        issue.error is NotSupportedByDaemon
    }
}

/// The repository root (holding Package.swift), from this file's path.
func repositoryRoot(filePath: String = #filePath) -> String {
    var dir = (filePath as NSString).deletingLastPathComponent
    while dir != "/" && !dir.isEmpty {
        if FileManager.default.fileExists(atPath: "\(dir)/Package.swift") { return dir }
        dir = (dir as NSString).deletingLastPathComponent
    }
    return FileManager.default.currentDirectoryPath
}

/// A fixture app (Python + gi) that registers a continuation handler for its
/// app and prints one JSON line per ContinueActivity (after `READY`).
enum HandlerFixture {
    static let python = #"""
# SPDX-License-Identifier: Apache-2.0
import json
import sys

import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

XML = """<node><interface name="org.example.UserActivity.Handler">
<method name="ContinueActivity"><arg type="s" direction="in"/><arg type="a{sv}" direction="in"/>
<arg type="a{sv}" direction="in"/><arg type="b" direction="out"/></method>
<method name="SaveActivity"><arg type="o" direction="in"/><arg type="a{sv}" direction="out"/></method>
<method name="ContinuationStreamOpened"><arg type="o" direction="in"/><arg type="h" direction="in"/></method>
<method name="FailedToContinue"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="s" direction="in"/></method>
</interface></node>"""


def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "ContinueActivity":
        activity_type, activity, platform = parameters.unpack()
        print(json.dumps({"event": "continue", "type": activity_type, "title": activity.get("title", ""),
                          "platform": platform}, default=repr), flush=True)
        invocation.return_value(GLib.Variant("(b)", (True,)))
    elif method == "SaveActivity":
        invocation.return_value(GLib.Variant("(a{sv})", ({},)))
    else:
        print(json.dumps({"event": method}), flush=True)
        invocation.return_value(None)


bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
node = Gio.DBusNodeInfo.new_for_xml(XML)
bus.register_object("/handler", node.interfaces[0], on_call, None, None)
try:
    for method, args in (("RegisterApplication", GLib.Variant("(s)", (sys.argv[1],))),
                         ("RegisterHandler", GLib.Variant("(o)", ("/handler",)))):
        bus.call_sync("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity",
                      method, args, None, Gio.DBusCallFlags.NONE, -1, None)
except GLib.Error as error:
    print("ERROR " + (Gio.DBusError.get_remote_error(error) or "") + " " + error.message, flush=True)
else:
    print("READY", flush=True)
GLib.MainLoop().run()
"""#

    static func start(app: String, bus: PrivateBus, directory: String) throws -> ChildProcess {
        let script = directory + "/handler.py"
        try writeFileAtomically(script, contents: python, mode: 0o755)
        let process = try bus.spawn("/usr/bin/python3", [script, app])
        guard let line = try process.readLine(timeout: 20) else {
            throw CommandFailure(result: CommandResult(command: [script], exitCode: 1, stdout: "", stderr: process.stderrText))
        }
        if line.hasPrefix("ERROR ") {
            if line.contains(UA.notSupported) { throw NotSupportedByDaemon(description: line) }
            throw CommandFailure(result: CommandResult(command: [script], exitCode: 1, stdout: line, stderr: process.stderrText))
        }
        #expect(line == "READY")
        return process
    }
}
