// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The resource attacks, run from inside a real sandbox (bwrap, /.flatpak-info,
/// xdg-dbus-proxy) against the built daemon.
@Suite("Sandbox resources", .enabled(if: sandboxesAvailable, "bwrap/xdg-dbus-proxy unavailable"))
struct SandboxResourceTests {
    /// The daemon's PID, starting it by D-Bus activation if need be.
    static func daemonPID(_ harness: SandboxHarness) throws -> pid_t {
        _ = try harness.bus.run("busctl", ["--user", "call", UA.busName, UA.managerPath, "org.freedesktop.DBus.Peer", "Ping"])
        let reply = try harness.bus.run("busctl", ["--user", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                   "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", UA.busName])
        let pid = reply.trimmedStdout.split(separator: " ").last.flatMap { pid_t($0) }
        return try #require(pid, "GetConnectionUnixProcessID: \(reply.stdout) \(reply.stderr)")
    }

    static func descriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// Inside the sandbox: registers a handler that answers every
    /// ContinueActivity with an error reply carrying 16 descriptors, then
    /// continues its own type `rounds` times. Prints `done <errors> <other>`.
    static let fdLadenHandler = """
    import os, sys
    from gi.repository import Gio, GLib
    app_type, rounds = sys.argv[1], int(sys.argv[2])
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    null = os.open('/dev/null', os.O_RDONLY)
    def answer(connection, message, incoming):
        if not incoming or message.get_message_type() != Gio.DBusMessageType.METHOD_CALL or message.get_member() != 'ContinueActivity':
            return message
        reply = Gio.DBusMessage.new_method_error_literal(message, 'com.example.Sandboxed.Error.Hostile', 'no')
        fds = Gio.UnixFDList.new()
        for _ in range(16):
            fds.append(null)
        reply.set_body(GLib.Variant('(s' + 'h' * 16 + ')', tuple(['no'] + list(range(16)))))
        reply.set_unix_fd_list(fds)
        connection.send_message(reply, Gio.DBusSendMessageFlags.NONE)
        return None
    bus.add_filter(answer)
    def call(member, args):
        return bus.call_sync('org.example.UserActivity', '/org/example/UserActivity', 'org.example.UserActivity', member,
                             args, None, Gio.DBusCallFlags.NONE, 30000, None)
    call('RegisterHandler', GLib.Variant('(o)', ('/com/example/Sandboxed/Handler',)))
    errors, other = 0, []
    for _ in range(rounds):
        try:
            call('ContinueActivity', GLib.Variant('(sa{sv}a{sv})', (app_type, {}, {'timeout-ms': GLib.Variant('u', 20000)})))
            other.append('accepted')
        except GLib.Error as error:
            name = Gio.DBusError.get_remote_error(error)
            if name == 'com.example.Sandboxed.Error.Hostile':
                errors += 1
            else:
                other.append(str(name) + ': ' + error.message)
    print('done', errors, len(other), other[:3], flush=True)
    """

    @Test("A sandboxed handler answering its own continuations with fd-laden error replies: the daemon's descriptors stay flat")
    func fdLadenErrorRepliesFromSandbox() throws {
        let harness = try SandboxHarness()
        let pid = try Self.daemonPID(harness)
        let sandbox = try harness.sandbox()
        defer { sandbox.stop() }
        let script = sandbox.directory.appending("fd-laden.py")
        try Self.fdLadenHandler.write(toFile: script, atomically: true, encoding: .utf8)
        // A first short run opens what the daemon opens once (the app's identity, its handler).
        let warm = try sandbox.spawn("/usr/bin/python3", [script, UA.sandboxedType, "20"])
        _ = warm.waitForExit(timeout: 60)
        let before = Self.descriptors(pid)
        let rounds = 3000
        let attacker = try sandbox.spawn("/usr/bin/python3", [script, UA.sandboxedType, "\(rounds)"])
        let status = attacker.waitForExit(timeout: 240)
        let after = Self.descriptors(pid)
        print("sandbox fd-laden replies: \(rounds) round trips; daemon descriptors \(before) → \(after); agent: \(attacker.stdoutText)")
        #expect(status == 0 && attacker.stdoutText.hasPrefix("done \(rounds) 0"), "\(attacker.stdoutText) \(attacker.stderrText)\n\(harness.logTail())")
        // One message still referenced for a moment may hold its own 18; a leak grows with the rounds.
        #expect(before > 0 && after <= before + 64, "the daemon holds \(after) descriptors, \(before) before")
        #expect(try Self.daemonPID(harness) == pid, "the daemon is still the one on the bus\n\(harness.logTail())")
    }

    /// Inside the sandbox: `connections` connections each send `perConnection`
    /// ContinueActivity calls for the editor's type (launched, never
    /// registers: they stay in flight). Writes the error counts to `report`
    /// once every refusal came back, then holds the connections until `release` exists.
    static let continuationFlood = """
    import os, sys, json
    from gi.repository import Gio, GLib
    edit_type, connections, per_connection, report, release = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    address = os.environ['DBUS_SESSION_BUS_ADDRESS']
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    buses = [Gio.DBusConnection.new_for_address_sync(address, flags, None, None) for _ in range(connections)]
    errors = {}
    def done(bus, result, _):
        try:
            bus.call_finish(result)
            name = 'accepted'
        except GLib.Error as error:
            name = Gio.DBusError.get_remote_error(error) or error.message
        errors[name] = errors.get(name, 0) + 1
    for bus in buses:
        for _ in range(per_connection):
            bus.call('org.example.UserActivity', '/org/example/UserActivity', 'org.example.UserActivity', 'ContinueActivity',
                     GLib.Variant('(sa{sv}a{sv})', (edit_type, {}, {'timeout-ms': GLib.Variant('u', 60000)})),
                     None, Gio.DBusCallFlags.NONE, 90000, None, done, None)
    context = GLib.MainContext.default()
    deadline = GLib.get_monotonic_time() + 60 * 1000000
    while GLib.get_monotonic_time() < deadline and sum(errors.values()) < connections * per_connection - int(sys.argv[6]):
        context.iteration(True)
    with open(report, 'w') as out:
        json.dump(errors, out)
    while not os.path.exists(release) and GLib.get_monotonic_time() < deadline + 60 * 1000000:
        context.iteration(False)
        GLib.usleep(20000)
    """

    @Test("A sandboxed app over 3 connections gets its share (128) of the session's continuations in flight; an unconfined caller is still served")
    func continuationShareFromSandbox() throws {
        let harness = try SandboxHarness()
        _ = try Self.daemonPID(harness)
        let sandbox = try harness.sandbox()
        defer { sandbox.stop() }
        let script = sandbox.directory.appending("flood.py")
        try Self.continuationFlood.write(toFile: script, atomically: true, encoding: .utf8)
        let report = sandbox.directory.appending("report.json")
        let release = sandbox.directory.appending("release")
        let share = 128
        let flood = try sandbox.spawn("/usr/bin/python3", [script, UA.editType, "3", "64", report, release, "\(share)"])
        defer { FileManager.default.createFile(atPath: release, contents: Data()) }
        #expect(waitUntil(timeout: 90, interval: 0.1) { FileManager.default.fileExists(atPath: report) }, "\(flood.stderrText)")
        let counts = (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report)))) as? [String: Int] ?? [:]
        print("sandbox continuation flood: \(counts)")
        #expect(counts[UA.error("LimitExceeded")] == 3 * 64 - share, "\(counts) \(flood.stderrText)\n\(harness.logTail())")
        // The app's 128 are in flight; an unconfined caller still starts one (it times out: the editor never registers).
        let host = try harness.bus.run("busctl", ["--user", "call", UA.busName, UA.managerPath, UA.managerInterface, "ContinueActivity",
                                                  "sa{sv}a{sv}", UA.editType, "0", "1", "timeout-ms", "u", "200"])
        #expect(host.stderr.contains("did not register") || host.stderr.contains("RemoteApplicationTimedOut"),
                "the unconfined caller: \(host.stdout) \(host.stderr)")
        #expect(!host.stderr.contains("LimitExceeded"))
    }
}
