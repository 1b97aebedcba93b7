#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is needed, builds, and runs useractivityd in the foreground.
# Without a session bus (a fresh server, a container) it starts a private one
# and prints the address to use from other terminals. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --product useractivityd
daemon="$PWD/.build/debug/useractivityd"

private_bus_pid=""
bus_dir=""
cleanup() {
  [ -n "${daemon_pid:-}" ] && kill "$daemon_pid" 2>/dev/null || true
  [ -n "$private_bus_pid" ] && kill "$private_bus_pid" 2>/dev/null || true
  [ -n "$bus_dir" ] && rm -rf "$bus_dir" || true
}
trap cleanup EXIT INT TERM

if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
  runtime="${XDG_RUNTIME_DIR:-/tmp}"
  bus_dir="$(mktemp -d "$runtime/useractivity-bus.XXXXXX")"
  read -r DBUS_SESSION_BUS_ADDRESS private_bus_pid < <(
    dbus-daemon --session --fork --print-address=1 --print-pid=1 --address="unix:dir=$bus_dir" | paste -sd' ')
  export DBUS_SESSION_BUS_ADDRESS
  echo "No session bus was running: started a private one. In another terminal:"
  echo "  export DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS'"
fi

# Let the example app in desktop/ declare its types for this run.
export XDG_DATA_DIRS="$PWD/desktop/share:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
echo "The example app's desktop entry is in desktop/share; for useractivityctl types to see it too:"
echo "  export XDG_DATA_DIRS='$XDG_DATA_DIRS'"
# And let the daemon launch the example app (.build/debug/UserActivityExample,
# once built) from its desktop entry to continue one of its activities.
PATH="$PWD/.build/debug:$PATH" "$daemon" --verbose &
daemon_pid=$!
for _ in $(seq 50); do
  busctl --user status org.example.UserActivity >/dev/null 2>&1 && break
  sleep 0.1
done
echo "First call:"
echo "  busctl --user get-property org.example.UserActivity /org/example/UserActivity org.example.UserActivity Version"
busctl --user get-property org.example.UserActivity /org/example/UserActivity org.example.UserActivity Version
wait "$daemon_pid"
