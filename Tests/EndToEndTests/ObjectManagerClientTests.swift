// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
import TypedValues

/// The activity signals are unicast copies, not broadcasts: a stock
/// `GDBusObjectManagerClient` (what the shell and GTK tools use) must still
/// follow activities appearing, changing and going.
@Suite("GDBusObjectManagerClient")
struct ObjectManagerClientTests {
    /// Prints `ready <n>`, then `added <path> <title>`, `changed <path> <title>`
    /// and `removed <path>` as the manager client reports them; ends after a
    /// removal (or 60 s).
    static let script = """
    import sys
    from gi.repository import Gio, GLib
    loop = GLib.MainLoop()
    def out(*words):
        print(*words, flush=True)
    manager = Gio.DBusObjectManagerClient.new_for_bus_sync(
        Gio.BusType.SESSION, Gio.DBusObjectManagerClientFlags.DO_NOT_AUTO_START,
        'org.example.UserActivity', '/org/example/UserActivity', None, None, None)
    def added(_, obj):
        title = obj.get_interface('org.example.UserActivity.Activity').get_cached_property('Title')
        out('added', obj.get_object_path(), title.unpack() if title else '-')
    def changed(_, obj, proxy, properties, invalidated):
        out('changed', obj.get_object_path(), properties.unpack().get('Title', '-'))
    def removed(_, obj):
        out('removed', obj.get_object_path())
        loop.quit()
    manager.connect('object-added', added)
    manager.connect('interface-proxy-properties-changed', changed)
    manager.connect('object-removed', removed)
    out('ready', len(manager.get_objects()))
    GLib.timeout_add_seconds(60, loop.quit)
    loop.run()
    """

    @Test("A GDBusObjectManagerClient follows an activity another client creates, retitles and ends")
    func followsActivities() throws {
        let harness = try DaemonHarness()
        _ = try harness.activate()
        let directory = try TemporaryDirectory(prefix: "uaom-")
        let scriptPath = directory.appending("manager.py")
        try writeFileAtomically(scriptPath, contents: Self.script)
        let watcher = try ChildProcess(executable: "/usr/bin/python3", arguments: [scriptPath],
                                       environment: harness.bus.environment(adding: [:]), stdout: .capture, stderr: .capture)
        defer { watcher.terminate(grace: 1) }
        var lines: [String] = []
        func readUntil(_ prefix: String) -> Bool {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                guard let line = try? watcher.readLine(timeout: max(0.01, deadline.timeIntervalSinceNow)) else { return false }
                lines.append(line)
                if line.hasPrefix(prefix) { return true }
            }
            return false
        }
        try #require(readUntil("ready"), "\(lines) \(watcher.stderrText)")

        let path: String
        do {
            let owner = try harness.connect()
            path = try owner.create(UA.editType, app: UA.editor, [("title", .string("om-first-title"))])
            try owner.activity(path, "Update", [.stringVariantDictionary([("title", .string("om-second-title"))])])
        }
        #expect(readUntil("removed"), "\(lines) \(watcher.stderrText)\n\(harness.logTail())")
        #expect(lines.contains("added \(path) om-first-title"), "\(lines)")
        #expect(lines.contains("changed \(path) om-second-title"), "\(lines)")
        #expect(lines.contains("removed \(path)"), "\(lines)")
    }
}
