#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""History search at N saved activities (default 100 000): keystroke to
results shown in useractivity-settings, and the app's resident size after
the searches. Under Xvfb with the accessibility bus and the real daemons
(Tests/SettingsUITests/desktop_session.py).

The store is filled with Donate calls (64 in flight) of titles "Note wNNNNNN".
Each sample types a unique word ("w" and six digits, key by key, XTest
through AT-SPI, --key-interval apart). The times come from the app's own trace
(USERACTIVITY_SETTINGS_TRACE, monotonic µs): the entry's text becoming the
word, the Search call leaving, its reply arriving, the list model updated,
and the next frame painted after it. The same run's baseline is the
service's Search round trip for the same words from a plain GDBus client.
With --baseline-app, a second build of the app types the same words in the
same run (each app half of them in turn, twice, the order swapped). The
resident-size floors are a GTK 4 window and a libadwaita preferences window
(bench/settings/minimal-*.c) started in the same session.

Usage: bench/settings/history-search.py [--entries 100000] [--samples 100] [--app PATH]
                                        [--baseline-app PATH] [--key-interval MS] [--json]"""
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
from floors import compile_floor  # noqa: E402
from desktop_session import BUILD, Session, accessible_application, child_path, node_at, wait_until  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--entries", type=int, default=100_000)
parser.add_argument("--samples", type=int, default=100)
parser.add_argument("--app", default=os.path.join(BUILD, "useractivity-settings"))
parser.add_argument("--baseline-app", help="a second build of the app, measured in the same run (interleaved)")
parser.add_argument("--key-interval", type=float, default=20,
                    help="milliseconds between the keys of a word (20: faster than anyone types; 100: a fast typist)")
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


work = tempfile.mkdtemp(prefix="settings-trace-")


def resident(pid):
    """(RSS, peak RSS) of process `pid` in MiB."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def measure(app_path, words, trace_path):
    """Starts the app at `app_path`, types each of `words` in its history
    search and returns (the trace's marks of each, RSS, peak RSS) before
    stopping it."""
    if os.path.exists(trace_path):
        os.unlink(trace_path)
    app = session.spawn([app_path], GSK_RENDERER="cairo", USERACTIVITY_SETTINGS_TRACE=trace_path)
    try:
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
            for character in word:
                press(ord(character))
                time.sleep(options.key_interval / 1000)

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
        samples = []
        for word in words:
            clear()
            _, position = settle("", position)
            type_word(word)
            marks, position = settle(word, position)
            samples.append(marks)
        return samples, *resident(app.pid)
    finally:
        app.terminate()
        app.wait(10)
        wait_until(lambda: accessible_application("useractivity-settings") is None, 10, 0.01)


def floor_rss(argv, name):
    """RSS of a floor window half a second after it is on the accessibility bus."""
    child = session.spawn(argv, GSK_RENDERER="cairo")
    try:
        if not wait_until(lambda: accessible_application(name), 30, 0.01):
            raise SystemExit(f"{name} not shown within 30 s")
        time.sleep(0.5)
        return resident(child.pid)[0]
    finally:
        child.terminate()
        child.wait(10)
        wait_until(lambda: accessible_application(name) is None, 10, 0.01)


try:
    minimal = compile_floor("minimal-window", "gtk4", work)
    preferences = compile_floor("minimal-preferences", "libadwaita-1", work)
    # Keep every entry (the default keeps 1000 per app).
    session.call("org.example.UserActivity", "/org/example/UserActivity", "org.freedesktop.DBus.Properties.Set",
                 "org.example.UserActivity", "MaxSavedPerApplication", "<uint32 0>")
    started = time.monotonic()
    fill(options.entries)
    fill_seconds = time.monotonic() - started
    trace_path = os.path.join(work, "trace")
    words = [f"w{index:06d}" for index in random.Random(7).sample(range(options.entries), options.samples)]
    subjects = {"app": options.app}
    if options.baseline_app:
        subjects["baseline_app"] = options.baseline_app
    samples = {key: [] for key in subjects}
    memory = {}
    # Two rounds over halves of the words; with a baseline app, each round
    # runs the apps in the other order, so neither always goes first.
    for half in range(2):
        order = list(subjects) if half == 0 else list(reversed(subjects))
        for key in order:
            marks, rss_mib, hwm_mib = measure(subjects[key], words[half::2], trace_path)
            samples[key] += marks
            memory[key] = (rss_mib, hwm_mib)
    floors = {"gtk4_window_rss_mib": round(floor_rss([minimal], "minimal-window"), 1),
              "adwaita_window_rss_mib": round(floor_rss([preferences], "minimal-preferences"), 1)}

    # Baseline, same run: the service's Search for the same words from a plain client.
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    round_trips = []
    for word in words:
        began = time.monotonic()
        bus.call_sync("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity", "Search",
                      GLib.Variant("(sa{sv})", (word, {"limit": GLib.Variant("u", 51)})), None,
                      Gio.DBusCallFlags.NONE, 20000, None)
        round_trips.append((time.monotonic() - began) * 1000)
finally:
    session.close()
    shutil.rmtree(work, ignore_errors=True)


def spread(values):
    return {"p50_ms": round(statistics.median(values), 1), "p99_ms": round(percentile(values, 0.99), 1),
            "max_ms": round(max(values), 1)}


def figures(marks):
    def between(first, last):
        return [(sample[last] - sample[first]) / 1000 for sample in marks]
    return {"keystroke_to_painted": spread(between("typed", "painted")),
            "split": {"typed_to_sent": spread(between("typed", "sent")),
                      "sent_to_reply": spread(between("sent", "reply")),
                      "reply_to_model": spread(between("reply", "model")),
                      "model_to_painted": spread(between("model", "painted"))}}


result = {"entries": options.entries, "fill_seconds": round(fill_seconds, 1), "samples": len(words),
          "key_interval_ms": options.key_interval}
for key in subjects:
    result[key] = {"path": subjects[key], **figures(samples[key]),
                   "rss_mib": round(memory[key][0], 1), "peak_rss_mib": round(memory[key][1], 1)}
result["baseline_search_round_trip"] = spread(round_trips)
result.update(floors)
if options.json:
    print(json.dumps(result))
else:
    print(f"{result['entries']} saved activities (filled in {result['fill_seconds']} s), {result['samples']} searches per app, "
          f"keys {options.key_interval:g} ms apart:")

    def line(name, figures):
        print(f"{name:<34} p50 {figures['p50_ms']:>7} ms  p99 {figures['p99_ms']:>7} ms  max {figures['max_ms']:>7} ms")
    for key in subjects:
        print(f"{key}: {subjects[key]}")
        line("keystroke to results painted", result[key]["keystroke_to_painted"])
        for name, split in result[key]["split"].items():
            line("  " + name.replace("_", " "), split)
        print(f"RSS after the searches {result[key]['rss_mib']} MiB (peak {result[key]['peak_rss_mib']} MiB)")
    line("baseline: Search from a plain client", result["baseline_search_round_trip"])
    print(f"floors: a GTK 4 window {result['gtk4_window_rss_mib']} MiB, "
          f"a libadwaita preferences window {result['adwaita_window_rss_mib']} MiB")
