#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# This tree's daemon against an earlier revision's, measured in one run, so a
# change is judged against the same machine at the same time rather than
# against figures from another day.
#
#   bench/against.sh [--rounds N] [--threshold PERCENT] [--json] [REV]
#
#   REV           the revision to compare with (default HEAD^, the first parent)
#   --rounds N    rounds per daemon (default 3, at least 3)
#   --threshold   how much worse a figure's median must be to count (default 10)
#   --json        one JSON object on stdout instead of the table
#
# Both daemons are built as the packages build them (packaging/install.sh
# --build-only): REV's in a temporary `git worktree add --detach` with its
# build in a scratch directory outside the repository (both removed at the
# end, also on failure or interrupt), this tree's in .build-pkg as
# bench/report.sh does. The release bench is built once, from this tree's
# Benchmarks/, and measures both. Each round runs, for one daemon and then the
# other (the first alternating between rounds, so load drift hits both):
#   - the default scenarios against their Ping baseline, with the CPU pass
#     (useractivity-bench --iterations 10000 --warmup 1000 --cpu-samples 2000);
#   - resilience (--resilience --quick): RSS quiet, flooded and after,
#     Get(Version) during a 60 MiB call, daemon CPU per durable Donate;
#   - the store at 10k entries (--store --store-sizes 10000).
#
# Verdict per figure, from the rounds' medians and ranges: "regression" when
# the current median is worse than the previous one by more than the
# threshold AND every current round is worse than every previous round (the
# ranges do not overlap); "better" likewise the other way; else "same". With
# 3 rounds each, two equal daemons give non-overlapping ranges in one given
# direction 1 time in 20, and the threshold keeps those small shifts "same".
#
# A report, not a test: it exits 0 whatever the verdicts, non-zero only when
# something failed to build or run. Two release builds take a while; nothing
# in CI runs it. ITERATIONS, WARMUP and CPU_SAMPLES override the scenario
# counts.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd)"
command -v swift >/dev/null 2>&1 || PATH=/opt/swift/usr/bin:$PATH

rounds=3 threshold=10 json=0 rev=HEAD^
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --threshold) threshold="$2"; shift ;;
        --json) json=1 ;;
        -h|--help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        -*) echo "bench/against.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) rev="$1" ;;
    esac
    shift
done
[ "$rounds" -ge 3 ] 2>/dev/null || { echo "bench/against.sh: --rounds must be 3 or more" >&2; exit 2; }
commit="$(git rev-parse --verify --quiet "$rev^{commit}")" || { echo "bench/against.sh: unknown revision $rev" >&2; exit 2; }
for tool in dbus-daemon python3; do
    command -v "$tool" >/dev/null || { echo "bench/against.sh: '$tool' is needed" >&2; exit 1; }
done

scratch="$(mktemp -d "${TMPDIR:-/tmp}/useractivity-against.XXXXXX")"
tree="$scratch/tree"
cleanup() {
    if [ -d "$tree" ]; then git -C "$repo" worktree remove --force "$tree" >/dev/null 2>&1 || true; fi
    git -C "$repo" worktree prune >/dev/null 2>&1 || true
    rm -rf "$scratch"
    # SwiftPM leaves its locks for that scratch path, named after it, in the temporary directory.
    rm -f "${TMPDIR:-/tmp}/$(echo "$scratch" | tr / _)_build"*.lock
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

load() { cut -d' ' -f1-3 /proc/loadavg; }
load_start="$(load)"
started="$(date -u '+%Y-%m-%d %H:%M UTC')"

echo "building $rev ($(git rev-parse --short "$commit")) as packaged, in $scratch…" >&2
git worktree add --detach "$tree" "$commit" >&2
# shellcheck source=bench/build.sh
. bench/build.sh
previous="$(packaged_daemon "$tree" "$scratch/build")"

echo "building this tree's daemon as packaged (.build-pkg) and the release bench…" >&2
current="$(packaged_daemon .)"
bench="$(release_bench)/useractivity-bench"

results="$scratch/results"
mkdir -p "$results"
# run NAME FILE ARGS...: one bench run, its output kept for the table.
run() {
    local name="$1" file="$2"
    shift 2
    if ! "$bench" "$@" >"$results/$file" 2>"$results/$file.log"; then
        tail -30 "$results/$file.log" >&2
        echo "bench/against.sh: useractivity-bench $* failed (log above)" >&2
        exit 1
    fi
    echo "  $name done" >&2
}
for round in $(seq 1 "$rounds"); do
    if [ $((round % 2)) = 1 ]; then order=(previous current); else order=(current previous); fi
    for side in "${order[@]}"; do
        daemon="${!side}"
        echo "round $round/$rounds, $side daemon (load $(load))…" >&2
        run "scenarios" "$side-$round-scenarios.json" --daemon "$daemon" --json \
            --iterations "${ITERATIONS:-10000}" --warmup "${WARMUP:-1000}" --cpu-samples "${CPU_SAMPLES:-2000}"
        run "resilience" "$side-$round-resilience.txt" --daemon "$daemon" --resilience --quick
        run "store" "$side-$round-store.txt" --daemon "$daemon" --store --store-sizes 10000
    done
done

python3 - "$results" "$rounds" "$threshold" "$json" \
    "$rev ($(git rev-parse --short "$commit"))" "working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Package.swift || echo ', modified'))" \
    "$started" "$load_start" "$(load)" <<'PY'
import json, re, statistics, sys

results, rounds, threshold, as_json = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
previous_name, current_name, started, load_start, load_end = sys.argv[5:10]
LOWER, HIGHER = "lower", "higher"   # which way is better


def scenarios(text):
    report = json.loads(text)
    for s in report["scenarios"]:
        name, lat = s["name"], s["latency"]
        yield f"{name} p50 µs", lat["p50_us"], LOWER
        yield f"{name} p99 µs", lat["p99_us"], LOWER
        if name != report["baseline"]:
            yield f"{name} p50 ÷ Ping p50", s["p50_ratio"], LOWER
        if s.get("daemon_cpu_us_per_call") is not None:
            yield f"{name} daemon CPU µs/call", s["daemon_cpu_us_per_call"], LOWER
    if report["daemon"].get("rss_kib_after_run"):
        yield "RSS after the scenarios MiB", report["daemon"]["rss_kib_after_run"] / 1024, LOWER


# --resilience and --store print text only; these patterns follow their lines.
def resilience(text):
    floods = re.findall(r"VmRSS quiet ([\d.]+) MiB \| share full ([\d.]+) MiB .*? after the connections closed ([\d.]+) MiB", text)
    for kind, (quiet, full, after) in zip(("s blobs", "ay blobs"), floods):
        yield f"flood ({kind}): RSS quiet MiB", float(quiet), LOWER
        yield f"flood ({kind}): RSS share full MiB", float(full), LOWER
        yield f"flood ({kind}): RSS after MiB", float(after), LOWER
    m = re.search(r"quiet: p50 ([\d.]+) µs, p99 ([\d.]+) µs .*during: p50 ([\d.]+) µs .*?, p99 ([\d.]+) µs", text)
    if m:
        for label, value in zip(("quiet p50", "quiet p99", "during 60 MiB p50", "during 60 MiB p99"), m.groups()):
            yield f"Get(Version) {label} µs", float(value), LOWER
    m = re.search(r"refused with .* after p50 ([\d.]+) ms", text)
    if m:
        yield "60 MiB call refused after ms", float(m.group(1)), LOWER
    m = re.search(r"utime\+stime: ([\d.]+) µs per Donate .*schedstat: ([\d.]+) µs; per Ping .*\) ([\d.]+) µs", text)
    if m:
        yield "daemon CPU µs per Donate (stat)", float(m.group(1)), LOWER
        yield "daemon CPU µs per Donate (schedstat)", float(m.group(2)), LOWER
        yield "daemon CPU µs per Ping (stat)", float(m.group(3)), LOWER
    m = re.search(r"Donate round trip p50 ([\d.]+) µs, Ping p50 ([\d.]+) µs", text)
    if m:
        yield "Donate p50 µs", float(m.group(1)), LOWER
        yield "Donate p50 ÷ Ping p50", float(m.group(1)) / float(m.group(2)), LOWER


def store(text):
    for line in text.splitlines():
        parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        if len(parts) != 2:
            continue
        label, figures = parts
        if m := re.match(r"([\d.]+) calls/s", figures):
            yield f"store: {label} calls/s", float(m.group(1)), HIGHER
        elif m := re.match(r"p50\s+([\d.]+) µs\s+p99\s+([\d.]+) µs", figures):
            yield f"store: {label} p50 µs", float(m.group(1)), LOWER
            yield f"store: {label} p99 µs", float(m.group(2)), LOWER
        elif m := re.match(r"([\d.]+) MiB", figures):
            yield f"store: {label} MiB", float(m.group(1)), LOWER


parsers = (("scenarios.json", scenarios), ("resilience.txt", resilience), ("store.txt", store))
figures = {}   # name -> {"better": ..., "previous": [...], "current": [...]}
for side in ("previous", "current"):
    for r in range(1, rounds + 1):
        for suffix, parse in parsers:
            with open(f"{results}/{side}-{r}-{suffix}") as f:
                for name, value, better in parse(f.read()):
                    entry = figures.setdefault(name, {"better": better, "previous": [], "current": []})
                    entry[side].append(value)

rows = []
for name, entry in figures.items():
    prev, cur = entry["previous"], entry["current"]
    if len(prev) != rounds or len(cur) != rounds:
        rows.append({"figure": name, "verdict": "not measured in every round"})
        continue
    if not any(prev + cur):
        continue   # e.g. the daemon's CPU for BusPing, which the bus answers
    p, c = statistics.median(prev), statistics.median(cur)
    ratio = c / p if p else float("nan")
    # Oriented so that a larger "worse" is worse whichever way the figure goes.
    worse = ratio if entry["better"] == LOWER else (1 / ratio if ratio else float("inf"))
    cur_all_worse = min(cur) > max(prev) if entry["better"] == LOWER else max(cur) < min(prev)
    cur_all_better = max(cur) < min(prev) if entry["better"] == LOWER else min(cur) > max(prev)
    if worse > 1 + threshold / 100 and cur_all_worse:
        verdict = "regression"
    elif worse < 1 / (1 + threshold / 100) and cur_all_better:
        verdict = "better"
    else:
        verdict = "same"
    rows.append({"figure": name, "better": entry["better"], "previous": prev, "current": cur,
                 "previous_median": p, "current_median": c, "ratio": ratio, "verdict": verdict})

header = {"previous": previous_name, "current": current_name, "started": started, "rounds": rounds,
          "threshold_percent": threshold, "load_average_start": load_start, "load_average_end": load_end}
if as_json:
    print(json.dumps({**header, "figures": rows}, indent=2))
    sys.exit(0)
print(f"useractivityd, previous = {previous_name}, current = {current_name}")
print(f"{started}; {rounds} rounds each, alternating; load average {load_start} at start, {load_end} at end")
print(f"regression/better: median worse/better by > {threshold:g}% and the rounds' ranges do not overlap\n")
def number(value):
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}" if abs(value) < 1000 else f"{value:.0f}"


width = max(len(r["figure"]) for r in rows)
print(f"{'figure':<{width}}  {'previous':>10}  {'current':>10}  {'cur/prev':>8}  {'range prev':>19}  {'range current':>19}  verdict")
for r in rows:
    if "ratio" not in r:
        print(f"{r['figure']:<{width}}  {r['verdict']}")
        continue
    span = lambda v: f"{number(min(v))}–{number(max(v))}"
    print(f"{r['figure']:<{width}}  {number(r['previous_median']):>10}  {number(r['current_median']):>10}  {r['ratio']:>7.2f}×"
          f"  {span(r['previous']):>19}  {span(r['current']):>19}  {r['verdict']}")
regressions = [r["figure"] for r in rows if r["verdict"] == "regression"]
print(f"\n{len(regressions)} regression(s){': ' + ', '.join(regressions) if regressions else ''}")
PY
