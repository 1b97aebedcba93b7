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
USERACTIVITYD_PATH="$PWD/.build/debug/useractivityd" swift test "$@"
