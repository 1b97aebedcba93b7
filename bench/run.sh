#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the release daemon and the benchmark (a package of its own in
# Benchmarks/), then measures the daemon against a Peer.Ping baseline taken in
# the same run, on a private bus. Extra arguments go to the bench (e.g.
# --iterations 5000, --scenario CreateActivity, --json). BENCH_SCRATCH_PATH
# picks another SwiftPM scratch directory for the daemon (default .build), so a
# benchmark need not wait for another build's lock on .build; the bench builds
# in Benchmarks/.build.
set -euo pipefail

# Run from the package root whatever the caller's directory, so the relative
# paths below hold.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scratch="${BENCH_SCRATCH_PATH:-.build}"

# Release only: debug Swift is several times slower and would measure the
# compiler's checks rather than the daemon. Two commands: `swift build` keeps
# only the last of several --product options.
swift build -c release --scratch-path "$scratch" --product useractivityd
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"
swift build -c release --package-path Benchmarks --product useractivity-bench
bench_bin="$(swift build -c release --package-path Benchmarks --show-bin-path)"

exec "$bench_bin/useractivity-bench" --daemon "$bin/useractivityd" "$@"
