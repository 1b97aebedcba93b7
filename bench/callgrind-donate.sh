#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Instructions the daemon executes per Donate and per Ping (the same run's
# baseline), counted by callgrind, so the figures do not depend on the load.
#
#   bench/callgrind-donate.sh [--large] [--calls N] [--daemon PATH]
#
# --large adds 400 entries (~56 KiB) to the record's user-info. The daemon
# defaults to a release build (swift build -c release --product useractivityd).
# Needs valgrind, dbus-run-session and python3-gi. Prints the totals and the
# profile file of the Donates, for callgrind_annotate --inclusive=yes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
daemon=$root/.build/release/useractivityd calls=200 large=
while [ $# -gt 0 ]; do
    case $1 in
        --large) large=1 ;;
        --calls) calls=$2; shift ;;
        --daemon) daemon=$2; shift ;;
        *) echo "usage: $0 [--large] [--calls N] [--daemon PATH]" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$daemon" ] || { echo "no daemon at $daemon (swift build -c release --product useractivityd)" >&2; exit 1; }
work=$(mktemp -d)
mkdir -p "$work"/data/applications "$work"/state "$work"/config "$work"/runtime
chmod 700 "$work"/runtime
printf '[Desktop Entry]\nType=Application\nName=Editor\nExec=/bin/true\nX-UserActivityTypes=com.example.Editor.edit-document;\n' \
    >"$work"/data/applications/com.example.Editor.desktop

cat >"$work"/client.py <<'PY'
import subprocess, sys
from gi.repository import Gio, GLib
calls, daemon_pid, large = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
bus = Gio.bus_get_sync(Gio.BusType.SESSION)
def call(interface, member, parameters):
    bus.call_sync("org.example.UserActivity", "/org/example/UserActivity", interface, member, parameters,
                  None, Gio.DBusCallFlags.NONE, 60000)
def donate(n):
    info = {"document-uri": GLib.Variant("s", "file:///home/user/Documents/quarterly-budget-review-%s.odt" % n),
            "page": GLib.Variant("u", 3), "selection": GLib.Variant("(ii)", (1204, 1348)),
            "zoom": GLib.Variant("d", 1.25)}
    if large:
        info.update({"field-%03d" % k: GLib.Variant("s", ("value %03d " % k) * 11) for k in range(400)})
    record = {"app-id": GLib.Variant("s", "com.example.Editor"),
              "title": GLib.Variant("s", "Quarterly budget review notes for the finance team"),
              "content-description": GLib.Variant("s", "Draft with regional figures"),
              "keywords": GLib.Variant("as", ["budget", "finance", "quarterly"]),
              "webpage-url": GLib.Variant("s", "https://docs.example.com/d/quarterly-budget-review-%s" % n),
              "persistent-identifier": GLib.Variant("s", "donate-cpu-%s-7f3c2a9e" % n),
              "eligible-for-search": GLib.Variant("b", True),
              "user-info": GLib.Variant("a{sv}", info)}
    call("org.example.UserActivity", "Donate", GLib.Variant("(sa{sv})", ("com.example.Editor.edit-document", record)))
def ping():
    call("org.freedesktop.DBus.Peer", "Ping", None)
def callgrind(*arguments):
    subprocess.run(["callgrind_control", *arguments, daemon_pid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
for n in range(20):
    donate("warm-%d" % n)
    ping()
callgrind("-z")
for n in range(calls):
    donate(n)
callgrind("-d", "donate")
callgrind("-z")
for _ in range(calls):
    ping()
callgrind("-d", "ping")
PY

cat >"$work"/session.sh <<'SH'
set -eu
valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.%p" "$DAEMON" >"$WORK/daemon.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
    gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity \
        --method org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1 && break
    sleep 0.5
done
/usr/bin/python3 "$WORK/client.py" "$CALLS" "$pid" "$LARGE"
kill "$pid"; wait "$pid" || true
SH

env -i PATH="$PATH" HOME="$work" WORK="$work" DAEMON="$daemon" CALLS="$calls" LARGE="${large:-0}" \
    XDG_DATA_HOME="$work/data" XDG_DATA_DIRS="$work/data" XDG_STATE_HOME="$work/state" \
    XDG_CONFIG_HOME="$work/config" XDG_RUNTIME_DIR="$work/runtime" \
    dbus-run-session -- sh "$work/session.sh"

per_call() { awk -v n="$calls" '/^summary:/ { printf "%.0f", $2 / n }' "$1"; }
donates=$(grep -l '^desc: Trigger: dump donate' "$work"/callgrind.*)
pings=$(grep -l '^desc: Trigger: dump ping' "$work"/callgrind.*)
echo "instructions per Donate${large:+ (large user-info)}: $(per_call "$donates")"
echo "instructions per Ping (same run): $(per_call "$pings")"
echo "profile of the Donates: $donates"
