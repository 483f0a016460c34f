#!/usr/bin/env bash
# flowbridge's ingest benchmark: flowbridge beside the C floor (mosquitto_sub), mqtt2prometheus (Go)
# and a paho-mqtt Python bridge, and flowbridge again with a widget API sink pushing to the widget
# stand-in (Tests/WidgetStandIn) over HTTP on loopback. ROUNDS interleaved rounds of N messages
# each (bench/ingest.sh), then IDLE_SECONDS of silence for every consumer at once (CPU while idle,
# connected). Prints each run, a table of medians, flowbridge's ratios against the floor and
# mqtt2prometheus, and whether each target is met.
# usage: bench/run.sh FLOWBRIDGE_BINARY [N] [ROUNDS] [IDLE_SECONDS] [STAND_IN_BINARY]
#   (STAND_IN_BINARY defaults to .build/debug/WidgetStandIn: `swift build --product WidgetStandIn`)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
n=${2:-150000} rounds=${3:-3} idle=${4:-60}
standin=${5:-$here/../.build/debug/WidgetStandIn}
[ -x "$standin" ] || { echo "no widget stand-in at $standin (swift build --product WidgetStandIn)" >&2; exit 1; }
standin=$(cd "$(dirname "$standin")" && pwd)/$(basename "$standin")
export BENCH_BIN=$(mktemp -d /tmp/flowbridge-bench-bin-XXXXXX)
export BENCH_TOKEN=bench-token
standin_pid=
trap '[ -n "$standin_pid" ] && kill $standin_pid 2>/dev/null; rm -rf "$BENCH_BIN"' EXIT
gcc -O2 -D_POSIX_C_SOURCE=200809L -o "$BENCH_BIN/meterpub" "$here/meterpub.c" -lmosquitto -lm
# paho-mqtt in a throwaway virtual environment: nothing is installed into the system's Python.
python3 -m venv "$BENCH_BIN/venv"
"$BENCH_BIN/venv/bin/pip" install --quiet --disable-pip-version-check 'paho-mqtt>=2,<3'
# The widget API: the stand-in on a free loopback port, for the whole benchmark.
"$standin" --token "$BENCH_TOKEN" --path /widgets/bench > "$BENCH_BIN/stand-in.log" 2>&1 & standin_pid=$!
until grep -q '^listening on' "$BENCH_BIN/stand-in.log"; do sleep 0.05; done
url="http://$(sed -n 's/^listening on //p' "$BENCH_BIN/stand-in.log")/widgets/bench"

names=(floor mqtt2prometheus paho flowbridge flowbridge+push)
commands=(
  "mosquitto_sub -p {PORT} -q 1 -t bench/meter/#"
  "$here/m2p.sh {PORT} {PORT2}"
  "$BENCH_BIN/venv/bin/python $here/paho_bridge.py {PORT}"
  "$here/flowbridge-consumer.sh $binary {PORT}"
  "$here/flowbridge-consumer.sh $binary {PORT} $url"
)
probes=("" "curl -s 127.0.0.1:{PORT2}/metrics | grep -q 424242" "" "" "")
results=$BENCH_BIN/results
for round in $(seq "$rounds"); do
  for i in "${!names[@]}"; do
    PROBE=${probes[$i]} "$here/ingest.sh" "${names[$i]}" "$n" "${commands[$i]}" | tee -a "$results"
  done
done
echo "idle: $idle s of silence, all consumers at once"
idlers=()
for i in "${!names[@]}"; do
  IDLE=$idle PROBE=${probes[$i]} "$here/ingest.sh" "${names[$i]}" 300 "${commands[$i]}" > "$BENCH_BIN/idle-$i" & idlers+=($!)
done
wait "${idlers[@]}"  # not the stand-in
cat "$BENCH_BIN"/idle-* | tee -a "$results" | sed 's/^/  /'
echo
python3 - "$results" "$n" "$rounds" "$idle" <<'PY'
import re, statistics, sys
runs, idle = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+): ([\d.]+) us CPU/msg, publish [\d.]+ s, lag after publish (-?\d+) ms, peak RSS (\d+) KB, idle CPU (\S+) s", line)
    if not m:
        continue
    if m[5] != "-":
        idle[m[1]] = float(m[5])
    else:
        runs.setdefault(m[1], []).append((float(m[2]), float(m[3]), int(m[4])))
median = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in runs.items()}
print(f"medians of {sys.argv[3]} interleaved rounds of {sys.argv[2]} messages (CPU time per message is the stable figure):")
print(f"  {'consumer':16} {'CPU/msg':>9} {'lag':>9} {'peak RSS':>9} {'idle CPU':>9}")
for name, (cpu, lag, rss) in median.items():
    print(f"  {name:16} {cpu:7.2f}µs {lag:6.0f} ms {rss / 1024:6.1f} MB {idle.get(name, float('nan')):7.2f} s")
print()
for mine in ("flowbridge", "flowbridge+push"):
    for other in ("floor", "mqtt2prometheus"):
        if mine in median and other in median:
            a, b = median[mine], median[other]
            print(f"  {mine:15} / {other:15} CPU {a[0] / b[0]:.2f}x   peak RSS {a[2] / b[2]:.2f}x")
fb, push, floor, m2p = (median.get(k) for k in ("flowbridge", "flowbridge+push", "floor", "mqtt2prometheus"))
checks = [
    ("CPU per message <= 1.5x the floor", fb and floor and fb[0] <= 1.5 * floor[0]),
    ("lag after the last publish <= 20 ms", fb and fb[1] <= 20),
    ("peak RSS with the widget API sink <= mqtt2prometheus", push and m2p and push[2] <= m2p[2]),
    (f"CPU while idle for {sys.argv[4]} s < 0.05 s", idle.get("flowbridge", 1) < 0.05 and idle.get("flowbridge+push", 1) < 0.05),
]
print()
for text, ok in checks:
    print(f"  {'met ' if ok else 'MISS'} {text}")
PY
