#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Home-made mechanisms against the library's own way, side by side in one
# run, in instructions counted by callgrind (independent of the load):
#   - building signals with libdbus's append iterators (a PropertiesChanged,
#     the InterfacesAdded of a realistic activity, and one with a 56 KiB
#     user-info), what the retired WireEncoder was measured against;
#   - awaiting replies: ReplyTable against libdbus's pending calls
#     (dbus_connection_send_with_reply), 100 calls in flight to the bus;
#   - a main-loop wake-up of a connection: a GLib fd source that may recurse,
#     what the libdbus bridge uses, and the same source blocked while it is
#     dispatched (GLib's default).
# Each figure is (instructions of ROUNDS rounds - instructions of 0 rounds) /
# ROUNDS, so start-up is not counted; "empty" rows are the same run's baseline
# (an argument-less signal; the socket write and read without a loop).
#
#   [BENCH=PATH] bench/callgrind-libcompare.sh [ROUNDS]   (default 300)
#
# BENCH defaults to a release build (cd Benchmarks && swift build -c release).
# Needs valgrind and dbus-run-session.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH:-$root/Benchmarks/.build/release/useractivity-bench}
count=${1:-300}
case $count in ''|*[!0-9]*) echo "usage: [BENCH=PATH] $0 [ROUNDS, a multiple of 100]" >&2; exit 2 ;; esac
[ -x "$bench" ] || { echo "no bench at $bench (cd Benchmarks && swift build -c release)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The reply rows talk to a bus of their own, never the session's.
on_bus=
instructions() {
    $on_bus valgrind --tool=callgrind --callgrind-out-file="$work/out" "$bench" "$@" >/dev/null 2>"$work/log" \
        || { cat "$work/log" >&2; exit 1; }
    awk '/^summary:/ { print $2 }' "$work/out"
}
per_round() {  # mode... : prints instructions per round
    local with without
    with=$(instructions "$@" "$count")
    without=$(instructions "$@" 0)
    echo $(( (with - without) / count ))
}

echo "instructions per round, $count rounds, callgrind"
for message in properties-changed interfaces-added large; do
    printf '%-20s iterators %9d   empty signal %7d\n' "$message" "$(per_round --encode iterators "$message")" \
        "$(per_round --encode empty "$message")"
done
printf '%-20s GLib fd source %9d   blocked while dispatched %9d   no loop %7d\n' "wake-up" \
    "$(per_round --poll glib)" "$(per_round --poll glib-blocked)" "$(per_round --poll empty)"
# callgrind does not see the kernel: the wake-up's system calls, by strace.
if command -v strace >/dev/null; then
    syscalls() {
        strace -f -c -o "$work/strace" "$bench" --poll "$1" "$2" >/dev/null
        awk '$NF == "total" { print $4 }' "$work/strace"
    }
    calls() { echo "scale=1; ($(syscalls "$1" "$count") - $(syscalls "$1" 0)) / $count" | bc; }
    printf '%-20s GLib fd source %9s   blocked while dispatched %9s   no loop %7s   (system calls)\n' "wake-up" \
        "$(calls glib)" "$(calls glib-blocked)" "$(calls empty)"
fi
mkdir -p "$work/runtime" && chmod 700 "$work/runtime"
on_bus="env -i PATH=$PATH HOME=$work XDG_RUNTIME_DIR=$work/runtime dbus-run-session --"
printf '%-20s ReplyTable %10d   pending calls %11d\n' "reply (100 in flight)" \
    "$(per_round --replies table)" "$(per_round --replies pending)"
