#!/usr/bin/env bash
# flowbridge at a home's pace: readings published one at a time (bench/meterpub -r RATE), each
# reaching its consumers alone, as a home's meters send them, never as a backlog. The floor
# (mosquitto_sub, printing each reading) and flowbridge twice, with the default policy and with
# bench/bench.yaml's (every reading pushed), are subscribed to one private broker at once, so all
# three see the same readings at the same moments. For each pace (RATE:COUNT: COUNT readings at RATE
# a second), ROUNDS rounds; each prints one line per consumer (with its place in the order of the
# subscriptions, rotated from round to round), then the medians, the ratios to the floor and whether
# the targets are met.
#
# CPU is each consumer's time on a processor, summed over its threads (/proc/PID/task/*/schedstat,
# in nanoseconds: /proc/PID/stat's ticks are 10 ms, too coarse for a few milliseconds a second);
# wake-ups are its context switches, voluntary and not, summed over its threads
# (/proc/PID/task/*/status); both thread by thread, so that a thread that ends meanwhile (Dispatch's
# idle workers do, seconds after the start) does not take off its earlier time. Both are taken once
# every consumer is subscribed and again once each has printed the sentinel ({"power": 424242}, the
# last reading; 42424 in what it prints, since the default policy rounds it to 424240 W), and
# divided by the readings.
# usage: bench/paced.sh FLOWBRIDGE_BINARY [ROUNDS] [RATE:COUNT ...]   (default 3 rounds, 100:6000 10:1200)
#   environment: BENCH_BIN (a folder holding meterpub; made here when unset), BENCH_LIBS as in ingest.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
paces=("$@")
[ ${#paces[@]} -gt 0 ] || paces=(100:6000 10:1200)
work=$(mktemp -d /tmp/flowbridge-paced-XXXXXX)
pids=()
trap 'for pid in "${pids[@]}"; do kill $pid 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"' EXIT
if [ -z "${BENCH_BIN:-}" ]; then
  BENCH_BIN=$work
  gcc -O2 -D_POSIX_C_SOURCE=200809L -o "$BENCH_BIN/meterpub" "$here/meterpub.c" -lmosquitto -lm
fi
libraries=${BENCH_LIBS:+LD_LIBRARY_PATH=$BENCH_LIBS}
# shellcheck source=bench/common.sh
. "$here/common.sh"
# bench.yaml for PORT as flowbridge POLICY (pushed: bench.yaml's policy, every reading pushed;
# default: no policy line, the defaults), with a client id, a state file and a window port of its
# own (the window listens; nothing scrapes it here: bench/run.sh measures the scraped window).
config() {  # POLICY PORT DIR
  bench_config "$2" "$3/state-$1.json" "$(free_port)" "$1" | sed "s/client_id: flowbridge-bench/client_id: flowbridge-$1/" > "$3/config-$1.yaml"
  echo "$3/config-$1.yaml"
}
names=(floor flowbridge flowbridge+pushed)
# The floor subscribes to the topics flowbridge reads (bench_topic_options), so that the rotation
# below rotates all three.
floor_topics=$(bench_topic_options)
results=$work/results
one_round() {  # RATE COUNT ROUND
  local rate=$1 count=$2 round=$3 dir port i
  dir=$(mktemp -d "$work/round-XXXXXX")
  start_broker "$dir" "log_type all"
  pids+=("$broker_pid")
  port=$broker_port
  local commands=(
    "mosquitto_sub -p $port -q 1 $floor_topics"
    "$binary run --config $(config default "$port" "$dir") --dry-run --log-level warning"
    "$binary run --config $(config pushed "$port" "$dir") --dry-run --log-level warning"
  )
  # The broker sends each reading to its subscribers (of the same topics) in the order they
  # subscribed, and the one served first runs while the broker still writes to the others: the
  # order is rotated from round to round (each consumer first, second and third once in three
  # rounds), each consumer started once the one before it has subscribed.
  local consumers=() position=() k
  for k in "${!names[@]}"; do
    i=$(( (k + round) % ${#names[@]} ))
    position[$i]=$((k + 1))
    env $libraries bash -c "exec ${commands[$i]}" > "$dir/out-$i" 2> "$dir/err-$i" & consumers[$i]=$!; pids+=($!)
    wait_subscribed "$dir" $((k + 1))
  done
  sleep 0.5
  local seen=()
  for i in "${!names[@]}"; do threads_now "${consumers[$i]}" > "$dir/threads-$i"; done
  "$BENCH_BIN/meterpub" -r "$rate" "$port" "$count" bench/meter > /dev/null
  local published waiting
  published=$(date +%s.%N)
  # Each consumer's moment is when it is first seen to have printed the sentinel: all are watched at once.
  while :; do
    waiting=0
    for i in "${!names[@]}"; do
      [ -n "${seen[$i]:-}" ] && continue
      if grep -q 42424 "$dir/out-$i"; then seen[$i]=$(date +%s.%N); else waiting=$((waiting + 1)); fi
    done
    [ "$waiting" = 0 ] && break
    if [ "$(awk -v a="$published" -v b="$(date +%s.%N)" 'BEGIN { print (b - a > 100) }')" = 1 ]; then
      for i in "${!names[@]}"; do [ -n "${seen[$i]:-}" ] || { echo "${names[$i]}: no sentinel within 100 s" >&2; tail -3 "$dir/err-$i" >&2; }; done
      exit 1
    fi
    sleep 0.002
  done
  local added
  for i in "${!names[@]}"; do
    added=$(threads_since "$dir/threads-$i" "${consumers[$i]}")
    awk -v name="${names[$i]}" -v rate="$rate" -v n="$((count + 1))" -v cpu="${added% *}" \
      -v switches="${added#* }" -v a="$published" -v b="${seen[$i]}" -v position="${position[$i]}" -v of="${#names[@]}" 'BEGIN {
      printf "paced %s/s %s: %.2f us CPU/reading, %.2f wake-ups/reading, sentinel after %d ms, subscribed %d of %d\n", rate, name, cpu / n / 1000, switches / n, (b - a) * 1000, position, of
    }' | tee -a "$results"
  done
  for pid in "${consumers[@]}" "${pids[0]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
for pace in "${paces[@]}"; do
  for round in $(seq 0 $((rounds - 1))); do one_round "${pace%%:*}" "${pace##*:}" "$round"; done
done
python3 - "$results" "$rounds" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"paced (\S+)/s (\S+): ([\d.]+) us CPU/reading, ([\d.]+) wake-ups/reading, sentinel after (-?\d+) ms", line)
    if m:
        runs.setdefault((m[1], m[2]), []).append([float(m[i]) for i in range(3, 6)])
median = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in runs.items()}
print()
print(f"readings offered alone, medians of {sys.argv[2]} rounds (all three consumers on one broker at once;")
print("flowbridge: the default policy, and every reading pushed as bench/bench.yaml says; the sentinel: how long")
print("after the last publish each printed it, the default policy's settle and interval included):")
print(f"  {'pace':>7} {'consumer':18} {'CPU/reading':>12} {'wake-ups':>9} {'x floor CPU':>12} {'x floor wake-ups':>17} {'sentinel':>9}")
checks = []
for rate in dict.fromkeys(k[0] for k in median):
    floor = median[(rate, "floor")]
    for name in ("floor", "flowbridge", "flowbridge+pushed"):
        cpu, wakeups, sentinel = median[(rate, name)]
        print(f"  {rate:>5}/s {name:18} {cpu:9.2f} µs {wakeups:9.2f} {cpu / floor[0]:11.2f}x {wakeups / floor[1]:16.2f}x {sentinel:6.0f} ms")
    for name, limit, what in (("flowbridge", 1.25, "the default policy"), ("flowbridge+pushed", 1.5, "every reading pushed")):
        ratio = median[(rate, name)][0] / floor[0]
        checks.append((f"CPU per reading at {rate}/s with {what} <= {limit}x the floor: {ratio:.2f}x", ratio <= limit))
print()
for text, ok in checks:
    print(f"  {'met ' if ok else 'MISS'} {text}")
PY
