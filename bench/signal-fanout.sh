#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What unicast signals cost: CreateActivity (and its untimed Invalidate) with
# 0, 1 and 3 unconfined subscribers that called its Subscribe and follow
# all its signals (useractivity-bench --subscribers N). Each subscriber gets a
# unicast copy of InterfacesAdded and InterfacesRemoved per cycle.
# SCENARIO=BecomeCurrent times that call instead (three PropertiesChanged
# per call to each subscriber).
#
#   bench/signal-fanout.sh [DAEMON...]
#
# With several daemons (e.g. an older build that broadcast its signals), each
# is measured at each subscriber count, alternating, in the same run. Prints
# one line per run: daemon, subscribers, Ping and the call's p50/p99 (µs),
# the p50 ratio, and the CPU µs per call of useractivityd and dbus-daemon.
# ITERATIONS (default 3000) and CPU_SAMPLES (default 1000) tune the length.
# BENCH names a built useractivity-bench (bench/report.sh passes its own);
# without it the release bench is built in Benchmarks/. Without DAEMON
# arguments the release daemon of .build is measured (built if missing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null 2>&1 || PATH=/opt/swift/usr/bin:$PATH
bench="${BENCH:-}"
if [ -z "$bench" ]; then
  swift build -c release --package-path Benchmarks --product useractivity-bench >&2
  bench="$(swift build -c release --package-path Benchmarks --show-bin-path)/useractivity-bench"
fi
daemons=("$@")
if [ ${#daemons[@]} -eq 0 ]; then
  swift build -c release --product useractivityd >&2
  daemons=("$(swift build -c release --show-bin-path)/useractivityd")
fi
scenario="${SCENARIO:-CreateActivity}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-48s %4s %10s %10s %12s %12s %6s %12s %12s\n' daemon subs ping_p50 ping_p99 call_p50 call_p99 ratio daemon_cpu bus_cpu
for subscribers in 0 1 3; do
  for daemon in "${daemons[@]}"; do
    "$bench" --daemon "$daemon" --scenario "$scenario" --subscribers "$subscribers" \
      --iterations "${ITERATIONS:-3000}" --warmup 300 --cpu-samples "${CPU_SAMPLES:-1000}" --json \
      >"$out/run.json" 2>"$out/run.log" || { cat "$out/run.log" >&2; exit 1; }
    /usr/bin/python3 - "$daemon" "$subscribers" "$out/run.json" "$scenario" <<'PY'
import json, sys
daemon, subscribers, path, scenario = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
report = json.load(open(path))
by_name = {s["name"]: s for s in report["scenarios"]}
ping, create = by_name["Ping"], by_name[scenario]
print("%-48s %4s %10.1f %10.1f %12.1f %12.1f %6.2f %12.1f %12.1f" % (
    daemon[-48:], subscribers, ping["latency"]["p50_us"], ping["latency"]["p99_us"],
    create["latency"]["p50_us"], create["latency"]["p99_us"], create["p50_ratio"],
    create.get("daemon_cpu_us_per_call") or 0, create.get("bus_cpu_us_per_call") or 0))
PY
  done
done
