// SPDX-License-Identifier: Apache-2.0

/// The fixture apps of the continuation tests, as one Python script run with
/// `/usr/bin/python3` (the interpreter that has `gi`). It is kept here as
/// text, written into each test's session directory, so the test target
/// needs no resources.
///
/// Roles (`--mode`):
/// - `handler`: an app that names itself with `RegisterApplication`, exports
///   `org.example.UserActivity.Handler` and registers it (`RegisterHandler`);
///   it answers `ContinueActivity` as `--answer` says (`true`, `false`,
///   `error:<name>:<message>`, `slow:<ms>`, `never`, `stream`), answers
///   `SaveActivity` with `--save-props` after `--save-delay` ms, and talks over
///   continuation streams. With `--create <type>` it also creates a live
///   activity (its own connection owns it). The same command line serves as
///   a plain app's `Exec` line: launched by the daemon, it registers and
///   receives the queued continuation.
/// - `activatable`: a `Gio.Application` with the action `continue-activity`
///   of type `(sa{sv})`, started by D-Bus activation (`--gapplication-service`).
/// - `browser`: a fake web browser that records the URLs it was started with.
///
/// Every event is one JSON object per line in `--log`.
enum FixtureScript {
    static let python = #"""
# SPDX-License-Identifier: Apache-2.0
"""Fixture apps for the continuation tests of useractivityd.

One script, several roles (--mode):
  handler      an app that names itself (RegisterApplication), exports
               org.example.UserActivity.Handler and registers it; it answers
               ContinueActivity as --answer says, SaveActivity with
               --save-props, and talks over continuation streams.
  activatable  a GApplication with the action 'continue-activity' of type
               (sa{sv}), started by D-Bus activation (--gapplication-service).
  browser      a fake web browser: records the URLs it was started with.
Every event is one JSON object per line in --log.
"""
import argparse
import json
import os
import socket
import sys
import threading

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

BUS = "org.example.UserActivity"
MANAGER = "/org/example/UserActivity"
IFACE = "org.example.UserActivity"

HANDLER_XML = """
<node>
  <interface name="org.example.UserActivity.Handler">
    <method name="ContinueActivity">
      <arg type="s" direction="in"/><arg type="a{sv}" direction="in"/><arg type="a{sv}" direction="in"/>
      <arg type="b" direction="out"/>
    </method>
    <method name="SaveActivity"><arg type="o" direction="in"/><arg type="a{sv}" direction="out"/></method>
    <method name="ContinuationStreamOpened"><arg type="o" direction="in"/><arg type="h" direction="in"/></method>
    <method name="FailedToContinue">
      <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="s" direction="in"/>
    </method>
  </interface>
</node>
"""

_log_lock = threading.Lock()
_log_path = None


def log(event, **fields):
    fields["event"] = event
    fields["pid"] = os.getpid()
    line = json.dumps(fields, default=repr, sort_keys=True)
    with _log_lock:
        with open(_log_path, "a") as f:
            f.write(line + "\n")


def stream_talk(fd, greeting, who):
    """Writes a greeting line, then reads one line from the other end."""
    try:
        sock = socket.socket(fileno=fd)
        sock.settimeout(10)
        sock.sendall(greeting.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        log("stream-read", side=who, data=data.decode().rstrip("\n"))
        sock.close()
    except Exception as e:  # the test reads the log, so say what went wrong
        log("stream-error", side=who, error=repr(e))


class HandlerApp:
    def __init__(self, args):
        self.args = args
        self.held = []  # invocations answered later (or never)
        self.conn = Gio.bus_get_sync(Gio.BusType.SESSION, None)

    def call(self, method, signature, values, reply=None, timeout=10000):
        return self.conn.call_sync(BUS, MANAGER, IFACE, method, GLib.Variant(signature, values),
                                   GLib.VariantType(reply) if reply else None,
                                   Gio.DBusCallFlags.NONE, timeout, None)

    def start(self):
        a = self.args
        if a.own_name:
            Gio.bus_own_name_on_connection(self.conn, a.app_id, Gio.BusNameOwnerFlags.NONE, None, None)
        self.call("RegisterApplication", "(s)", (a.app_id,))
        if not a.no_handler:
            info = Gio.DBusNodeInfo.new_for_xml(HANDLER_XML).interfaces[0]
            self.conn.register_object(a.handler_path, info, self.on_call, None, None)
            if a.register_delay:
                GLib.timeout_add(a.register_delay, self.register_handler)
            else:
                self.register_handler()
        if a.create:
            props = GLib.Variant.parse(GLib.VariantType("a{sv}"), a.props, None, None)
            method = "BecomeCurrent" if a.become_current else "CreateActivity"
            arguments = GLib.Variant.new_tuple(GLib.Variant("s", a.create), props)
            path = self.conn.call_sync(BUS, MANAGER, IFACE, method, arguments, GLib.VariantType("(o)"),
                                       Gio.DBusCallFlags.NONE, 10000, None).unpack()[0]
            log("created", path=path)
        log("ready", unique=self.conn.get_unique_name(), app=a.app_id,
            activation_token=os.environ.get("XDG_ACTIVATION_TOKEN"),
            startup_id=os.environ.get("DESKTOP_STARTUP_ID"), argv=sys.argv[1:])
        print("READY " + self.conn.get_unique_name(), flush=True)

    def register_handler(self):
        path = self.args.register_path or self.args.handler_path
        self.call("RegisterHandler", "(o)", (path,))
        log("handler-registered", path=path)
        return False

    def on_call(self, conn, sender, path, iface, method, params, invocation):
        a = self.args
        if method == "ContinueActivity":
            activity_type, activity, platform = params.unpack()
            log("continue", type=activity_type, activity=activity, platform=platform, sender=sender)
            answer = a.answer
            if answer == "true" or answer == "stream":
                invocation.return_value(GLib.Variant("(b)", (True,)))
                token = platform.get("continuation-token")
                if answer == "stream" and token:
                    GLib.idle_add(self.open_stream, token)
            elif answer == "false":
                invocation.return_value(GLib.Variant("(b)", (False,)))
            elif answer.startswith("error:"):
                _, name, message = answer.split(":", 2)
                invocation.return_dbus_error(name, message)
            elif answer.startswith("slow:"):
                self.held.append(invocation)

                def later(inv=invocation):
                    inv.return_value(GLib.Variant("(b)", (True,)))
                    log("answered-late", type=activity_type)
                    return False
                GLib.timeout_add(int(answer[5:]), later)
            elif answer == "never":
                self.held.append(invocation)
            else:
                invocation.return_dbus_error("org.example.Fixture.Error.BadAnswer", answer)
        elif method == "SaveActivity":
            (activity_path,) = params.unpack()
            log("save", path=activity_path)
            props = GLib.Variant.parse(GLib.VariantType("a{sv}"), a.save_props, None, None)

            def answer_save(inv=invocation, props=props):
                inv.return_value(GLib.Variant.new_tuple(props))
                return False
            if a.save_delay:
                self.held.append(invocation)
                GLib.timeout_add(a.save_delay, answer_save)
            else:
                answer_save()
        elif method == "ContinuationStreamOpened":
            activity_path, index = params.unpack()
            fd = invocation.get_message().get_unix_fd_list().get(index)
            log("stream-opened", path=activity_path)
            invocation.return_value(None)
            threading.Thread(target=stream_talk, args=(fd, "hello from origin " + a.app_id, "origin"),
                             daemon=True).start()
        elif method == "FailedToContinue":
            activity_type, error_name, message = params.unpack()
            log("failed", type=activity_type, error=error_name, message=message)
            invocation.return_value(None)

    def open_stream(self, token):
        try:
            result, fds = self.conn.call_with_unix_fd_list_sync(
                BUS, MANAGER, IFACE, "OpenContinuationStream", GLib.Variant("(s)", (token,)),
                GLib.VariantType("(h)"), Gio.DBusCallFlags.NONE, 10000, None, None)
            fd = fds.get(result.unpack()[0])
            log("stream-got", token=token)
            threading.Thread(target=stream_talk, args=(fd, "hello from continuing " + self.args.app_id, "continuing"),
                             daemon=True).start()
        except GLib.Error as e:
            log("stream-refused", error=e.message)
        return False


class ActivatableApp(Gio.Application):
    def __init__(self, app_id):
        super().__init__(application_id=app_id, flags=Gio.ApplicationFlags.DEFAULT_FLAGS)
        self.platform = {}
        action = Gio.SimpleAction.new("continue-activity", GLib.VariantType("(sa{sv})"))
        action.connect("activate", self.on_continue)
        self.add_action(action)

    def do_startup(self):
        Gio.Application.do_startup(self)
        log("started", app=self.get_application_id(), service=bool(self.get_flags() & Gio.ApplicationFlags.IS_SERVICE))

    def do_activate(self):
        log("activate")

    def do_before_emit(self, platform_data):
        self.platform = platform_data.unpack()
        Gio.Application.do_before_emit(self, platform_data)

    def on_continue(self, action, parameter):
        activity_type, activity = parameter.unpack()
        log("action", type=activity_type, activity=activity, platform=self.platform)


def main():
    global _log_path
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True, choices=["handler", "activatable", "browser"])
    p.add_argument("--log", required=True)
    p.add_argument("--app-id")
    p.add_argument("--answer", default="true")
    p.add_argument("--handler-path", default="/org/example/Fixture/Handler")
    p.add_argument("--register-path", help="register this path instead of the exported one (a broken app)")
    p.add_argument("--own-name", action="store_true")
    p.add_argument("--no-handler", action="store_true")
    p.add_argument("--register-delay", type=int, default=0)
    p.add_argument("--create")
    p.add_argument("--props", default="@a{sv} {}")
    p.add_argument("--become-current", action="store_true")
    p.add_argument("--save-props", default="@a{sv} {}")
    p.add_argument("--save-delay", type=int, default=0)
    args, rest = p.parse_known_args()
    _log_path = args.log
    if args.mode == "browser":
        log("opened", urls=rest)
        return 0
    if args.mode == "activatable":
        app = ActivatableApp(args.app_id)
        return app.run([sys.argv[0]] + rest)
    app = HandlerApp(args)
    app.start()
    GLib.MainLoop().run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
"""#
}
