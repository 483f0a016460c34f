#!/usr/bin/env bash
# Runs the shared ingest benchmark (../shared/bench/ingest.sh) for the C floor (mosquitto_sub), the
# paho-mqtt Python bridge and flowbridge, ROUNDS times each, interleaved, and prints each run and the
# medians with ratios. Figures: CPU time per message (the stable one on a shared machine), lag after
# the last publish, peak RSS.
# usage: bench/run.sh SHARED_BENCH_DIR BINARY [MESSAGES] [ROUNDS]
set -eu
shared=$(cd "$1" && pwd); binary=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
n=${3:-150000}; rounds=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
for round in $(seq "$rounds"); do
  (cd "$shared" && ./ingest.sh floor "$n" 'mosquitto_sub -p {PORT} -q 1 -t bench/meter/#') | tee -a "$out"
  (cd "$shared" && ./ingest.sh paho "$n" 'python3 baseline_paho.py {PORT}') | tee -a "$out"
  (cd "$shared" && ./ingest.sh flowbridge "$n" "$here/flowbridge-consumer.sh $binary {PORT}") | tee -a "$out"
done
echo
echo "medians of $rounds rounds, $n messages:"
python3 - "$out" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+): ([\d.]+) us CPU/msg, publish [\d.]+ s, lag after publish (-?\d+) ms, peak RSS (\d+) KB", line)
    if m:
        runs.setdefault(m[1], []).append((float(m[2]), float(m[3]), int(m[4])))
med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in runs.items()}
for name, (cpu, lag, rss) in med.items():
    print(f"  {name:11s} {cpu:6.2f} us CPU/msg  lag {lag:6.0f} ms  peak RSS {rss/1024:5.1f} MB")
if "flowbridge" in med:
    fb = med["flowbridge"]
    for other in ("floor", "paho"):
        if other in med:
            o = med[other]
            print(f"  flowbridge / {other}: CPU {fb[0]/o[0]:.2f}x, peak RSS {fb[2]/o[2]:.2f}x")
PY
rm -f "$out"
