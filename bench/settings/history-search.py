#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""History search at N saved activities (default 100 000): keystroke to
results shown in useractivity-settings, and the app's resident size after
the searches. Under Xvfb with the accessibility bus and the real daemons
(Tests/SettingsUITests/desktop_session.py).

The store is filled with Donate calls (64 in flight) of titles "Note wNNNNNN".
Each sample types a unique word ("w" and six digits, key by key, XTest
through AT-SPI). The times come from the app's own trace
(USERACTIVITY_SETTINGS_TRACE, monotonic µs): the entry's text becoming the
word, the Search call leaving, its reply arriving, the list model updated,
and the next frame painted after it. The same run's baseline is the
service's Search round trip for the same words from a plain GDBus client.

Usage: bench/settings/history-search.py [--entries 100000] [--samples 100] [--app PATH] [--json]"""
import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
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


trace_dir = tempfile.mkdtemp(prefix="settings-trace-")
try:
    # Keep every entry (the default keeps 1000 per app).
    session.call("org.example.UserActivity", "/org/example/UserActivity", "org.freedesktop.DBus.Properties.Set",
                 "org.example.UserActivity", "MaxSavedPerApplication", "<uint32 0>")
    started = time.monotonic()
    fill(options.entries)
    fill_seconds = time.monotonic() - started
    trace_path = os.path.join(trace_dir, "trace")
    app = session.spawn([options.app], GSK_RENDERER="cairo", USERACTIVITY_SETTINGS_TRACE=trace_path)
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

    def trace_lines():
        with open(trace_path) as trace:
            return [line.rstrip("\n").split(" ", 2) for line in trace]

    def steps_of(word, since):
        """The trace's times for `word` from line `since` on: typed, sent,
        reply, model, painted; None until the frame after the model is painted."""
        lines = trace_lines()[since:]
        marks = {}
        for step, stamp, query in lines:
            if step == "painted":
                if "model" in marks:
                    marks["painted"] = int(stamp)
                    return marks, since + len(lines)
            elif query == word and step not in marks and (step == "typed" or "typed" in marks):
                marks[step] = int(stamp)
        return None

    def settle(word, since):
        found = wait_until(lambda: steps_of(word, since), 20, 0.001)
        if not found:
            raise SystemExit(f"{word!r}: results not painted within 20 s (trace: {trace_lines()[since:][-8:]})")
        return found

    # Warm-up: the page shown, the first search painted.
    word = "w000001"
    type_word(word)
    _, position = settle(word, 0)
    found = wait_until(lambda: child_path(frame, lambda n: n.getRoleName() == "label" and n.name == f"Note {word}"), 20)
    if found is None:
        raise SystemExit("the warm-up search showed nothing over AT-SPI")
    words = [f"w{index:06d}" for index in random.Random(7).sample(range(options.entries), options.samples)]
    samples = []
    for word in words:
        clear()
        _, position = settle("", position)
        type_word(word)
        marks, position = settle(word, position)
        samples.append(marks)

    # Baseline, same run: the service's Search for the same words from a plain client.
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    round_trips = []
    for word in words:
        began = time.monotonic()
        bus.call_sync("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity", "Search",
                      GLib.Variant("(sa{sv})", (word, {"limit": GLib.Variant("u", 200)})), None,
                      Gio.DBusCallFlags.NONE, 20000, None)
        round_trips.append((time.monotonic() - began) * 1000)
    with open(f"/proc/{app.pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    rss_mib = int(fields["VmRSS"].split()[0]) / 1024
    hwm_mib = int(fields["VmHWM"].split()[0]) / 1024
finally:
    session.close()
    shutil.rmtree(trace_dir, ignore_errors=True)



def spread(values):
    return {"p50_ms": round(statistics.median(values), 1), "p99_ms": round(percentile(values, 0.99), 1),
            "max_ms": round(max(values), 1)}


def between(first, last):
    return [(marks[last] - marks[first]) / 1000 for marks in samples]


result = {"entries": options.entries, "fill_seconds": round(fill_seconds, 1), "samples": len(samples),
          "keystroke_to_painted": spread(between("typed", "painted")),
          "split": {"typed_to_sent": spread(between("typed", "sent")),
                    "sent_to_reply": spread(between("sent", "reply")),
                    "reply_to_model": spread(between("reply", "model")),
                    "model_to_painted": spread(between("model", "painted"))},
          "baseline_search_round_trip": spread(round_trips),
          "rss_mib": round(rss_mib, 1), "peak_rss_mib": round(hwm_mib, 1)}
if options.json:
    print(json.dumps(result))
else:
    print(f"{result['entries']} saved activities (filled in {result['fill_seconds']} s), {result['samples']} searches:")
    def line(name, figures):
        print(f"{name:<34} p50 {figures['p50_ms']:>7} ms  p99 {figures['p99_ms']:>7} ms  max {figures['max_ms']:>7} ms")
    line("keystroke to results painted", result["keystroke_to_painted"])
    for name, figures in result["split"].items():
        line("  " + name.replace("_", " "), figures)
    line("baseline: Search from a plain client", result["baseline_search_round_trip"])
    print(f"app RSS after the searches {result['rss_mib']} MiB (peak {result['peak_rss_mib']} MiB)")
