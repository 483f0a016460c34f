#!/usr/bin/env bash
# Peak RSS of flowbridge without and with a widget API sink: the ingest benchmark (same broker,
# same messages) run ROUNDS times each way, interleaved; the pushes go to the widget stand-in
# (Tests/WidgetStandIn) on loopback. Prints each run and the medians.
# usage: bench/push-memory.sh BINARY STAND_IN [MESSAGES] [ROUNDS]
set -eu
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
standin=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
n=${3:-150000}; rounds=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
harness=$here
work=$(mktemp -d /tmp/flowbridge-push-memory-XXXXXX)
export BENCH_BIN=$work BENCH_TOKEN=bench-token
gcc -O2 -D_POSIX_C_SOURCE=200809L -o "$work/meterpub" "$harness/meterpub.c" -lmosquitto -lm
"$standin" --token "$BENCH_TOKEN" --path /widgets/bench > "$work/stand-in.log" 2>&1 & standin_pid=$!
trap 'kill $standin_pid 2>/dev/null; rm -rf "$work"' EXIT
until grep -q '^listening on' "$work/stand-in.log"; do sleep 0.05; done
url="http://$(sed -n 's/^listening on //p' "$work/stand-in.log")/widgets/bench"
for round in $(seq "$rounds"); do
  (cd "$harness" && ./ingest.sh stdout-only "$n" "$here/flowbridge-consumer.sh $binary {PORT}") | tee -a "$work/runs"
  (cd "$harness" && ./ingest.sh with-push "$n" "$here/push-consumer.sh $binary {PORT} $url") | tee -a "$work/runs"
done
echo
echo "medians of $rounds rounds, $n messages:"
for name in stdout-only with-push; do
  sed -n "s/^$name: .*peak RSS \([0-9]*\) KB.*/\1/p" "$work/runs" | sort -n | awk -v name="$name" \
    '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "  %-12s peak RSS %.1f MB\n", name, m/1024}'
done
