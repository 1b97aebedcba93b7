# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/test.sh and scripts/sanitizers.sh (POSIX sh): what a
# `swift test` run that has gone on far too long is doing, so that a hang
# names the test and where it waits instead of only running out of time.

# The tests of the run whose output begins at line $2 of the log $1 that
# started and have not ended, a line each.
unfinished_tests() {
    tail -n +"$2" "$1" | awk '
        /^◇ Test (case passing |run started)/ { next }
        /^◇ Test .* started\.$/ { name = $0; sub(/^◇ Test /, "", name); sub(/ started\.$/, "", name); open[name] = 1 }
        /^(✔|✘) Test .* (passed|failed) after / { name = $0; sub(/^(✔|✘) Test /, "", name); sub(/ (passed|failed) after .*$/, "", name); sub(/ with [0-9]+ test cases?$/, "", name); delete open[name] }
        END { for (name in open) print "  " name }' | sort
}

# Every process below $1, parents before their children.
descendants() {
    for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done
}

# hang_report LOG FIRST_LINE ROOT_PID TITLE: the title, the tests started and
# not ended, the processes below ROOT_PID and, with gdb, every thread's
# stack in each of them (the test process and the daemons it started).
# Each step goes on when one before it finds nothing (callers may run
# under `set -e -o pipefail`).
hang_report() {
    echo "$4"
    echo "tests started and not ended:"
    unfinished_tests "$1" "$2" || true
    ps -o pid,ppid,etime,args -p "$(descendants "$3" | paste -s -d, -)" 2>/dev/null | cut -c1-240 || true
    command -v gdb >/dev/null 2>&1 || return 0
    for pid in $(descendants "$3"); do
        [ -e "/proc/$pid" ] || continue
        echo "--- threads of $pid: $(cat "/proc/$pid/cmdline" 2>/dev/null | tr '\0' ' ' | cut -c1-200)"
        timeout 60 gdb -p "$pid" -batch -nx -ex 'thread apply all bt 20' 2>/dev/null | grep -E '^(Thread|#)' || true
    done
}

# watch_for_hang LOG FIRST_LINE SECONDS DONE_FILE TITLE, started in the
# background before a test run under `timeout`: unless DONE_FILE appears
# first, after SECONDS prints hang_report for that `timeout` (this shell's
# child) and the processes below it.
watch_for_hang() {
    waited=0
    while [ ! -e "$4" ] && [ "$waited" -lt "$3" ]; do
        sleep 2
        waited=$((waited + 2))
    done
    [ ! -e "$4" ] || return 0
    run=$(pgrep -P "$$" -x timeout | head -n 1 || true)
    [ -z "$run" ] || hang_report "$1" "$2" "$run" "$5"
}
