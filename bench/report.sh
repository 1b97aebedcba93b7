#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmark report, in one run on one private bus:
#   1. useractivityd's CreateActivity against a minimal C libdbus service and a
#      GDBus service (bench/peers/*.c, compiled here), Ping to each as the
#      baseline, round trips interleaved, then pipelined throughput; the C
#      service again with --object-manager-signals (the signals the contract
#      requires of us) as context, with no target of its own;
#   2. durable Donate and Search against Zeitgeist (zeitgeist-core) at 10k and
#      100k entries of the same generated corpus;
#   3. RSS of every process and the stores' size on disk.
# Ratios to the targets first, absolute figures second, machine noise last.
# Then, each on a fresh private bus with its baseline from the same run:
#   4. resilience (useractivity-bench --resilience): the daemon's RSS quiet,
#      after one app's flood of the largest activities (until LimitExceeded)
#      and after its connections closed; another client's Get(Version) quiet
#      and during a 60 MiB CreateActivity; the daemon's CPU per durable Donate;
#   5. signal fan-out (bench/signal-fanout.sh): CreateActivity with 0, 1 and 3
#      subscribers;
#   6. Handoff: the opt-in measurement suite of Tests/HandoffTests
#      (HANDOFF_MEASURE=1 swift test --filter MeasurementTests) against the
#      packaged release daemons, the figures against their targets. The test
#      harness is a debug build (the suite runs under swift test); the two
#      daemons measured are the release ones. REPORT_HANDOFF=0 skips it.
#
# Usage: bench/report.sh [--quick] [--json] [other useractivity-bench options]
#   --quick   fewer rounds, store size 10k only (under a minute after the build)
#   --json    one JSON object on stdout instead of the text
# The bench is a package of its own (Benchmarks/, built in Benchmarks/.build);
# BENCH_SCRATCH_PATH picks where the peers are compiled (default .build).
#
# To judge a change against the commit before it, measured alternately in one
# run: bench/against.sh.
#
# It installs nothing: without zeitgeist-daemon it says how to get it
# (apt-get install zeitgeist-core) and reports the rest.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
scratch="${BENCH_SCRATCH_PATH:-.build}"
command -v swift >/dev/null 2>&1 || PATH=/opt/swift/usr/bin:$PATH

for tool in cc pkg-config dbus-daemon; do
    command -v "$tool" >/dev/null || { echo "bench/report.sh: '$tool' is needed" >&2; exit 1; }
done
for module in dbus-1 gio-2.0; do
    pkg-config --exists "$module" || {
        echo "bench/report.sh: pkg-config cannot find $module (apt-get install libdbus-1-dev libglib2.0-dev)" >&2
        exit 1
    }
done

# The daemon as the packages ship it (packaging/install.sh --build-only: release,
# static Swift runtime, lld, packed relocations, in .build-pkg), so latency and
# RSS are those of what users run; the bench itself is a plain release build.
echo "building the packaged daemon (packaging/install.sh --build-only) and the release bench (Benchmarks/)…" >&2
# shellcheck source=bench/build.sh
. bench/build.sh
daemon="$(packaged_daemon .)"
bin="$(release_bench)"

# The peers, with the same optimisation level and warnings as any C service.
peers="$scratch/bench-peers"
mkdir -p "$peers"
cflags=(-Wall -Wextra -O2)
# shellcheck disable=SC2046 # pkg-config output is meant to split into words
cc "${cflags[@]}" -o "$peers/libdbus-peer" bench/peers/libdbus-peer.c $(pkg-config --cflags --libs dbus-1 glib-2.0)
# shellcheck disable=SC2046
cc "${cflags[@]}" -o "$peers/gdbus-peer" bench/peers/gdbus-peer.c $(pkg-config --cflags --libs gio-2.0)

if ! command -v zeitgeist-daemon >/dev/null; then
    echo "bench/report.sh: zeitgeist-daemon is not installed; the Zeitgeist comparison will be skipped." >&2
    echo "                 To include it: apt-get install zeitgeist-core" >&2
fi

quick=0 json=0
for argument in "$@"; do
    case "$argument" in
        --quick) quick=1 ;;
        --json) json=1 ;;
    esac
done

"$bin/useractivity-bench" --report --daemon "$daemon" \
    --libdbus-peer "$peers/libdbus-peer" --gdbus-peer "$peers/gdbus-peer" "$@"

# The sections below are text; with --json they go to stderr so stdout stays
# one JSON object.
[ "$json" = 0 ] || exec 1>&2
quick_flag=()
[ "$quick" = 0 ] || quick_flag=(--quick)

echo
echo "== Resilience (useractivity-bench --resilience${quick_flag[*]:+ --quick}) =="
"$bin/useractivity-bench" --resilience --daemon "$daemon" "${quick_flag[@]}"

echo
echo "== Signal fan-out (bench/signal-fanout.sh; CPU µs per call from schedstat) =="
if [ "$quick" = 1 ]; then fanout_iterations=1000 fanout_cpu=500; else fanout_iterations=3000 fanout_cpu=1000; fi
BENCH="$bin/useractivity-bench" ITERATIONS="$fanout_iterations" CPU_SAMPLES="$fanout_cpu" bench/signal-fanout.sh "$daemon"

if [ "${REPORT_HANDOFF:-1}" = 0 ]; then
    echo
    echo "== Handoff: skipped (REPORT_HANDOFF=0) =="
    exit 0
fi
handoffd="$(readlink -f .build-pkg/release/useractivity-handoffd)"
echo
echo "== Handoff (Tests/HandoffTests MeasurementTests; release daemons, debug test harness) =="
echo "building the tests (swift build --build-tests, debug)…" >&2
swift build --build-tests >&2
measure_log="$(mktemp)"
trap 'rm -f "$measure_log"' EXIT
if ! HANDOFF_MEASURE=1 USERACTIVITYD_PATH="$daemon" USERACTIVITY_HANDOFFD_PATH="$handoffd" \
        swift test --skip-build --filter MeasurementTests >"$measure_log" 2>&1; then
    grep -v '^MEASURE' "$measure_log" | tail -40 >&2
    echo "bench/report.sh: the Handoff measurement suite failed (log above)" >&2
fi
/usr/bin/python3 - "$measure_log" <<'PY'
import re, sys
figures, rss = {}, {}
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"MEASURE (.+): n=(\d+) p50=([\d.]+) ms p90=([\d.]+) ms p99=([\d.]+) ms", line)
    if m:
        figures[m.group(1)] = tuple([int(m.group(2))] + [float(m.group(i)) for i in (3, 4, 5)])
    m = re.search(r"MEASURE rss (\S+): VmRSS=(\d+) kB RssAnon=(\d+) kB RssFile=(\d+) kB", line)
    if m:
        rss[m.group(1)] = tuple(int(m.group(i)) for i in (2, 3, 4))
def find(prefix):
    return next((v for k, v in figures.items() if k.startswith(prefix)), None)
ping, advert = find("local Peer.Ping"), find("advert")
local, remote = find("ContinueActivity on the local"), find("Device.ContinueActivity")
handshake = find("TCP + mutual TLS")
for name, (n, p50, p90, p99) in figures.items():
    print("  %-86s n=%-3d p50 %7.3f ms  p90 %7.3f ms  p99 %7.3f ms" % (name, n, p50, p90, p99))
for name, (vm, anon, file) in rss.items():
    print("  %-22s idle VmRSS %6.1f MiB (%5.1f MB): anonymous %5.1f MiB, file-backed %5.1f MiB" % (name, vm / 1024, vm * 1024 / 1e6, anon / 1024, file / 1024))
def verdict(ok):
    return "PASS" if ok else "MISS"
print()
if ping and advert:
    print("  advert p50 ÷ local Ping p50: %.1f× (%.3f vs %.3f ms), target ≤ 3×: %s" % (advert[1] / ping[1], advert[1], ping[1], verdict(advert[1] <= 3 * ping[1])))
    print("  advert p99 ÷ local Ping p99: %.1f× (%.3f vs %.3f ms), no target" % (advert[3] / ping[3], advert[3], ping[3]))
else:
    print("  advert against Ping: not measured")
if local and remote:
    print("  remote continue p50 − local p50: %+.3f ms (%.3f vs %.3f ms), target ≤ +2 ms: %s" % (remote[1] - local[1], remote[1], local[1], verdict(remote[1] <= local[1] + 2)))
    print("  remote continue p99 − local p99: %+.3f ms (%.3f vs %.3f ms), no target" % (remote[3] - local[3], remote[3], local[3]))
else:
    print("  remote against local continue: not measured")
if handshake:
    print("  TLS connect (TCP + handshake + first frame) p50: %.3f ms (p99 %.3f ms), target ≤ 3 ms: %s" % (handshake[1], handshake[3], verdict(handshake[1] <= 3)))
else:
    print("  TLS handshake: not measured")
handoffd = rss.get("useractivity-handoffd")
if handoffd:
    reference = rss.get("useractivityd")
    against = " (useractivityd %.1f MiB: %.2f×)" % (reference[0] / 1024, handoffd[0] / reference[0]) if reference else ""
    print("  useractivity-handoffd idle RSS: %.1f MiB (%.1f MB)%s, target ≤ 12 MB: %s" % (handoffd[0] / 1024, handoffd[0] * 1024 / 1e6, against, verdict(handoffd[0] * 1024 <= 12e6)))
else:
    print("  useractivity-handoffd idle RSS: not measured")
PY
