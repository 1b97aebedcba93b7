#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The TLS handshake between paired devices, until the link is up, with two
# builds of useractivity-handoffd in one run, rounds alternating between the
# builds: handoffd B turned off and on 30 times, each time dialing A (its
# log's "up after": from the dial to A's hello); then a paired device (a
# Python client holding B's key and secrets; pyOpenSSL for the TLS
# exporter) connecting to A 40 times. Both builds must log "up after" (the
# baseline: 70da64b with that one log line of PeerLinks/receivedHello added).
#
# Usage: bench/paired-handshake.sh BASELINE_HANDOFFD NEW_HANDOFFD [ROUNDS]
#   BASELINE_HANDOFFD  a release build from before the privacy scheme
#                      (pinned keys in the handshake), e.g. of 70da64b
#   NEW_HANDOFFD       a release build of this tree
# USERACTIVITYD_PATH picks the useractivityd both stacks use (default: the
# one the test harness finds). Needs python3-openssl.
set -euo pipefail
baseline="$(readlink -f "$1")"
new="$(readlink -f "$2")"
rounds="${3:-3}"
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
swift build --build-tests >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for round in $(seq 1 "$rounds"); do
    for build in baseline new; do
        binary="$baseline"; [ "$build" = new ] && binary="$new"
        echo "round $round: $build ($binary)" >&2
        HANDOFF_MEASURE=1 USERACTIVITY_HANDOFFD_PATH="$binary" \
            swift test --skip-build --filter PairedHandshakeMeasurementTests 2>&1 \
            | grep '^MEASURE paired handshake' | sed "s/^/$build /" >>"$log" || true
    done
done
/usr/bin/python3 - "$log" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) MEASURE paired handshake (\w+): n=(\d+) p50=([\d.]+) ms p90=([\d.]+) ms p99=([\d.]+) ms", line)
    if m:
        rows.setdefault((m.group(1), m.group(2)), []).append((float(m.group(4)), float(m.group(6))))
for (build, scheme), values in sorted(rows.items()):
    print("  %-8s %-6s p50 per round: %s ms; p99: %s ms" % (build, scheme, ", ".join("%.3f" % v[0] for v in values), ", ".join("%.3f" % v[1] for v in values)))
def ratio(what, old, new):
    """The median of the rounds' p50, this tree's over the baseline's; False when either is missing."""
    if not old or not new:
        print("  %s: not measured" % what)
        return False
    a = statistics.median(v[0] for v in old)
    b = statistics.median(v[0] for v in new)
    print("  %s, new scheme ÷ before: %.2f× (p50 %.3f vs %.3f ms), goal ≤ 1.5×: %s" % (what, b / a, b, a, "PASS" if b <= 1.5 * a else "MISS"))
    return True
measured = ratio("daemon to daemon, B dialing A until A's hello", rows.get(("baseline", "daemon")), rows.get(("new", "daemon")))
measured &= ratio("a paired client until A's hello (throwaway certificate + proof against pinned keys)",
                  rows.get(("baseline", "pinned")), rows.get(("new", "proof")))
sys.exit(0 if measured else 1)
PY
