#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Builds the libFuzzer harnesses (Fuzz/Package.swift, -sanitize=fuzzer,address)
# and runs each for N seconds, starting from the seed corpus in Fuzz/Corpus.
#
#   Fuzz/run.sh                      # every harness, 60 s each
#   Fuzz/run.sh 300 fuzz-user-info   # one harness, 5 minutes
#   FUZZ_MERGE=1 Fuzz/run.sh 600     # then fold new coverage back into Fuzz/Corpus
#
# New inputs go to Fuzz/work/<harness> (not the repository's corpus);
# crashes and property violations to Fuzz/artifacts/<harness>-crash-…, which
# a harness replays when given the file: .build/release/<harness> <file>.
# Exit status: non-zero when any harness found something.
set -eu
cd "$(dirname "$0")"

seconds=${1:-60}
[ $# -gt 0 ] && shift
harnesses=${*:-"fuzz-desktop-entries fuzz-cgroup fuzz-process-tree fuzz-user-info fuzz-codec-decode fuzz-browser-message"}
# Handoff's frame decoder, once Sources/HandoffCore is in the tree.
[ $# -gt 0 ] || [ ! -f Sources/HandoffCore/Frame.swift ] || harnesses="$harnesses fuzz-handoff-frame"
sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}

command -v swift >/dev/null 2>&1 || PATH=/opt/swift/usr/bin:$PATH
swift build -c release --scratch-path .build -Xswiftc "-sanitize=$sanitizers"

mkdir -p work artifacts
status=0
for harness in $harnesses; do
    mkdir -p "work/$harness" "Corpus/$harness"
    echo "=== $harness: $seconds s"
    # The Swift runtime's own backtracer would take the crash signal before
    # libFuzzer could save the input; leaks of Swift's metadata caches are
    # not findings.
    if ! SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
        ".build/release/$harness" "work/$harness" "Corpus/$harness" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -detect_leaks=0 \
        -artifact_prefix="artifacts/$harness-" -print_final_stats=1 2>"work/$harness.log"; then
        status=1
        echo "!!! $harness found a problem; see Fuzz/work/$harness.log and Fuzz/artifacts/"
    fi
    grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|property violated|ERROR|==ERROR" "work/$harness.log" || true
    if [ "${FUZZ_MERGE:-0}" = 1 ]; then
        SWIFT_BACKTRACE=enable=no ".build/release/$harness" -merge=1 "Corpus/$harness" "work/$harness" 2>/dev/null || true
    fi
done
exit $status
