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

/// A stock `GDBusProxy` of one activity loads its properties (`GetAll`),
/// which is how it asks for that activity's signals: it must follow every
/// change another client makes, though it never calls anything else.
@Suite("GDBusProxy of an activity")
struct ActivityProxyTests {
    /// Prints `ready <title>`, then `changed <name>=<value>` for each
    /// property the proxy reports changed; ends after `Current` turns false
    /// (or 60 s).
    static let script = """
    import sys
    from gi.repository import Gio, GLib
    loop = GLib.MainLoop()
    def out(*words):
        print(*words, flush=True)
    proxy = Gio.DBusProxy.new_for_bus_sync(
        Gio.BusType.SESSION, Gio.DBusProxyFlags.DO_NOT_AUTO_START, None,
        'org.example.UserActivity', sys.argv[1], 'org.example.UserActivity.Activity', None)
    def changed(_, properties, invalidated):
        for name, value in sorted(properties.unpack().items()):
            out(f'changed {name}={value}')
            if name == 'Current' and not value:
                loop.quit()
    proxy.connect('g-properties-changed', changed)
    out('ready', proxy.get_cached_property('Title').unpack())
    GLib.timeout_add_seconds(60, loop.quit)
    loop.run()
    """

    @Test("A GDBusProxy of an activity follows its retitling, becoming current and resigning")
    func followsOneActivity() throws {
        let harness = try DaemonHarness()
        _ = try harness.activate()
        let directory = try TemporaryDirectory(prefix: "uaproxy-")
        let scriptPath = directory.appending("proxy.py")
        try writeFileAtomically(scriptPath, contents: Self.script)
        let owner = try harness.connect()
        let path = try owner.create(UA.editType, app: UA.editor, [("title", .string("proxy-first-title"))])
        let watcher = try ChildProcess(executable: "/usr/bin/python3", arguments: [scriptPath, path],
                                       environment: harness.bus.environment(adding: [:]), stdout: .capture, stderr: .capture)
        defer { watcher.terminate(grace: 1) }
        var lines: [String] = []
        func readUntil(_ wanted: String) -> Bool {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                guard let line = try? watcher.readLine(timeout: max(0.01, deadline.timeIntervalSinceNow)) else { return false }
                lines.append(line)
                if line == wanted { return true }
            }
            return false
        }
        try #require(readUntil("ready proxy-first-title"), "\(lines) \(watcher.stderrText)")
        try owner.activity(path, "Update", [.stringVariantDictionary([("title", .string("proxy-second-title"))])])
        try owner.activity(path, "BecomeCurrent")
        try owner.activity(path, "ResignCurrent")
        #expect(readUntil("changed Current=False"), "\(lines) \(watcher.stderrText)\n\(harness.logTail())")
        #expect(lines.contains("changed Title=proxy-second-title"), "\(lines)")
        #expect(lines.contains("changed Current=True"), "\(lines)")
    }
}
