#!/usr/bin/env bash
# Peak RSS of flowbridge without and with a widget API sink: the shared ingest benchmark (same
# broker, same messages) run ROUNDS times each way, interleaved, the push going to the widget
# stand-in (Tests/WidgetStandIn) on loopback. Prints each run and the medians.
# usage: bench/push-memory.sh SHARED_BENCH_DIR BINARY STAND_IN [MESSAGES] [ROUNDS]
set -eu
shared=$(cd "$1" && pwd); binary=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
standin=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
n=${4:-150000}; rounds=${5:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp); log=$(mktemp)
export BENCH_TOKEN=bench-token
"$standin" --token "$BENCH_TOKEN" --path /widgets/bench > "$log" 2>&1 & standin_pid=$!
trap 'kill $standin_pid 2>/dev/null; rm -f "$out" "$log"' EXIT
until grep -q '^listening on' "$log"; do sleep 0.05; done
url="http://$(sed -n 's/^listening on //p' "$log")/widgets/bench"
for round in $(seq "$rounds"); do
  (cd "$shared" && ./ingest.sh stdout-only "$n" "$here/flowbridge-consumer.sh $binary {PORT}") | tee -a "$out"
  (cd "$shared" && ./ingest.sh with-push "$n" "$here/flowbridge-consumer.sh $binary {PORT} $url") | tee -a "$out"
done
echo
echo "medians of $rounds rounds, $n messages:"
for name in stdout-only with-push; do
  sed -n "s/^$name: .*peak RSS \([0-9]*\) KB.*/\1/p" "$out" | sort -n | awk -v name="$name" \
    '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "  %-12s peak RSS %.1f MB\n", name, m/1024}'
done
