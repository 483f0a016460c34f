#!/usr/bin/env bash
# The readings' lag and the pushes while hostile clients hammer the window. One flowbridge (a real
# run of bench/bench.yaml: every reading pushed, printed on standard output) on a private broker,
# its window on a free port: on every address with a token when this machine has one beyond
# loopback (so that a wrong credential can be tried from there), else on loopback. meterpub
# publishes one reading at a time, RATE a second, each value distinct, and stamps each publish on
# CLOCK_MONOTONIC (-s); bench/push-lag.py reads flowbridge's standard output through a pipe and
# stamps each push line on the same clock as it comes, then finds each reading again in its push.
#
# ROUNDS rounds of two phases of SECONDS each, quiet then hostile: during a hostile phase every
# client of bench/hostile-clients.py runs at once (1,000 idle connections, a byte a second, 100 MB
# requests, `..` paths and odd methods, wrong credentials, and a well-behaved scraper). Per phase:
# readings published, pushes seen, the lag's median, p95 and max, the daemon's CPU over the phase
# (/proc/PID/stat: every thread, the ended ones too), its VmRSS, PSS and USS (private pages) at the
# phase's end (the hostile clients still connected); then the kinds pooled, whether the targets are met, how each client was
# answered, and what the hostile phase added to the daemon's memory by mapping (bench/smaps.py).
# usage: bench/hostile.sh FLOWBRIDGE_BINARY [ROUNDS] [SECONDS] [RATE]   (default 2 rounds, 30 s, 10/s)
#   environment: BENCH_BIN (a folder holding meterpub; made here when unset), BENCH_LIBS as in ingest.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
rounds=${2:-2} seconds=${3:-30} rate=${4:-10}
# shellcheck source=bench/common.sh
. "$here/common.sh"
work=$(mktemp -d /tmp/flowbridge-hostile-XXXXXX)
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop_all EXIT
if [ -z "${BENCH_BIN:-}" ]; then
  BENCH_BIN=$work
  gcc -O2 -D_POSIX_C_SOURCE=200809L -o "$BENCH_BIN/meterpub" "$here/meterpub.c" -lmosquitto -lm
fi
start_broker "$work" "log_type all"
pids+=("$broker_pid")

# The window: beyond loopback a credential is asked, so the wrong ones have an address to come from.
window=$(free_port)
address=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -m1 -E '^[0-9]+(\.[0-9]+){3}$' || true)
if [ -n "$address" ]; then
  head -c 24 /dev/urandom | base64 > "$work/window-token"
  listen="http: {listen: \"0.0.0.0:$window\", token_file: $work/window-token}"
else
  listen="http: {listen: \"127.0.0.1:$window\"}"
fi
bench_config "$broker_port" "$work/state.json" "$window" | sed "s|^http: .*|$listen|" > "$work/config.yaml"
echo "output: {stdout: true}" >> "$work/config.yaml"

mkfifo "$work/stdout"
python3 "$here/push-lag.py" stamp "$work/pushes" < "$work/stdout" & pids+=($!)
env ${BENCH_LIBS:+LD_LIBRARY_PATH=$BENCH_LIBS} "$binary" run --config "$work/config.yaml" --log-level warning \
  > "$work/stdout" 2> "$work/daemon.err" &
daemon=$!
pids+=("$daemon")
wait_subscribed "$work" 1
until curl -sf -o /dev/null "http://127.0.0.1:$window/metrics"; do
  kill -0 "$daemon" 2>/dev/null || { echo "flowbridge ended:" >&2; cat "$work/daemon.err" >&2; exit 1; }
  sleep 0.1
done
sleep 1

where=${address:+"every address (credentials asked from $address)"}
echo "hostile: $rounds rounds of $seconds s quiet, then $seconds s with hostile clients; $rate readings a second," \
  "each a push; the window on ${where:-loopback}"
count=$((rate * seconds))
phase=0
for round in $(seq "$rounds"); do
  for kind in quiet hostile; do
    phase=$((phase + 1))
    clients=
    if [ "$kind" = hostile ]; then
      # The clients start 2 s before the readings (the idle connections are open) and end 2 s after.
      python3 "$here/hostile-clients.py" "$window" $((seconds + 4)) ${address:+"$address" "$work/window-token"} > "$work/clients-$round" 2>&1 &
      clients=$!
      pids+=("$clients")
      sleep 2
    fi
    before=$(cpu_seconds "$daemon")
    "$BENCH_BIN/meterpub" -r "$rate" -s "$work/stamps-$phase" "$broker_port" "$count" bench/meter > /dev/null
    # The phase ends with its sentinel's push (the exchange at 424242 W).
    waited=0
    until [ "$(grep -c '"rate":424242' "$work/pushes")" -ge "$phase" ]; do
      sleep 0.05
      waited=$((waited + 1))
      [ "$waited" -lt 2000 ] || { echo "no push of the sentinel within 100 s" >&2; tail -5 "$work/daemon.err" >&2; exit 1; }
    done
    cpu=$(awk -v a="$before" -v b="$(cpu_seconds "$daemon")" 'BEGIN { print b - a }')
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status")
    memory=$(awk '/^Pss:/ { p = $2 } /^Private_(Clean|Dirty):/ { u += $2 } END { print p, u }' "/proc/$daemon/smaps_rollup")
    cp "/proc/$daemon/smaps" "$work/smaps-$kind"
    echo "$round $kind $work/stamps-$phase $cpu $rss $memory $(cut -d' ' -f1-3 /proc/loadavg)" >> "$work/phases"
    if [ -n "$clients" ]; then
      wait "$clients"
      echo "  round $round, how the window answered the hostile clients:"
      sed 's/^/    /' "$work/clients-$round"
    fi
  done
done
kill -0 "$daemon" 2>/dev/null || { echo "flowbridge ended:" >&2; cat "$work/daemon.err" >&2; exit 1; }
echo
python3 "$here/push-lag.py" report "$work/pushes" "$work/phases"
echo
echo "what the hostile phase added to the daemon's memory (the last round's, by mapping):"
"$here/smaps.py" "$work/smaps-quiet" "$work/smaps-hostile" 8
echo
echo "the daemon's log (warnings and errors):"
sed 's/^/  /' "$work/daemon.err" | tail -20
