// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

/// A stand-in for useractivity-handoffd on a private bus: the contract's
/// manager, ObjectManager and two device objects, in Python with Gio. Pair
/// asks the registered agent (RequestConfirmation with code 123456) and
/// answers as the agent did. Every call is appended to `calls.log`.
private let fakeHandoffService = #"""
import sys
from gi.repository import Gio, GLib

LOG = open(sys.argv[1], "a", buffering=1)
ERR = "org.example.UserActivity.Error."
XML = """
<node>
 <interface name="org.example.UserActivity.Handoff">
  <property name="Enabled" type="b" access="readwrite"/>
  <property name="DeviceName" type="s" access="readwrite"/>
  <property name="DeviceId" type="s" access="read"/>
  <property name="Discoverable" type="b" access="readwrite"/>
  <property name="DiscoverableTimeout" type="u" access="readwrite"/>
  <method name="RegisterAgent"><arg name="agent" type="o" direction="in"/></method>
  <method name="UnregisterAgent"><arg name="agent" type="o" direction="in"/></method>
  <method name="AddPeer"><arg name="address" type="s" direction="in"/><arg name="device" type="o" direction="out"/></method>
  <method name="ResetIdentity"/>
 </interface>
 <interface name="org.freedesktop.DBus.ObjectManager">
  <method name="GetManagedObjects"><arg type="a{oa{sa{sv}}}" direction="out"/></method>
 </interface>
</node>"""
DEVICE_XML = """
<node>
 <interface name="org.example.UserActivity.Handoff.Device">
  <property name="Name" type="s" access="read"/>
  <property name="DeviceId" type="s" access="read"/>
  <property name="Address" type="s" access="read"/>
  <property name="Paired" type="b" access="read"/>
  <property name="Reachable" type="b" access="read"/>
  <property name="CurrentActivity" type="a{sv}" access="read"/>
  <method name="Pair"/>
  <method name="CancelPairing"/>
  <method name="Unpair"/>
  <method name="ContinueActivity"><arg type="a{sv}" direction="in"/><arg type="s" direction="out"/></method>
 </interface>
</node>"""
BASE = "/org/example/UserActivity/Handoff"
manager = {"Enabled": GLib.Variant("b", False), "DeviceName": GLib.Variant("s", "Desk"),
           "DeviceId": GLib.Variant("s", "ab" * 32), "Discoverable": GLib.Variant("b", False),
           "DiscoverableTimeout": GLib.Variant("u", 120)}
devices = {
  "c0ffee" + "0" * 58: {"Name": "Kitchen laptop", "Address": "10.0.0.5:48300", "Paired": False, "Reachable": True,
                        "CurrentActivity": {}},
  "d00d" + "1" * 60: {"Name": "Studio", "Address": "10.0.0.6:48300", "Paired": True, "Reachable": True,
                      "CurrentActivity": {"activity-type": GLib.Variant("s", "org.example.Editor.edit"),
                                          "app-id": GLib.Variant("s", "org.example.Editor"),
                                          "title": GLib.Variant("s", "Report"),
                                          "webpage-url": GLib.Variant("s", ""),
                                          "timestamp": GLib.Variant("x", 1700000000000000),
                                          "continuable": GLib.Variant("b", True)}},
}
agent = [None]
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)

def device_props(did):
    d = devices[did]
    return {"Name": GLib.Variant("s", d["Name"]), "DeviceId": GLib.Variant("s", did),
            "Address": GLib.Variant("s", d["Address"]), "Paired": GLib.Variant("b", d["Paired"]),
            "Reachable": GLib.Variant("b", d["Reachable"]), "CurrentActivity": GLib.Variant("a{sv}", d["CurrentActivity"])}

def manager_call(conn, sender, path, iface, method, params, inv):
    LOG.write("%s %s\n" % (method, params.unpack()))
    if method == "RegisterAgent":
        agent[0] = (sender, params.unpack()[0]); inv.return_value(None)
    elif method == "UnregisterAgent":
        agent[0] = None; inv.return_value(None)
    elif method == "AddPeer":
        addr = params.unpack()[0]
        if ":" not in addr:
            inv.return_dbus_error(ERR + "InvalidArgument", "expected host:port, got '%s'" % addr); return
        inv.return_value(GLib.Variant("(o)", (BASE + "/device/added",)))
    elif method == "ResetIdentity":
        manager["DeviceId"] = GLib.Variant("s", "ef" * 32); inv.return_value(None)
    elif method == "GetManagedObjects":
        inv.return_value(GLib.Variant("(a{oa{sa{sv}}})", ({BASE + "/device/" + did: {
            "org.example.UserActivity.Handoff.Device": device_props(did)} for did in devices},)))

def manager_get(conn, sender, path, iface, name):
    return manager[name]

def manager_set(conn, sender, path, iface, name, value):
    LOG.write("Set %s %s\n" % (name, value.unpack()))
    manager[name] = value
    return True

def device_call(conn, sender, path, iface, method, params, inv):
    did = path.rsplit("/", 1)[1]
    d = devices[did]
    LOG.write("%s %s\n" % (method, did))
    if method == "Pair":
        if agent[0] is None:
            inv.return_dbus_error(ERR + "NoAgent", "no agent to confirm the pairing"); return
        def answered(c, res):
            try:
                c.call_finish(res)
            except GLib.Error as e:
                LOG.write("agent refused: %s\n" % Gio.DBusError.get_remote_error(e))
                inv.return_dbus_error(ERR + "PairingRefused", "the pairing was refused"); return
            d["Paired"] = True
            inv.return_value(None)
        conn.call(agent[0][0], agent[0][1], "org.example.UserActivity.Handoff.Agent", "RequestConfirmation",
                  GLib.Variant("(os)", (path, "123456")), None, Gio.DBusCallFlags.NONE, 60000, None, answered)
    elif method == "Unpair":
        if not d["Paired"]:
            inv.return_dbus_error(ERR + "NotPaired", "%s is not paired" % d["Name"]); return
        d["Paired"] = False; inv.return_value(None)
    elif method == "CancelPairing":
        inv.return_value(None)
    elif method == "ContinueActivity":
        if not d["Paired"]:
            inv.return_dbus_error(ERR + "NotPaired", "%s is not paired" % d["Name"]); return
        inv.return_value(GLib.Variant("(s)", ("org.example.Editor",)))

def device_get(conn, sender, path, iface, name):
    return device_props(path.rsplit("/", 1)[1])[name]

node = Gio.DBusNodeInfo.new_for_xml(XML)
for info in node.interfaces:
    bus.register_object(BASE, info, manager_call, manager_get, manager_set)
dnode = Gio.DBusNodeInfo.new_for_xml(DEVICE_XML)
for did in devices:
    bus.register_object(BASE + "/device/" + did, dnode.interfaces[0], device_call, device_get, None)
Gio.bus_own_name_on_connection(bus, "org.example.UserActivity.Handoff", Gio.BusNameOwnerFlags.NONE, None, None)
print("ready", flush=True)
GLib.MainLoop().run()
"""#

/// A private bus with the fake Handoff service on it, and the built CLI.
private final class HandoffFixture {
    let bus: PrivateBus
    let service: ChildProcess
    let ctl: String
    let log: String

    init() throws {
        let bus = try PrivateBus()
        self.bus = bus
        let script = bus.directory.appending("fake-handoffd.py")
        try writeFileAtomically(script, contents: fakeHandoffService)
        log = bus.directory.appending("calls.log")
        service = try bus.spawn("/usr/bin/python3", [script, log])
        guard try service.readLine(timeout: 20) == "ready" else {
            throw CommandFailure(result: CommandResult(command: ["fake"], exitCode: -1, stdout: "", stderr: service.stderrText))
        }
        // The name is taken right after "ready": wait for it.
        _ = try waitUntil(timeout: 30) {
            try bus.run("gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                  "--method", "org.freedesktop.DBus.NameHasOwner", "org.example.UserActivity.Handoff"])
                .stdout.contains("true")
        }
        ctl = try BuiltProducts.executable(named: "useractivityctl")
    }

    deinit {
        service.terminate()
        bus.stop()
    }

    func ctl(_ arguments: [String]) throws -> CommandResult {
        try runCommand(ctl, arguments, environment: bus.environment, timeout: 30)
    }

    /// `useractivityctl ARGS` with `input` on stdin (through sh).
    func ctl(_ arguments: [String], stdin input: String) throws -> CommandResult {
        let inputFile = bus.directory.appending("stdin-\(UInt32.random(in: 0...UInt32.max))")
        try writeFileAtomically(inputFile, contents: input)
        let command = ([ctl] + arguments).map(shellQuote).joined(separator: " ") + " < " + shellQuote(inputFile)
        return try runCommand("/bin/sh", ["-c", command], environment: bus.environment, timeout: 30)
    }

    var calls: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    func json(_ arguments: [String]) throws -> Any {
        let result = try ctl(arguments + ["--json"])
        guard result.succeeded else { throw CommandFailure(result: result) }
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
    }
}

@Suite("useractivityctl handoff")
struct HandoffCLITests {
    @Test("status --json reports the manager's properties and device counts")
    func statusJSON() throws {
        let fixture = try HandoffFixture()
        let status = try #require(try fixture.json(["handoff", "status"]) as? [String: Any])
        #expect(status["running"] as? Bool == true)
        #expect(status["enabled"] as? Bool == false)
        #expect(status["device-name"] as? String == "Desk")
        #expect(status["device-id"] as? String == String(repeating: "ab", count: 32))
        #expect(status["discoverable"] as? Bool == false)
        #expect(status["discoverable-timeout"] as? Int == 120)
        #expect(status["devices"] as? Int == 2)
        #expect(status["paired-devices"] as? Int == 1)
    }

    @Test("devices --json lists the device objects with their properties; the table too")
    func devices() throws {
        let fixture = try HandoffFixture()
        let devices = try #require(try fixture.json(["handoff", "devices"]) as? [[String: Any]])
        #expect(devices.count == 2)
        let studio = try #require(devices.first { ($0["properties"] as? [String: Any])?["Name"] as? String == "Studio" })
        let properties = try #require(studio["properties"] as? [String: Any])
        #expect(properties["Paired"] as? Bool == true)
        #expect(properties["Address"] as? String == "10.0.0.6:48300")
        #expect((properties["CurrentActivity"] as? [String: Any])?["title"] as? String == "Report")
        #expect((studio["path"] as? String)?.hasPrefix("/org/example/UserActivity/Handoff/device/d00d") == true)

        let table = try fixture.ctl(["handoff", "devices"])
        #expect(table.succeeded, "\(table)")
        #expect(table.stdout.contains("Kitchen laptop") && table.stdout.contains("Report (org.example.Editor)"), "\(table)")
    }

    @Test("enable, disable and discoverable set the manager's properties")
    func settings() throws {
        let fixture = try HandoffFixture()
        #expect(try fixture.ctl(["handoff", "enable"]).succeeded)
        #expect(try fixture.ctl(["handoff", "discoverable", "on"]).succeeded)
        #expect(try fixture.ctl(["handoff", "discoverable"]).trimmedStdout == "on")
        #expect(try fixture.ctl(["handoff", "disable"]).succeeded)
        #expect(fixture.calls.contains("Set Enabled True\nSet Discoverable True\nSet Enabled False"), "\(fixture.calls)")
        let bad = try fixture.ctl(["handoff", "discoverable", "maybe"])
        #expect(!bad.succeeded)
    }

    @Test("pair accepts through the agent prompt when the person types y")
    func pairAccepted() throws {
        let fixture = try HandoffFixture()
        let result = try fixture.ctl(["handoff", "pair", "Kitchen laptop"], stdin: "y\n")
        #expect(result.succeeded, "\(result)\n\(fixture.calls)")
        #expect(result.stderr.contains("Accept pairing with Kitchen laptop, code 123456? [y/N]"), "\(result)")
        #expect(result.stdout.contains("Paired with Kitchen laptop"), "\(result)")
        #expect(fixture.calls.contains("RegisterAgent"), "\(fixture.calls)")
        let devices = try #require(try fixture.json(["handoff", "devices"]) as? [[String: Any]])
        let kitchen = devices.first { ($0["properties"] as? [String: Any])?["Name"] as? String == "Kitchen laptop" }
        #expect((kitchen?["properties"] as? [String: Any])?["Paired"] as? Bool == true)
    }

    @Test("pair refuses when the person answers anything but y; the error is printed with its D-Bus name")
    func pairRefused() throws {
        let fixture = try HandoffFixture()
        for answer in ["n\n", "\n", ""] {
            let result = try fixture.ctl(["handoff", "pair", "c0ffee"], stdin: answer)
            #expect(result.exitCode == 1, "\(result)")
            #expect(result.stderr.contains("org.example.UserActivity.Error.PairingRefused"), "\(result)")
        }
        #expect(fixture.calls.contains("agent refused: org.example.UserActivity.Error.PairingRefused"), "\(fixture.calls)")
    }

    @Test("Errors: unknown device, ambiguous and D-Bus errors exit non-zero with the error's name")
    func errors() throws {
        let fixture = try HandoffFixture()
        let unknown = try fixture.ctl(["handoff", "unpair", "Nowhere"])
        #expect(unknown.exitCode == 1)
        #expect(unknown.stderr.contains("no device matches 'Nowhere'"), "\(unknown)")
        let notPaired = try fixture.ctl(["handoff", "continue", "Kitchen laptop"])
        #expect(notPaired.exitCode == 1)
        #expect(notPaired.stderr.contains("org.example.UserActivity.Error.NotPaired: Kitchen laptop is not paired"), "\(notPaired)")
        let badPeer = try fixture.ctl(["handoff", "add-peer", "nowhere"])
        #expect(badPeer.exitCode == 1)
        #expect(badPeer.stderr.contains("org.example.UserActivity.Error.InvalidArgument"), "\(badPeer)")
    }

    @Test("continue prints the app; add-peer the new object; unpair; reset-identity the new id")
    func actions() throws {
        let fixture = try HandoffFixture()
        #expect(try fixture.ctl(["handoff", "continue", "d00d"]).trimmedStdout == "org.example.Editor")
        #expect(try fixture.ctl(["handoff", "add-peer", "10.0.0.9:48300"]).trimmedStdout == "/org/example/UserActivity/Handoff/device/added")
        #expect(try fixture.ctl(["handoff", "unpair", "studio"]).succeeded)
        #expect(try fixture.ctl(["handoff", "reset-identity"]).trimmedStdout == String(repeating: "ef", count: 32))
    }

    @Test("Without the service, status says so and exits 69")
    func noService() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let result = try runCommand(try BuiltProducts.executable(named: "useractivityctl"), ["handoff", "status"],
                                    environment: bus.environment, timeout: 30)
        #expect(result.exitCode == 69, "\(result)")
        #expect(result.stdout.contains("not running and not activatable"), "\(result)")
    }
}
