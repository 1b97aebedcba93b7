#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Idle resident size of the daemon as packaged: builds it the way the packages
# do (packaging/install.sh --build-only: release, static Swift runtime, lld,
# packed relocations), starts it by D-Bus activation on a private bus with
# temporary XDG directories (the system's desktop entries still in
# XDG_DATA_DIRS, as in a real session), answers one Ping, waits, then reads
# /proc/PID/status and smaps_rollup. Prints the figures and the verdict
# against the target (idle RSS <= 15 MB, taken as 15,000,000 bytes, the
# stricter reading).
#
#   bench/idle-rss.sh            # build, then measure
#   bench/idle-rss.sh --no-build # measure what the last build left in .build-pkg
#   bench/idle-rss.sh --json     # one JSON object instead of the table
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null 2>&1 || PATH=/opt/swift/usr/bin:$PATH
build=1 json=0 settle=${IDLE_SETTLE_SECONDS:-3}
for argument in "$@"; do
  case $argument in
    --no-build) build=0 ;;
    --json) json=1 ;;
    *) echo "usage: $0 [--no-build] [--json]" >&2; exit 2 ;;
  esac
done
if [ $build = 1 ]; then
  packaging/install.sh --build-only >&2
fi
daemon="$(readlink -f .build-pkg/release/useractivityd 2>/dev/null || true)"
[ -n "$daemon" ] && [ -x "$daemon" ] || { echo "$daemon is missing: run without --no-build" >&2; exit 1; }

work=$(mktemp -d)
bus_pid=
cleanup() {
  [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work"/{state,config,data,runtime,services}
chmod 700 "$work/runtime"
printf '[D-BUS Service]\nName=org.example.UserActivity\nExec=%s\n' "$daemon" >"$work/services/org.example.UserActivity.service"
cat >"$work/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=$work/runtime</listen>
  <servicedir>$work/services</servicedir>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
CONF
export XDG_STATE_HOME="$work/state" XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" \
       XDG_RUNTIME_DIR="$work/runtime" XDG_DATA_DIRS="${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
exec 3>"$work/address" 4>"$work/pid"
dbus-daemon --config-file="$work/bus.conf" --fork --print-address=3 --print-pid=4 2>"$work/bus.log"
exec 3>&- 4>&-
export DBUS_SESSION_BUS_ADDRESS=$(head -n1 "$work/address")
bus_pid=$(cat "$work/pid")

gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity \
  --method org.freedesktop.DBus.Peer.Ping >/dev/null
pid=$(gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
  --method org.freedesktop.DBus.GetConnectionUnixProcessID org.example.UserActivity | sed 's/[^0-9]*uint32 \([0-9]*\).*/\1/')
sleep "$settle"
# A command to look closer (e.g. a per-library breakdown of /proc/PID/smaps), given the PID.
[ -n "${IDLE_INSPECT:-}" ] && $IDLE_INSPECT "$pid"

field() { awk -v k="$1:" '$1 == k { print $2 }' "$2"; }
rss=$(field VmRSS /proc/$pid/status)
anon=$(field RssAnon /proc/$pid/status)
file=$(field RssFile /proc/$pid/status)
pss=$(field Pss /proc/$pid/smaps_rollup)
own=$(awk -v exe="$daemon" '/^[0-9a-f]/ { mine = ($6 == exe) } /^Rss:/ && mine { s += $2 } END { print s + 0 }' /proc/$pid/smaps)
binary_size=$(stat -c %s "$daemon")
target_kb=$((15000000 / 1024))
verdict=$([ "$rss" -le "$target_kb" ] && echo PASS || echo MISS)
load=$(cut -d' ' -f1-3 /proc/loadavg)

if [ $json = 1 ]; then
  printf '{"rss_kib":%s,"rss_anon_kib":%s,"rss_file_kib":%s,"pss_kib":%s,"binary_resident_kib":%s,"binary_bytes":%s,"target_kib":%s,"verdict":"%s","load":"%s"}\n' \
    "$rss" "$anon" "$file" "$pss" "$own" "$binary_size" "$target_kb" "$verdict" "$load"
else
  mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB (%.1f MB)", k / 1024, k * 1024 / 1e6 }'; }
  echo "useractivityd idle, as packaged ($daemon, $((binary_size / 1048576)) MiB on disk), ${settle}s after its first call; load $load"
  echo "  RSS                 $(mib "$rss")   target <= 15 MB: $verdict"
  echo "    anonymous         $(mib "$anon")"
  echo "    file-backed       $(mib "$file")   (of which the daemon's own binary: $(mib "$own"); the rest is libc, GLib/GIO, SQLite, libdbus, libstdc++ shared with other processes)"
  echo "  PSS                 $(mib "$pss")   (shared pages divided among the processes mapping them)"
fi
