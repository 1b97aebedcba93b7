#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""History search at N saved activities (default 100 000): keystroke to
results shown in useractivity-settings, and the app's resident size after
the searches. Under Xvfb with the accessibility bus and the real daemons
(Tests/SettingsUITests/desktop_session.py).

The store is filled with Donate calls (64 in flight) of titles "Note wNNNNNN".
Each sample types a unique word ("w" and six digits, key by key, XTest); the
time runs from the last keystroke to the first result's title being that
entry's, read over AT-SPI along the child indices learnt in a warm-up.

Usage: bench/settings/history-search.py [--entries 100000] [--samples 100] [--app PATH] [--json]"""
import argparse
import json
import os
import random
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "SettingsUITests"))
from desktop_session import BUILD, Session, accessible_application, child_path, node_at, wait_until  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--entries", type=int, default=100_000)
parser.add_argument("--samples", type=int, default=100)
parser.add_argument("--app", default=os.path.join(BUILD, "useractivity-settings"))
parser.add_argument("--json", action="store_true")
options = parser.parse_args()

APP = "com.example.Notes"
session = Session("search-bench", apps=[(APP, [f"{APP}.note"])])
os.environ["DBUS_SESSION_BUS_ADDRESS"] = session.address
os.environ["DISPLAY"] = session.display
from gi.repository import Gio, GLib  # noqa: E402
import pyatspi  # noqa: E402


def fill(count):
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    loop = GLib.MainLoop()
    state = {"next": 0, "done": 0, "failed": None}

    def send():
        index = state["next"]
        state["next"] += 1
        properties = {"app-id": GLib.Variant("s", APP), "title": GLib.Variant("s", f"Note w{index:06d}"),
                      "eligible-for-search": GLib.Variant("b", True)}
        bus.call("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity", "Donate",
                 GLib.Variant("(sa{sv})", (f"{APP}.note", properties)), None, Gio.DBusCallFlags.NONE, 120000, None,
                 answered, None)

    def answered(connection, result, _):
        try:
            connection.call_finish(result)
        except GLib.Error as error:
            state["failed"] = error.message
            loop.quit()
            return
        state["done"] += 1
        if state["next"] < count:
            send()
        elif state["done"] == count:
            loop.quit()
    for _ in range(min(64, count)):
        send()
    loop.run()
    if state["failed"]:
        raise SystemExit(f"Donate failed: {state['failed']}")


def follow(root, path):
    """The name of the node at `path` under `root`, read afresh."""
    node = node_at(root, path)
    try:
        return node.name if node is not None else None
    except Exception:
        return None


def press(keysym):
    pyatspi.Registry.generateKeyboardEvent(keysym, None, pyatspi.KEY_SYM)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


try:
    # Keep every entry (the default keeps 1000 per app).
    session.call("org.example.UserActivity", "/org/example/UserActivity", "org.freedesktop.DBus.Properties.Set",
                 "org.example.UserActivity", "MaxSavedPerApplication", "<uint32 0>")
    started = time.monotonic()
    fill(options.entries)
    fill_seconds = time.monotonic() - started
    app = session.spawn([options.app], GSK_RENDERER="cairo")
    root = wait_until(lambda: accessible_application("useractivity-settings"), 30, 0.05)
    frame = wait_until(lambda: root.getChildAtIndex(0), 10)
    x, y, width, height = frame.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    pyatspi.Registry.generateMouseEvent(x + width // 2, y + 10, "abs")
    tab, _ = wait_until(lambda: child_path(frame, lambda n: n.getRoleName() == "page tab" and n.name == "History"), 20)
    tab.queryAction().doAction(0)
    entry, _ = wait_until(lambda: child_path(frame, lambda n: n.getRoleName() == "entry" and n.name == "Search history"), 20)
    for _ in range(80):
        if entry.getState().contains(pyatspi.STATE_FOCUSED):
            break
        press(0xff09)
        time.sleep(0.05)
    else:
        raise SystemExit("the search entry was not reached with Tab")

    def type_word(word):
        for character in word[:-1]:
            press(ord(character))
            time.sleep(0.02)
        began = time.monotonic()
        press(ord(word[-1]))
        return began

    def clear():
        entry.queryEditableText().setTextContents("")

    # Warm-up: learn where the first result's title is.
    word = "w000001"
    type_word(word)
    found = wait_until(lambda: child_path(frame, lambda n: n.getRoleName() == "label" and n.name == f"Note {word}"), 20)
    if found is None:
        typed = entry.queryText().getText(0, -1)
        answer = session.call("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity.Search", word, "{}")
        raise SystemExit(f"the warm-up search showed nothing (typed {typed!r}; the service answers {answer[:200]})")
    title_path = found[1]
    samples = []
    for index in random.Random(7).sample(range(options.entries), options.samples):
        clear()
        wait_until(lambda: follow(frame, title_path) != f"Note {word}", 10, 0.002)
        word = f"w{index:06d}"
        began = type_word(word)
        if not wait_until(lambda: follow(frame, title_path) == f"Note {word}", 20, 0.001):
            raise SystemExit(f"{word}: results not shown within 20 s")
        samples.append((time.monotonic() - began) * 1000)
    with open(f"/proc/{app.pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    rss_mib = int(fields["VmRSS"].split()[0]) / 1024
    hwm_mib = int(fields["VmHWM"].split()[0]) / 1024
finally:
    session.close()

result = {"entries": options.entries, "fill_seconds": round(fill_seconds, 1), "samples": len(samples),
          "p50_ms": round(statistics.median(samples), 1), "p99_ms": round(percentile(samples, 0.99), 1),
          "max_ms": round(max(samples), 1),
          "rss_mib": round(rss_mib, 1), "peak_rss_mib": round(hwm_mib, 1)}
if options.json:
    print(json.dumps(result))
else:
    print(f"{result['entries']} saved activities (filled in {result['fill_seconds']} s), {result['samples']} searches:")
    print(f"keystroke to results shown: p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms")
    print(f"app RSS after the searches {result['rss_mib']} MiB (peak {result['peak_rss_mib']} MiB)")
