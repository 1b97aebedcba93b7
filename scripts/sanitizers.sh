#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Runs the core, store and dispatch tests (and the in-process hardening
# tests) under AddressSanitizer and ThreadSanitizer, each in its own scratch
# path (.build-asan, .build-tsan) so they never invalidate each other's or the
# normal build. With --sanitize, SwiftPM builds every product sanitized,
# useractivityd included: the tests that start the built daemon
# (USERACTIVITYD_PATH) then drive a sanitized daemon, whose reports land in
# the bus log and end it (abort_on_error), which those tests notice.
#
#   scripts/sanitizers.sh            # address, then thread
#   scripts/sanitizers.sh address    # one of them
#   SANITIZER_FILTER='DBusDispatchTests' scripts/sanitizers.sh thread
#
# Prints the build and test time of each; exits non-zero when one failed.
set -u
cd "$(dirname "$0")/.."
command -v swift >/dev/null 2>&1 || PATH=/opt/swift/usr/bin:$PATH

# Core, store, dispatch; plus the hardening suites that run the service in
# process (threads: its GLib loop and the test's clients) or drive the built,
# here sanitized, daemon with hostile input.
# Under ThreadSanitizer the daemon is several times slower and single-threaded
# anyway, so the tests that drive the built daemon run under AddressSanitizer only.
in_process='UserActivityCoreTests|ActivityStoreTests|DBusDispatchTests|HardeningTests.ParserPropertyTests|HardeningTests.AuthorizationMatrixTests|HardeningTests.ResourceLimitTests'
against_daemon='HardeningTests.RawBusTests|HardeningTests.DBusFuzzTests'
sanitizers=${*:-address thread}
status=0
summary=""

for sanitizer in $sanitizers; do
    case $sanitizer in
        address) scratch=.build-asan; filter=${SANITIZER_FILTER:-$in_process|$against_daemon} ;;
        thread) scratch=.build-tsan; filter=${SANITIZER_FILTER:-$in_process} ;;
        *) echo "unknown sanitizer: $sanitizer (address or thread)" >&2; exit 2 ;;
    esac
    log="$scratch-test.log"
    echo "=== $sanitizer: building in $scratch"
    start=$(date +%s)
    if ! swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >"$scratch-build.log" 2>&1; then
        tail -30 "$scratch-build.log"
        summary="$summary\n$sanitizer: BUILD FAILED after $(( $(date +%s) - start )) s (see $scratch-build.log)"
        status=1
        continue
    fi
    built=$(date +%s)
    echo "=== $sanitizer: testing ($filter)"
    # Swift's runtime keeps metadata caches for the life of the process:
    # LeakSanitizer reports them at exit, so leak checking is off.
    # The Swift backtracer would catch the fatal signal before the sanitizer's report.
    USERACTIVITYD_PATH="$PWD/$scratch/debug/useractivityd" \
    ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1" \
    TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1" \
    SWIFT_BACKTRACE="enable=no" \
    swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" --filter "$filter" >"$log" 2>&1
    result=$?
    done_at=$(date +%s)
    reports=$(grep -c -E "^(==[0-9]+==ERROR: AddressSanitizer|WARNING: ThreadSanitizer)" "$log")
    grep -E "^(✔|✘) Test run|Executed [0-9]+ tests" "$log" | tail -2
    [ "$reports" -gt 0 ] && grep -E -A12 "^(==[0-9]+==ERROR: AddressSanitizer|WARNING: ThreadSanitizer)" "$log" | head -60
    if [ $result -ne 0 ] || [ "$reports" -gt 0 ]; then status=1; verdict="FAILED ($reports sanitizer reports, exit $result)"; else verdict="clean"; fi
    summary="$summary\n$sanitizer: build $((built - start)) s, tests $((done_at - built)) s, $verdict (log: $log)"
done

printf "%b\n" "$summary"
exit $status
