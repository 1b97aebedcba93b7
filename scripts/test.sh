#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test tier: core units (no bus), dispatch over a private bus, and
# end-to-end tests that start the built useractivityd by D-Bus activation.
# Never touches your own session bus: each test starts its own dbus-daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build
# The D-Bus introspection kept in dbus/ must be what the daemon serves.
diff -u dbus/org.example.UserActivity.xml <(.build/debug/useractivityd --print-introspection)
diff -u dbus/org.example.UserActivity.Handoff.xml <(.build/debug/useractivity-handoffd --print-introspection)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" swift test "$@" 2>&1 | tee "$log" || status=$?
# All tests are Swift Testing tests (XCTest's "Executed 0 tests" above is its
# empty half); end with one plain summary line a CI reader cannot mistake.
total=$(sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} in .*/\1/p' "$log" | tail -n 1)
# Count failed tests, not the run's own "✘ Test run with … failed" summary line.
failed=$(grep '^✘ Test .* failed after' "$log" | grep -vc '^✘ Test run with ' || true)
if [ -n "$total" ]; then
  echo "$((total - failed)) passed, $failed failed"
fi
exit "$status"
