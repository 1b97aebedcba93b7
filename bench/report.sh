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
#
# Usage: bench/report.sh [--quick] [--json] [other useractivity-bench options]
#   --quick   fewer rounds, store size 10k only (under a minute after the build)
#   --json    one JSON object on stdout instead of the text
# The bench is a package of its own (Benchmarks/, built in Benchmarks/.build);
# BENCH_SCRATCH_PATH picks where the peers are compiled (default .build).
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
packaging/install.sh --build-only >&2
daemon="$(readlink -f .build-pkg/release/useractivityd)"
swift build -c release --package-path Benchmarks --product useractivity-bench >&2
bin="$(swift build -c release --package-path Benchmarks --show-bin-path)"

# The peers, with the same optimisation level and warnings as any C service.
peers="$scratch/bench-peers"
mkdir -p "$peers"
cflags=(-Wall -Wextra -O2)
# shellcheck disable=SC2046 # pkg-config output is meant to split into words
cc "${cflags[@]}" -o "$peers/libdbus-peer" bench/peers/libdbus-peer.c $(pkg-config --cflags --libs dbus-1)
# shellcheck disable=SC2046
cc "${cflags[@]}" -o "$peers/gdbus-peer" bench/peers/gdbus-peer.c $(pkg-config --cflags --libs gio-2.0)

if ! command -v zeitgeist-daemon >/dev/null; then
    echo "bench/report.sh: zeitgeist-daemon is not installed; the Zeitgeist comparison will be skipped." >&2
    echo "                 To include it: apt-get install zeitgeist-core" >&2
fi

exec "$bin/useractivity-bench" --report --daemon "$daemon" \
    --libdbus-peer "$peers/libdbus-peer" --gdbus-peer "$peers/gdbus-peer" "$@"
