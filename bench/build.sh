# SPDX-License-Identifier: Apache-2.0
# Sourced by the bench scripts that measure the daemon as users run it; run
# from the repository's root. Build output goes to stderr, so each function's
# stdout is only the path it prints.

# packaged_daemon TREE [SCRATCH_PATH]: builds TREE as the packages do
# (packaging/install.sh --build-only: release, static Swift runtime, lld,
# packed relocations; SCRATCH_PATH defaults to TREE/.build-pkg) and prints the
# path of its useractivityd.
packaged_daemon() {
    local tree="$1" scratch="${2:-.build-pkg}"
    "$tree/packaging/install.sh" --build-only SCRATCH_PATH="$scratch" >&2 &&
        (cd "$tree" && readlink -e "$scratch/release/useractivityd")
}

# release_bench: builds useractivity-bench (a plain release build of
# Benchmarks/) and prints the directory it is in.
release_bench() {
    swift build -c release --package-path Benchmarks --product useractivity-bench >&2 &&
        swift build -c release --package-path Benchmarks --show-bin-path
}
