#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Start to first page shown: useractivity-settings against a minimal GTK 4
window (bench/settings/minimal-window.c) and a one-row libadwaita preferences
window (minimal-preferences.c), cold process starts interleaved in the same run, under Xvfb with the accessibility bus and the real daemons
(Tests/SettingsUITests/desktop_session.py).

"Shown" is the moment the window's "Handoff" switch is exposed over AT-SPI:
the window is mapped and its rows are built. Both are found the same way:
the child indices from the app to the switch are learnt in a warm-up start,
then each measured start follows them every 2 ms.

Usage: bench/settings/startup.py [--runs 10] [--app PATH] [--json]"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "SettingsUITests"))
from floors import compile_floor  # noqa: E402
from desktop_session import BUILD, Session, accessible_application, child_path, node_at, wait_until  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--runs", type=int, default=10)
parser.add_argument("--app", default=os.path.join(BUILD, "useractivity-settings"))
parser.add_argument("--json", action="store_true")
options = parser.parse_args()

work = tempfile.mkdtemp(prefix="settings-bench-")

minimal = compile_floor("minimal-window", "gtk4", work)
preferences = compile_floor("minimal-preferences", "libadwaita-1", work)

session = Session("bench")
os.environ["DBUS_SESSION_BUS_ADDRESS"] = session.address
os.environ["DISPLAY"] = session.display


def is_handoff_switch(node):
    try:
        return node is not None and node.getRoleName() == "check box" and node.name == "Handoff"
    except Exception:
        return False


def learn_path(root):
    """Child indices from `root` to the check box named "Handoff"."""
    found = child_path(root, is_handoff_switch)
    if found is None:
        raise SystemExit("no Handoff switch found")
    return found[1]


def start(argv, name, path=None):
    """Milliseconds from spawning `argv` to its switch exposed; the learnt path when `path` is None."""
    started = time.monotonic()
    child = session.spawn(argv, GSK_RENDERER="cairo")
    try:
        if path is None:
            root = wait_until(lambda: accessible_application(name), 30, 0.01)
            time.sleep(2)
            return learn_path(root)
        shown = wait_until(lambda: (lambda root: root is not None and is_handoff_switch(node_at(root, path)))(accessible_application(name)), 30, 0.002)
        if not shown:
            raise SystemExit(f"{name} not shown within 30 s")
        elapsed = (time.monotonic() - started) * 1000
        # Resident size once the window has settled (the later pages built, the first frames drawn).
        time.sleep(0.5)
        with open(f"/proc/{child.pid}/status") as status:
            rss[name].append(int(dict(line.split(":", 1) for line in status)["VmRSS"].split()[0]) / 1024)
        return elapsed
    finally:
        child.terminate()
        child.wait(10)
        wait_until(lambda: accessible_application(name) is None, 10, 0.01)


rss = {}
try:
    subjects = {"settings": [options.app], "minimal": [minimal], "adwaita": [preferences]}
    names = {"settings": "useractivity-settings", "minimal": "minimal-window", "adwaita": "minimal-preferences"}
    paths = {key: start(argv, names[key]) for key, argv in subjects.items()}
    samples = {key: [] for key in subjects}
    rss.update({names[key]: [] for key in subjects})
    for _ in range(options.runs):
        for key, argv in subjects.items():
            samples[key].append(start(argv, names[key], paths[key]))
finally:
    session.close()

result = {key: {"p50_ms": round(statistics.median(values), 1), "min_ms": round(min(values), 1),
                "max_ms": round(max(values), 1), "runs": len(values),
                "rss_mib": round(statistics.median(rss[names[key]][-len(values):]), 1)} for key, values in samples.items()}
result["ratio_p50"] = round(result["settings"]["p50_ms"] / result["minimal"]["p50_ms"], 2)
result["ratio_p50_adwaita"] = round(result["settings"]["p50_ms"] / result["adwaita"]["p50_ms"], 2)
if options.json:
    print(json.dumps(result))
else:
    for key in subjects:
        print(f"{key:9} p50 {result[key]['p50_ms']:7.1f} ms  min {result[key]['min_ms']:7.1f}  max {result[key]['max_ms']:7.1f}  ({result[key]['runs']} cold starts), RSS {result[key]['rss_mib']} MiB")
    print(f"settings / minimal GTK 4 window at p50: {result['ratio_p50']}; "
          f"settings / one-row libadwaita preferences window: {result['ratio_p50_adwaita']}")
