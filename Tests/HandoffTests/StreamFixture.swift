// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport

/// An app at either end of a continuation stream between two stacks
/// (Python + gi): `stream_app.py ROLE APP TYPE MODE [BYTES]`.
///
/// - `origin`: registers a handler, makes an activity with
///   supports-continuation-streams current and prints `CURRENT <path>` after
///   `READY`; its
///   handler gets the stream in ContinuationStreamOpened.
/// - `continuer`: registers a handler; when ContinueActivity brings a
///   continuation-token it opens the stream with OpenContinuationStream.
///
/// Once it has its end it prints `OPENED`, then per MODE:
/// `send` writes BYTES bytes (prints `SENT <n> <sha256>`) and keeps reading;
/// `echo-then-close` waits for BYTES bytes, writes 1 MiB back, closes its end
/// and prints `SENT …` then `CLOSED`; `send-close` writes BYTES bytes and
/// closes; `hold` only reads; `stall` never reads; `sink` reads without
/// hashing or printing and prints `ELAPSED <ms since OPENED>` before `EOF`. Every read prints
/// `RECV <total> <sha256 so far>`, the end of the stream `EOF <total> <sha256>`.
let streamAppScript = #"""
import hashlib, os, sys, time
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib

role, app, activity_type, mode = sys.argv[1:5]
count = int(sys.argv[5]) if len(sys.argv) > 5 else 0
XML = """\#(HandlerFixture.handlerXML)"""
SERVICE, PATH, IFACE = "org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity"
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
state = {"received": 0, "hash": hashlib.sha256(), "fd": None}

def pattern(n):
    period = bytes((i * 7 + 3) % 251 for i in range(251))
    return (period * (n // 251 + 1))[:n]

def send(n):
    data = pattern(n)
    os.set_blocking(state["fd"], True)
    view = memoryview(data)
    while view:
        written = os.write(state["fd"], view)
        view = view[written:]
    print("SENT %d %s" % (n, hashlib.sha256(data).hexdigest()), flush=True)

def readable(fd, condition):
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    except OSError:
        chunk = b""
    if not chunk:
        if mode == "sink":
            print("ELAPSED %.3f" % ((time.monotonic() - state["opened"]) * 1000), flush=True)
        print("EOF %d %s" % (state["received"], state["hash"].hexdigest()), flush=True)
        os.close(fd)
        return False
    state["received"] += len(chunk)
    if mode != "sink":
        state["hash"].update(chunk)
    if mode != "sink":
        print("RECV %d %s" % (state["received"], state["hash"].hexdigest()), flush=True)
    if mode == "echo-then-close" and state["received"] >= count:
        send(1 << 20)
        os.close(fd)
        print("CLOSED", flush=True)
        return False
    return True

def got_stream(fd):
    state["fd"] = fd
    state["opened"] = time.monotonic()
    os.set_blocking(fd, False)
    print("OPENED", flush=True)
    if mode in ("send", "send-close"):
        send(count)
        os.set_blocking(fd, False)
    if mode == "send-close":
        os.close(fd)
        print("CLOSED", flush=True)
        return False
    if mode != "stall":
        GLib.io_add_watch(fd, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, readable)
    return False

def open_stream(token):
    try:
        reply, fds = bus.call_with_unix_fd_list_sync(SERVICE, PATH, IFACE, "OpenContinuationStream", GLib.Variant("(s)", (token,)),
                                                     GLib.VariantType("(h)"), Gio.DBusCallFlags.NONE, -1, None, None)
        got_stream(fds.steal_fds()[reply.unpack()[0]])
    except GLib.Error as error:
        print("ERROR " + error.message, flush=True)
    return False

def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "ContinueActivity":
        _, _, platform = parameters.unpack()
        token = platform.get("continuation-token")
        print("CONTINUE " + ("token" if token else "no-token"), flush=True)
        invocation.return_value(GLib.Variant("(b)", (True,)))
        if token:
            GLib.idle_add(open_stream, token)
    elif method == "ContinuationStreamOpened":
        # Stolen, not dup()ed: a copy left in the message would keep the socket open after we close ours.
        fds = invocation.get_message().get_unix_fd_list().steal_fds()
        fd = fds[parameters.unpack()[1]]
        invocation.return_value(None)
        GLib.idle_add(got_stream, fd)
    elif method == "SaveActivity":
        invocation.return_value(GLib.Variant("(a{sv})", ({},)))
    else:
        invocation.return_value(None)

bus.register_object("/handler", Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], on_call, None, None)
for method, args in (("RegisterApplication", GLib.Variant("(s)", (app,))), ("RegisterHandler", GLib.Variant("(o)", ("/handler",)))):
    bus.call_sync(SERVICE, PATH, IFACE, method, args, None, Gio.DBusCallFlags.NONE, -1, None)
if role == "origin":
    properties = {"app-id": GLib.Variant("s", app), "title": GLib.Variant("s", "Streaming"),
                  "supports-continuation-streams": GLib.Variant("b", True)}
    path = bus.call_sync(SERVICE, PATH, IFACE, "BecomeCurrent", GLib.Variant("(sa{sv})", (activity_type, properties)),
                         None, Gio.DBusCallFlags.NONE, -1, None).unpack()[0]
print("READY", flush=True)
if role == "origin":
    print("CURRENT " + path, flush=True)
GLib.MainLoop().run()
"""#

/// Reads a stream app's lines until one starts with `prefix`; nil after
/// `timeout` seconds (a failure guard) or when its output ends.
func streamAppLine(_ process: ChildProcess, _ prefix: String, timeout: Double = 30) -> String? {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        guard let line = try? process.readLine(timeout: max(deadline.timeIntervalSinceNow, 0.1)) else { return nil }
        if line.hasPrefix(prefix) { return line }
    }
    return nil
}
