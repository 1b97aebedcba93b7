#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test tier: core units (no bus), dispatch over a private bus, and
# end-to-end tests that start the built useractivityd by D-Bus activation.
# Never touches your own session bus: each test starts its own dbus-daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/hang-report.sh
scripts/install-deps.sh
# A dbus-daemon that offers ProcessFD (Debian 12's does not), for the
# PID-reuse tests and a second run of the identity suites on it; about 15 s
# the first time, a no-op after. Where it cannot be built the tests that need
# it are skipped, unless USERACTIVITY_REQUIRE_PIDFD_BUS=1 (CI) makes that fatal.
if ! scripts/build-pidfd-bus.sh; then
  if [ "${USERACTIVITY_REQUIRE_PIDFD_BUS:-}" = 1 ]; then
    echo "scripts/build-pidfd-bus.sh failed and USERACTIVITY_REQUIRE_PIDFD_BUS=1" >&2
    exit 1
  fi
  echo "warning: no dbus-daemon offering ProcessFD; the tests that need it will be skipped" >&2
fi
swift build
# The D-Bus introspection kept in dbus/ must be what the daemon serves.
diff -u dbus/org.example.UserActivity.xml <(.build/debug/useractivityd --print-introspection)
diff -u dbus/org.example.UserActivity.Handoff.xml <(.build/debug/useractivity-handoffd --print-introspection)
log="$(mktemp)"
library_log="$(mktemp)"
pidfd_log="$(mktemp)"
trap 'rm -f "$log" "$library_log" "$pidfd_log" "${settings_log:-}" "${browser_log:-}" "${browser_handoff_log:-}" "${fuzz_log:-}"' EXIT
status=0
# The browser extension's logic (browser/), without a browser: a second or so.
if [ $# -eq 0 ]; then
  echo "=== the browser extension's tests (node --test browser/tests/)"
  node --test browser/tests/ || status=$?
fi
if [ $# -gt 0 ]; then
  USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" swift test "$@" 2>&1 | tee "$log" || status=$?
else
  # With USERACTIVITY_TEST_TIMEOUT (seconds; CI sets it) a hang names itself:
  # a minute before the limit the tests still running and every thread's
  # stack are printed (scripts/hang-report.sh), then the run is stopped.
  # Without it the run is as long as it takes, and Ctrl-C reaches it.
  limit=${USERACTIVITY_TEST_TIMEOUT:-}
  limiter=()
  finished="$(mktemp -u)"
  if [ -n "$limit" ]; then
    limiter=(timeout -k 30 "$limit")
    watch_for_hang "$log" 1 $((limit - 60)) "$finished" "=== the tests are still running after $((limit - 60)) s" >&2 &
  fi
  USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" \
    "${limiter[@]}" swift test --skip '^UserActivityTests\.' 2>&1 | tee "$log" || status=$?
  touch "$finished"
  wait
  rm -f "$finished"
  [ "$status" -ne 124 ] || [ -z "$limit" ] || echo "=== the tests did not finish within $limit s (USERACTIVITY_TEST_TIMEOUT)" >&2
  # The client library's tests in a process of their own (a few seconds): the
  # library runs an app's handlers on Swift's cooperative threads, one per
  # core, and the blocking tests of the other targets would hold those for
  # seconds while a continuation waits for its answer.
  echo "=== the client library's tests (UserActivityTests)"
  USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" swift test --skip-build --filter '^UserActivityTests\.' 2>&1 |
    tee "$library_log" || status=$?
fi
# The extension and the native host in real headless browsers (chromium,
# firefox-esr) against the built daemon on a private bus: about 15 s. Only in
# a full run, never under the sanitizers (the browsers are not instrumented).
browser_log="$(mktemp)"
browser_handoff_log="$(mktemp)"
if [ $# -eq 0 ]; then
  echo "=== real browsers (Tests/RealBrowser)"
  USERACTIVITY_BUILD_DIR="$PWD/.build/debug" python3 -W ignore::ResourceWarning Tests/RealBrowser/test_real_browsers.py -v 2>&1 |
    tee "$browser_log" || status=$?
  # A Chromium and a Firefox page on one desktop, continued on another (two Handoff stacks).
  USERACTIVITY_REAL_BROWSER=1 USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" \
    swift test --skip-build --filter 'HandoffTests\.BrowserHandoffTests' 2>&1 | tee "$browser_handoff_log" | tail -n 3 || status=$?
fi
# The handoff fuzzer (HandoffTests.HandoffFuzzTests): 45 s of structure-aware
# mutations of the corpus in Tests/HandoffTests/FuzzCorpus on a paired link
# through a running useractivity-handoffd, the same inputs every run (seed 1);
# about 50 s with its set-up. Reproducers of a crash or a hang and a summary
# go to USERACTIVITY_ARTIFACTS. Only in a full run, not under the sanitizers.
fuzz_log="$(mktemp)"
if [ $# -eq 0 ]; then
  echo "=== the handoff fuzzer (HandoffFuzzTests, 45 s)"
  HANDOFF_FUZZ=1 HANDOFF_FUZZ_SECONDS=45 HANDOFF_FUZZ_SEED=1 \
    HANDOFF_FUZZ_ARTIFACTS="${USERACTIVITY_ARTIFACTS:-$PWD/.build/artifacts}/handoff-fuzz" USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" \
    swift test --skip-build --filter 'HandoffTests\.HandoffFuzzTests.aPairedLink' 2>&1 | tee "$fuzz_log" || status=$?
fi
# The suites about who is calling once more, on the bus that offers ProcessFD
# (about 20 s): the daemon identifies callers by pidfd there. Only in a full run.
pidfd_bus="$PWD/.build-pidfd-bus/bin/dbus-daemon"
if [ $# -eq 0 ] && [ -x "$pidfd_bus" ]; then
  echo "=== identity suites on dbus-daemon $("$pidfd_bus" --version | sed -n '1s/.* //p') (ProcessFD)"
  USERACTIVITY_TEST_DBUS_DAEMON="$pidfd_bus" USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" \
    swift test --skip-build --filter 'DBusDispatchTests|SandboxTests|HardeningTests\.AuthorizationMatrix' 2>&1 |
    tee "$pidfd_log" || status=$?
fi
# The settings app as a person uses it: under Xvfb, driven through AT-SPI,
# against private buses with the built daemons (about 70 s). Screenshots of
# its pages go to USERACTIVITY_ARTIFACTS (CI keeps them). What it ships is
# checked too: the AppStream metainfo, the desktop entry, the .pot.
settings_log="$(mktemp)"
if [ $# -eq 0 ]; then
  echo "=== the settings app through AT-SPI (Tests/SettingsUITests)"
  artifacts="${USERACTIVITY_ARTIFACTS:-$PWD/.build/artifacts}"
  appstreamcli validate --no-net desktop/share/metainfo/org.example.UserActivity.Settings.metainfo.xml || status=$?
  desktop-file-validate desktop/share/applications/org.example.UserActivity.Settings.desktop || status=$?
  po/update-pot.sh "$artifacts/useractivity-settings.pot" || status=$?
  timeout -k 10 300 /usr/bin/python3 Tests/SettingsUITests/settings_ui_test.py --screenshots "$artifacts/settings-screenshots" 2>&1 |
    tee "$settings_log" || status=$?
fi
# All tests are Swift Testing tests (XCTest's "Executed 0 tests" above is its
# empty half); end with one plain summary line a CI reader cannot mistake.
total=0
failed=0
for run in "$log" "$library_log" "$pidfd_log" "$browser_handoff_log" "$fuzz_log"; do
  count=$(sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} in .*/\1/p' "$run" | tail -n 1)
  [ -n "$count" ] || continue
  total=$((total + count))
  # Count failed tests, not the run's own "✘ Test run with … failed" summary line.
  failed=$((failed + $(grep '^✘ Test .* failed after' "$run" | grep -vc '^✘ Test run with ' || true)))
done
# The real-browser tests are Python's unittest: "Ran N tests", then "OK" or "FAILED (failures=F, errors=E)".
if browser_count=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$browser_log" | tail -n 1) && [ -n "$browser_count" ]; then
  total=$((total + browser_count))
  browser_failed=$(sed -n 's/^FAILED (\(.*\))$/\1/p' "$browser_log" | tr ',' '\n' | awk -F= '{ n += $2 } END { print n + 0 }')
  failed=$((failed + ${browser_failed:-0}))
fi
# The settings tier prints its own "N passed, M failed".
if settings_counts=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$settings_log" | tail -n 1) && [ -n "$settings_counts" ]; then
  total=$((total + ${settings_counts% *} + ${settings_counts#* }))
  failed=$((failed + ${settings_counts#* }))
fi
if [ -s "$log" ] && grep -q 'Test run with' "$log"; then
  echo "$((total - failed)) passed, $failed failed"
fi
exit "$status"
