# SPDX-License-Identifier: Apache-2.0
"""Helpers the UI test runs on a session bus with GDBus (test code only; the
app itself uses the project's libdbus stack).

  fixtures.py agent      a pairing agent that accepts and prints "CODE <code>"
  fixtures.py app ID     owns ID and records org.freedesktop.Application
                         ActivateAction calls, one JSON line each, on stdout"""
import json
import sys

from gi.repository import Gio, GLib

AGENT = """<node><interface name="org.example.UserActivity.Handoff.Agent">
<method name="RequestConfirmation"><arg name="device" type="o" direction="in"/><arg name="code" type="s" direction="in"/></method>
<method name="Cancel"/></interface></node>"""
APPLICATION = """<node><interface name="org.freedesktop.Application">
<method name="Activate"><arg type="a{sv}" direction="in"/></method>
<method name="Open"><arg type="as" direction="in"/><arg type="a{sv}" direction="in"/></method>
<method name="ActivateAction"><arg type="s" direction="in"/><arg type="av" direction="in"/><arg type="a{sv}" direction="in"/></method>
</interface></node>"""

bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)


def agent():
    def call(connection, sender, path, interface, method, parameters, invocation):
        if method == "RequestConfirmation":
            print("CODE", parameters.unpack()[1], flush=True)
        invocation.return_value(None)
    bus.register_object("/test/Agent", Gio.DBusNodeInfo.new_for_xml(AGENT).interfaces[0], call, None, None)
    bus.call_sync("org.example.UserActivity.Handoff", "/org/example/UserActivity/Handoff",
                  "org.example.UserActivity.Handoff", "RegisterAgent", GLib.Variant("(o)", ("/test/Agent",)),
                  None, Gio.DBusCallFlags.NONE, 30000, None)
    print("READY", flush=True)


def app(app_id):
    def call(connection, sender, path, interface, method, parameters, invocation):
        if method == "ActivateAction":
            name, arguments, _ = parameters.unpack()
            print(json.dumps({"action": name, "arguments": arguments}, default=str), flush=True)
        invocation.return_value(None)
    path = "/" + app_id.replace(".", "/")
    bus.register_object(path, Gio.DBusNodeInfo.new_for_xml(APPLICATION).interfaces[0], call, None, None)
    Gio.bus_own_name_on_connection(bus, app_id, Gio.BusNameOwnerFlags.NONE,
                                   lambda *_: print("READY", flush=True), None)


{"agent": agent, "app": lambda: app(sys.argv[2])}[sys.argv[1]]()
GLib.MainLoop().run()
