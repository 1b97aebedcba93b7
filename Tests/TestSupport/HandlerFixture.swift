// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A fixture app written in Python + gi: names itself with
/// RegisterApplication, exports org.example.UserActivity.Handler at
/// /handler and registers it. Prints `READY`, or `ERROR <name> <message>`
/// when registering failed, then one JSON line per ContinueActivity.
public enum HandlerFixture {
    /// org.example.UserActivity.Handler as introspection XML, for fixture apps to export.
    public static let handlerXML = """
    <node><interface name="org.example.UserActivity.Handler">
    <method name="ContinueActivity"><arg type="s" direction="in"/><arg type="a{sv}" direction="in"/>
    <arg type="a{sv}" direction="in"/><arg type="b" direction="out"/></method>
    <method name="SaveActivity"><arg type="o" direction="in"/><arg type="a{sv}" direction="out"/></method>
    <method name="ContinuationStreamOpened"><arg type="o" direction="in"/><arg type="h" direction="in"/></method>
    <method name="FailedToContinue"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="s" direction="in"/></method>
    </interface></node>
    """

    public static let python = #"""
# SPDX-License-Identifier: Apache-2.0
import json
import sys

import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

XML = """\#(handlerXML)"""


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

    /// Starts the fixture for `app` on the harness's bus; returns once it is registered.
    public static func start(app: String, bus: PrivateBus, directory: String) throws -> ChildProcess {
        let script = directory + "/handler.py"
        try writeFileAtomically(script, contents: python, mode: 0o755)
        let process = try bus.spawn("/usr/bin/python3", [script, app])
        guard let line = try process.readLine(timeout: 20) else {
            throw CommandFailure(result: CommandResult(command: [script], exitCode: 1, stdout: "", stderr: process.stderrText))
        }
        guard line == "READY" else {
            throw CommandFailure(result: CommandResult(command: [script], exitCode: 1, stdout: line, stderr: process.stderrText))
        }
        return process
    }
}
